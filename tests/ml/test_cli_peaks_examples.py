"""`python -m ml peaks | examples | localisation` on small JSONL files."""

import json
import re

import pytest

from ml.__main__ import main

# note 1, tokenised as a BPE tokenizer would: Pt | ' has' | ' tachy' | 'card' | 'ia' | ',' | ' HR' | ' 120' | '.'
TEXT1 = "Pt has tachycardia, HR 120."
OFFSETS1 = [[0, 2], [2, 6], [6, 12], [12, 16], [16, 18], [18, 19], [19, 22], [22, 26], [26, 27]]
SCORES1 = [0, 0, 0, 0.9, 0, 0, 0.5, 0.6, 0]  # kernel 1: peaks at tokens 3 and 6..7
TEXT2 = "No fever."
OFFSETS2 = [[0, 2], [2, 8], [8, 9]]
SCORES2 = [0, 1, 0]

NOTES = [
    {"id": "n1", "text": TEXT1, "evidence": {"heart rate": [[20, 26]]}},
    {"id": 2, "text": TEXT2, "metadata": {"ward": "A"}},
]


def relevance(note_id, task, offsets, scores, **extra):
    return {
        "note_id": note_id,
        "task": task,
        "model": "smollm2",
        "method": "attnlrp",
        "template": "en",
        "target_token": "x",
        "offsets": offsets,
        "scores": scores,
        "raw_scores": scores,
        **extra,
    }


RELEVANCE = [
    relevance("n1", "heart rate", OFFSETS1, SCORES1),
    relevance("n1", "tachycardia", OFFSETS1, SCORES1),
    relevance(2, "fever", OFFSETS2, SCORES2),
]


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def read(path):
    return [json.loads(line) for line in open(path)]


@pytest.fixture
def files(tmp_path):
    return {
        "notes": write(tmp_path / "notes.jsonl", NOTES),
        "rel": write(tmp_path / "rel.jsonl", RELEVANCE),
        "dir": tmp_path,
    }


def run_peaks(files, *extra):
    out = str(files["dir"] / "peaks.jsonl")
    code = main(
        ["peaks", "--relevance", files["rel"], "--notes", files["notes"], "--kernel-size", "1", "--out", out, *extra]
    )
    return code, out


def test_peaks_adds_word_extended_token_and_character_spans(files):
    code, out = run_peaks(files)
    assert code == 0
    first, second, third = read(out)
    assert first["peaks"] == [[2, 5], [6, 8]]
    assert [TEXT1[a:b] for a, b in first["peak_chars"]] == ["tachycardia", "HR 120"]
    assert first["peak_params"] == {
        "kernel_size": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "strict": False,
        "trim": True,
    }
    assert first["scores"] == SCORES1 and first["model"] == "smollm2"  # the record is kept
    assert second["peaks"] == first["peaks"]
    assert third["peaks"] == [[1, 2]] and third["peak_chars"] == [[3, 8]]


def test_peaks_and_localisation_read_every_batch(files, monkeypatch, capsys):
    import ml.commands.localisation
    import ml.commands.peaks

    monkeypatch.setattr(ml.commands.peaks, "BATCH", 2)
    monkeypatch.setattr(ml.commands.localisation, "BATCH", 1)
    code, out = run_peaks(files)
    assert code == 0 and [r["task"] for r in read(out)] == ["heart rate", "tachycardia", "fever"]
    assert main(["localisation", "--relevance", files["rel"], "--gold", files["notes"]]) == 0
    summary, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    assert summary["groups"][0]["n_pairs"] == 1 and summary["records_without_gold"] == 2


def test_peaks_default_smoothing_and_drop_scores(files):
    out = str(files["dir"] / "p.jsonl")
    assert main(["peaks", "--relevance", files["rel"], "--notes", files["notes"], "--drop-scores", "--out", out]) == 0
    record = read(out)[0]
    assert "scores" not in record and "raw_scores" not in record and record["peak_params"]["kernel_size"] == 3


