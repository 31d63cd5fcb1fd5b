import json

from ml.__main__ import main
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import dsm_pairs


def tiny_model_folder(path):
    loaded = build_loaded("llama")
    loaded.model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return str(path)


def test_train_command_trains_and_saves_the_final_model(tmp_path, capsys):
    model = tiny_model_folder(tmp_path / "tiny")
    pairs = tmp_path / "pairs.jsonl"
    lines = [{"prompt": p.prompt, "answer": p.answer} for p in dsm_pairs(4)]
    lines.append({"input": "heart rate <mask> bpm", "label": "130", "mode": "dsm"})  # `ml examples` line
    lines.append({"input": "He has a pacemaker since 2019.", "label": "", "mode": "unmasked"})  # CPT line
    pairs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {"effective_batch_size": 2, "micro_batch_size": 2, "lr": 1e-3, "max_length": 96, "precision": "fp32"}
        )
    )
    code = main(
        ["train", "--model", model, "--pairs", str(pairs), "--out", str(tmp_path / "out"), "--config", str(config)]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.strip() == str(tmp_path / "out" / "final")
    assert (tmp_path / "out" / "final" / "model.safetensors").is_file()
    assert "step 3/3" in err and "finished" in err


def test_train_command_reports_unknown_config_keys(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "p", "answer": "a"}) + "\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"learning_rate": 1e-3}))
    code = main(
        ["train", "--model", "x", "--pairs", str(pairs), "--out", str(tmp_path / "out"), "--config", str(config)]
    )
    assert code == 2 and "unknown CausalLMConfig key(s): learning_rate" in capsys.readouterr().err


def test_train_command_reports_a_bad_pairs_line(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"prompt": "p"}) + "\n")
    code = main(["train", "--model", "x", "--pairs", str(pairs), "--out", str(tmp_path / "out")])
    assert code == 2 and "pairs.jsonl:1" in capsys.readouterr().err
