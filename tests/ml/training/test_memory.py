"""The memory planner: exact parameter and state arithmetic, the paper's setting, the README table."""

import json
import re
from pathlib import Path

import pytest
import torch

from ml.__main__ import main
from ml.training.finetune import make_optimizer, prepare_model
from ml.training.memory import GB, PAPER_MODELS, ModelShape, PlanSettings, estimate, paper_table, plan
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import fast_config

README = Path(__file__).resolve().parents[3] / "README.md"


def shape_of(model) -> ModelShape:
    return ModelShape.from_config(model.config.to_dict())


def test_the_count_from_a_tiny_models_config_equals_its_parameters(tiny):
    assert shape_of(tiny.model).parameters() == sum(p.numel() for p in tiny.model.parameters())


def test_the_count_of_a_named_config_matches_a_hand_calculation():
    h, layers, inter, vocab, kv = 4096, 36, 12288, 151936, 8 * 128  # Qwen3-8B's config.json
    attention = h * h + 2 * h * kv + h * h  # q (32 heads x 128), k, v (8 x 128), o
    mlp = 3 * h * inter
    norms = 2 * h + 2 * 128  # input / post-attention RMSNorm, q_norm and k_norm over a head
    expected = layers * (attention + mlp + norms) + 2 * vocab * h + h  # untied embeddings, final norm
    assert PAPER_MODELS["qwen3-8b"].parameters() == expected == 8_190_735_360


def test_the_papers_8b_full_dsm_on_two_h200s_fits_only_sharded():
    shape, two = PAPER_MODELS["qwen3-8b"], PlanSettings(gpus=2, gpu_memory_gb=141)
    ddp = plan(shape, two)
    assert ddp.states / GB == pytest.approx(16 * 8.19, rel=0.01)  # 4 weights + 4 grads + 8 AdamW
    assert not ddp.fits
    assert "ZeRO-2" in ddp.suggestion and ddp.suggested.sharding == "zero2"
    for sharding in ("zero2", "fsdp"):
        assert plan(shape, PlanSettings(gpus=2, sharding=sharding)).fits
    assert (
        estimate(shape, PlanSettings(gpus=2, sharding="fsdp")).total
        < estimate(shape, PlanSettings(gpus=2, sharding="zero2")).total
    )


def test_suggestions_follow_the_documented_order():
    small = PAPER_MODELS["llama3-1b"]
    no_ckpt = PlanSettings(checkpointing=False, micro_batch=8, seq_len=8192, gpu_memory_gb=80)
    assert not estimate(small, no_ckpt).fits
    assert plan(small, no_ckpt).suggestion.startswith("enable gradient checkpointing")
    one_gpu = plan(PAPER_MODELS["qwen3-8b"], PlanSettings(gpus=1))
    assert one_gpu.suggestion.startswith("2 GPUs with ZeRO-2")  # before LoRA, which changes the method


def test_lora_keeps_a_frozen_bf16_base_and_fits_an_8b_model_on_one_gpu():
    p = plan(PAPER_MODELS["qwen3-8b"], PlanSettings(finetune="lora"))
    assert p.fits and p.weights == 2 * p.parameters + 4 * p.trainable
    assert p.trainable == PAPER_MODELS["qwen3-8b"].lora_parameters(32)


def _one_step(model, config):
    model = prepare_model(model, config)
    optimizer = make_optimizer(model, config)
    ids = torch.randint(0, model.config.vocab_size, (2, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    moments = sum(
        t.numel() * t.element_size()
        for state in optimizer.state.values()
        for key, t in state.items()
        if key in ("exp_avg", "exp_avg_sq")  # AdamW's per-tensor `step` scalars are left out
    )
    return weights, grads, moments


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_the_planned_states_equal_the_tensors_after_one_training_step(finetune):
    loaded = build_loaded("qwen2")  # qkv biases
    shape = shape_of(loaded.model)
    p = estimate(shape, PlanSettings(finetune=finetune, precision="fp32"))
    weights, grads, moments = _one_step(loaded.model, fast_config(finetune=finetune, precision="fp32"))
    assert (p.weights, p.gradients, p.optimizer) == (weights, grads, moments)


def test_plan_command_prints_json(capsys):
    code = main(["train", "--plan", "--model", "qwen3-8b", "--gpus", "2", "--gpu-memory", "141"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["fits"] is False and "ZeRO-2" in out["suggestion"]
    assert out["per_gpu_gb"]["total"] > 141


def test_plan_command_reads_a_model_folder(tmp_path, capsys):
    loaded = build_loaded("llama")
    loaded.model.config.save_pretrained(tmp_path)
    code = main(["train", "--plan", "--model", str(tmp_path), "--sharding", "fsdp", "--gpus", "2"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["fits"] and out["parameters"] == sum(p.numel() for p in loaded.model.parameters())


def test_the_readme_table_is_the_planners():
    text = README.read_text(encoding="utf-8")
    table = paper_table()
    assert table in text
    assert re.search(r"\| qwen3-8b \| 8\.19B \| 2 \| [\d.]+ \*\*no\*\* \| [\d.]+ fits \| [\d.]+ fits \|", table)


def test_fsdp_with_cpu_offload_keeps_only_two_running_units_on_the_gpu():
    shape = PAPER_MODELS["qwen3-8b"]
    sharded = estimate(shape, PlanSettings(gpus=2, sharding="fsdp"))
    offloaded = estimate(shape, PlanSettings(gpus=2, sharding="fsdp", cpu_offload=True))
    # The largest unit is the root: untied embeddings and output head (2 x 151936 x 4096) and the
    # final norm, gathered whole in bf16, twice (the one running and the one prefetched).
    gathered = 2 * (2 * 151936 * 4096 + 4096) * 2
    assert offloaded.weights == gathered and offloaded.gradients == offloaded.optimizer == 0
    assert sharded.weights == 4 * shape.parameters() // 2 + gathered
    assert sharded.gradients == 4 * shape.parameters() // 2 and sharded.optimizer == 8 * shape.parameters() // 2
    assert plan(shape, PlanSettings(gpus=1, sharding="fsdp", cpu_offload=True)).fits  # 8B full DSM on one H200
    with pytest.raises(ValueError, match="cpu_offload needs sharding 'fsdp'"):
        PlanSettings(cpu_offload=True)


def test_plan_command_takes_sharding_and_offload_from_the_config(tmp_path, capsys):
    config = tmp_path / "run.json"
    config.write_text(json.dumps({"sharding": "fsdp", "cpu_offload": True, "gradient_checkpointing": True}))
    code = main(["train", "--plan", "--model", "qwen3-8b", "--gpus", "2", "--config", str(config)])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["fits"]
    assert (out["settings"]["sharding"], out["settings"]["cpu_offload"]) == ("fsdp", True)
    code = main(["train", "--plan", "--model", "qwen3-8b", "--gpus", "2"])  # the default config: none = DDP
    assert json.loads(capsys.readouterr().out)["settings"]["sharding"] == "ddp"