def test_examples_from_peaks_merge_tasks_and_report(files, capsys):
    _, peaks = run_peaks(files)
    out = str(files["dir"] / "examples.jsonl")
    assert main(["examples", "--peaks", peaks, "--notes", files["notes"], "--out", out]) == 0
    assert read(out) == [
        {
            "note_id": "n1",
            "tasks": ["heart rate", "tachycardia"],
            "input": "Pt has tachycardia, <mask>.",
            "label": "HR 120",
            "char_span": [20, 26],
            "mode": "dsm",
        }
    ]
    err = capsys.readouterr().err
    assert "examples: 1 written" in err and "notes kept: 1 of 2" in err and "duplicates removed: 1" in err


def test_examples_ablation_and_mask_token(files):
    _, peaks = run_peaks(files)
    out = str(files["dir"] / "examples.jsonl")
    assert (
        main(
            [
                "examples",
                "--peaks",
                peaks,
                "--notes",
                files["notes"],
                "--mode",
                "one_peak",
                "--mask-token",
                "[MASK]",
                "--out",
                out,
            ]
        )
        == 0
    )
    assert [(e["note_id"], e["input"], e["label"], e["mode"]) for e in read(out)] == [
        ("2", "No [MASK].", "fever", "one_peak")
    ]


def test_localisation_prints_json_and_a_markdown_table(files, capsys):
    assert main(["localisation", "--relevance", files["rel"], "--gold", files["notes"], "--kernel-size", "1"]) == 0
    out = capsys.readouterr().out
    summary, end = json.JSONDecoder().raw_decode(out)
    (group,) = summary["groups"]
    assert summary["group_by"] == ["model", "method", "explain", "config_key"]
    assert (group["model"], group["method"], group["explain"]) == ("smollm2", "attnlrp", None)  # no explain field
    for key in (
        "auc",
        "auc_ci",
        "mass_ratio",
        "mass_ratio_ci",
        "peak_f1",
        "peak_f1_ci",
        "peak_precision",
        "peak_recall",
        "n_pairs",
        "n_undefined",
    ):
        assert key in group, key
    # each gold token (0.5, 0.6) ranks above the six zeros and below the 0.9: 12 of 14 pairs
    assert group["auc"] == pytest.approx(12 / 14) and group["auc_ci"] == pytest.approx([12 / 14, 12 / 14])
    # gold tokens 6, 7 hold 1.1 of 2.0 relevance: (1.1 / 2.0) / (2 / 9)
    assert group["mass_ratio"] == pytest.approx(0.55 / (2 / 9))
    assert group["n_pairs"] == 1 and summary["records_without_gold"] == 2
    # peak tokens 2, 3, 4, 6, 7 against gold 6, 7
    assert (group["peaks"]["tp"], group["peaks"]["fp"], group["peaks"]["fn"]) == (2, 3, 0)
    assert group["peak_precision"] == pytest.approx(0.4) and group["peak_f1"] == pytest.approx(2 * 0.4 / 1.4)
    assert summary["baselines"]["uniform"]["auc"] == 0.5 and summary["baselines"]["uniform"]["mass_ratio"] == 1.0
    assert summary["baselines"]["random"]["n_pairs"] == 1
    assert summary["recommended"]["choice"] is None and "Too few pairs" in summary["recommended"]["reason"]
    table = out[end:].strip().splitlines()
    assert table[0].startswith("| model | method | explain | config_key | pairs | undefined | AUC (95% CI)")
    assert table[2].startswith("| smollm2 | attnlrp | – | – | 1 | 0 | 0.857 (0.857-0.857) |  | 2.475")
    assert table[3].startswith("| uniform (baseline) |  |  |  | 1 | 0 | 0.500") and table[4].startswith(
        "| random (baseline)"
    )
    assert table[-1].startswith("Recommended: none.")


