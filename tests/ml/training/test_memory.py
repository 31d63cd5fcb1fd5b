"""The memory planner: exact parameter and state arithmetic, the paper's setting, the docs' table."""

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaRMSNorm

from ml.__main__ import main
from ml.models.families import FAMILIES, Layout
from ml.models.families.base import LINEAR
from ml.training.finetune import make_optimizer, prepare_model
from ml.training.memory import GB, PAPER_MODELS, ModelShape, PlanError, PlanSettings, estimate, paper_table, plan
from tests.ml.conftest import build_loaded
from tests.ml.training.conftest import fast_config

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "docs" / "operations.md"  # the paper's models' memory plan is there


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
    """(parameters, gradients, optimizer states, tensors with optimizer state) in bytes after one
    real AdamW step of the trainer's own preparation and optimizer: each tensor's nbytes, summed."""
    model = prepare_model(model, config)
    optimizer = make_optimizer(model, config)
    ids = torch.randint(0, model.config.vocab_size, (2, 16))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    weights = sum(p.nbytes for p in model.parameters())  # a tied embedding is one parameter
    grads = sum(p.grad.nbytes for p in model.parameters() if p.grad is not None)
    states = sum(t.nbytes for state in optimizer.state.values() for t in state.values() if torch.is_tensor(t))
    return weights, grads, states, len(optimizer.state)


def assert_plan_matches_step(p, model, config):
    """Parameters and gradients exactly. Optimizer states within 4 B a trained tensor: AdamW's
    per-tensor `step` counter (a 4-byte float), which the planner leaves out by design (about 1 KB
    for an 8B model; under 0.1% of these tiny models' states); the moments must match exactly."""
    weights, grads, states, tensors = _one_step(model, config)
    assert (p.weights, p.gradients) == (weights, grads)
    assert p.optimizer <= states <= p.optimizer + 4 * tensors


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_the_planned_states_equal_the_tensors_after_one_training_step(tiny, finetune):
    # every family (`tiny`): qwen2's q, k, v biases; qwen3's qk-norm; gemma3's four norms a layer,
    # qk-norm and tied embeddings
    p = estimate(shape_of(tiny.model), PlanSettings(finetune=finetune, precision="fp32"))
    assert_plan_matches_step(p, tiny.model, fast_config(finetune=finetune, precision="fp32"))


class ToyConfig(LlamaConfig):
    model_type = "toy-biased"


class NormedMLP(torch.nn.Module):
    """The MLP between two extra RMSNorms of its own: four norms a layer with the decoder's two."""

    def __init__(self, mlp, hidden_size, eps):
        super().__init__()
        self.pre_feedforward_layernorm = LlamaRMSNorm(hidden_size, eps)
        self.mlp = mlp
        self.post_feedforward_layernorm = LlamaRMSNorm(hidden_size, eps)

    def forward(self, x):
        return self.post_feedforward_layernorm(self.mlp(self.pre_feedforward_layernorm(x)))


def build_toy(seed=0):
    """A tiny random model of a layout no real family has: a bias on every linear layer of a
    decoder layer, four norms a layer, untied embeddings."""
    config = ToyConfig(
        vocab_size=320,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        attention_bias=True,
        mlp_bias=True,
        tie_word_embeddings=False,
        attn_implementation="sdpa",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    for layer in model.model.layers:
        layer.mlp = NormedMLP(layer.mlp, config.hidden_size, config.rms_norm_eps)
    return model


TOY = dataclasses.replace(
    FAMILIES["llama"],
    name="toy",
    model_types=("toy-biased",),
    layout=Layout(biases=LINEAR, hidden_norms=4, tied_embeddings=False),
)


@pytest.mark.parametrize("finetune", ["full", "lora"])
def test_a_registered_toy_familys_layout_is_what_the_plan_counts(monkeypatch, finetune):
    config = build_toy().config.to_dict()
    with pytest.raises(PlanError, match="model type 'toy-biased' is not supported; supported families: llama"):
        ModelShape.from_config(config)  # no family: refused, not planned with another's layout
    monkeypatch.setitem(FAMILIES, TOY.name, TOY)  # the registry line; monkeypatch removes it after

    model = build_toy()
    shape = ModelShape.from_config(config)
    assert shape.parameters() == sum(p.numel() for p in model.parameters())
    as_llama = dataclasses.replace(shape, **FAMILIES["llama"].layout.facts({**config, "mlp_bias": False}))
    assert as_llama.parameters() < shape.parameters()  # what a llama layout would have planned
    p = estimate(shape, PlanSettings(finetune=finetune, precision="fp32"))
    assert_plan_matches_step(p, model, fast_config(finetune=finetune, precision="fp32"))


def test_a_model_folder_of_no_family_is_refused_by_the_plan_command(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({**build_toy().config.to_dict(), "model_type": "mamba"}))
    assert main(["train", "--plan", "--model", str(tmp_path)]) != 0
    assert "model type 'mamba' is not supported" in capsys.readouterr().err


def test_the_planner_and_the_families_import_no_torch():
    code = "import sys, ml.training.memory, ml.models; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


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