def test_localisation_compares_explain_variants_and_recommends_the_one_that_beats_chance(tmp_path, capsys):
    """12 notes; "span" maps put the relevance on the evidence, "next" maps on the first word."""
    notes, records = [], []
    for i in range(12):
        text = f"Pt {i} has tachycardia, HR 120."
        notes.append({"id": f"n{i}", "text": text, "evidence": {"heart rate": [[text.index("HR"), len(text) - 1]]}})
        offsets = [[m.start(), m.end()] for m in re.finditer(r"\S+", text)]
        good = [1.0 if a >= text.index("HR") else 0.0 for a, _ in offsets]
        first = [1.0] + [0.0] * (len(offsets) - 1)
        records += [
            relevance(f"n{i}", "heart rate", offsets, good, explain="span"),
            relevance(f"n{i}", "heart rate", offsets, first, explain="next"),
        ]
    gold, rel = write(tmp_path / "notes.jsonl", notes), write(tmp_path / "rel.jsonl", records)
    assert main(["localisation", "--relevance", rel, "--gold", gold, "--n-resamples", "200"]) == 0
    summary, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    by_explain = {g["explain"]: g for g in summary["groups"]}
    # "next": each gold token ties with three of the four others and loses to the first word: 1.5 / 4
    assert by_explain["span"]["auc"] == 1.0 and by_explain["next"]["auc"] == pytest.approx(0.375)
    assert summary["recommended"]["choice"] == {
        "model": "smollm2",
        "method": "attnlrp",
        "explain": "span",
        "config_key": None,
    }
    assert summary["bootstrap"] == {"n_resamples": 200, "confidence": 0.95, "seed": 0}


def test_localisation_takes_evidence_from_an_annotations_file(files, capsys):
    notes = write(files["dir"] / "plain.jsonl", [{k: v for k, v in n.items() if k != "evidence"} for n in NOTES])
    annotations = write(
        files["dir"] / "ann.jsonl",
        [
            {"note_id": "n1", "task": "heart rate", "label": "high", "evidence": [[20, 26]]},
            {"note_id": "2", "task": "fever", "label": "unknown", "evidence": []},
        ],
    )
    assert (
        main(
            [
                "localisation",
                "--relevance",
                files["rel"],
                "--gold",
                notes,
                "--annotations",
                annotations,
                "--kernel-size",
                "1",
            ]
        )
        == 0
    )
    summary, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    assert summary["groups"][0]["n_pairs"] == 1
    assert summary["groups"][0]["mass_ratio"] == pytest.approx(0.55 / (2 / 9))


@pytest.mark.parametrize(
    "line2,message",
    [
        ("{not json", "rel.jsonl:2: invalid JSON"),
        ("[1, 2]", "rel.jsonl:2: expected a JSON object"),
        (json.dumps(relevance("n9", "t", OFFSETS2, SCORES2)), "rel.jsonl:2: note 'n9' is not in the notes file"),
        (json.dumps(relevance("n1", "t", OFFSETS1, SCORES2)), "rel.jsonl:2: 3 scores for 9 offsets"),
        (json.dumps(relevance(2, "t", [[0, 2], [2, 99], [8, 9]], SCORES2)), "rel.jsonl:2: 'offsets'[1]"),
        (json.dumps(relevance(2, "t", OFFSETS2, [0, float("nan"), 0])), "rel.jsonl:2: scores[1] is nan"),
        (json.dumps(relevance(2, 5, OFFSETS2, SCORES2)), "rel.jsonl:2: 'task' must be a string"),
    ],
)
def test_bad_relevance_input_names_file_and_line(files, capsys, line2, message):
    path = files["dir"] / "rel.jsonl"
    path.write_text(json.dumps(RELEVANCE[0]) + "\n" + line2 + "\n")
    code, out = run_peaks(files)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (files["dir"] / "peaks.jsonl").exists()  # no half-written output


def test_examples_without_peak_chars_is_an_error(files, capsys):
    out = str(files["dir"] / "examples.jsonl")
    assert main(["examples", "--peaks", files["rel"], "--notes", files["notes"], "--out", out]) == 2
    assert "rel.jsonl:1: no 'peak_chars'" in capsys.readouterr().err


def test_missing_file_and_bad_parameters_are_errors(files, capsys):
    assert (
        main(
            [
                "peaks",
                "--relevance",
                str(files["dir"] / "nope.jsonl"),
                "--notes",
                files["notes"],
                "--out",
                str(files["dir"] / "o.jsonl"),
            ]
        )
        == 2
    )
    assert "nope.jsonl: cannot open" in capsys.readouterr().err
    assert main(["localisation", "--relevance", files["rel"], "--gold", files["notes"], "--lower", "0.5"]) == 2
    assert "0 <= lower <= upper" in capsys.readouterr().err


def test_duplicate_note_ids_are_an_error(files, capsys):
    write(files["dir"] / "notes.jsonl", [NOTES[0], NOTES[0]])
    assert run_peaks(files)[0] == 2
    assert "notes.jsonl:2: note id 'n1' appears twice" in capsys.readouterr().err
