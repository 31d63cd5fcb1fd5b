import json

import pytest

from ml.training import CausalLMConfig, HeadConfig, PromptingConfig, SFTConfig


@pytest.mark.parametrize("cls", [CausalLMConfig, SFTConfig, HeadConfig, PromptingConfig])
def test_from_dict_rejects_unknown_keys(cls):
    with pytest.raises(ValueError, match="unknown .* key.*learning_rate"):
        cls.from_dict({"learning_rate": 1e-3})


@pytest.mark.parametrize("cls", [CausalLMConfig, SFTConfig, HeadConfig, PromptingConfig])
def test_a_config_round_trips_through_json(cls):
    config = cls()
    assert cls.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_causal_lm_defaults_are_the_papers_dsm_values():
    c = CausalLMConfig()
    assert (c.finetune, c.epochs, c.lr, c.scheduler, c.weight_decay, c.warmup_ratio, c.effective_batch_size) == (
        "full",
        1.0,
        4e-5,
        "cosine",
        0.001,
        0.1,
        128,
    )


def test_sft_defaults_are_the_papers_lora_values():
    c = SFTConfig()
    assert (
        c.finetune,
        c.lora_r,
        c.lora_alpha,
        c.lora_dropout,
        c.lr,
        c.effective_batch_size,
        c.warmup_ratio,
        c.adam_eps,
        c.scheduler,
        c.epochs,
    ) == ("lora", 32, 64, 0.05, 3e-4, 64, 0.1, 1e-7, "cosine", 1.0)
    assert SFTConfig.from_dict({"lr": 1e-4}).finetune == "lora"


def test_head_defaults_are_the_papers_values():
    c = HeadConfig()
    assert (c.hidden, c.dropout, c.epochs, c.lr) == (256, 0.1, 20, 1e-3)


def test_accumulation_times_micro_batch_times_processes_is_the_effective_batch():
    c = CausalLMConfig(effective_batch_size=128, micro_batch_size=4)
    assert c.accumulation_steps(1) == 32
    assert c.accumulation_steps(2) == 16
    assert c.accumulation_steps(8) * 4 * 8 == 128
    with pytest.raises(ValueError, match="multiple"):
        c.accumulation_steps(3)


@pytest.mark.parametrize(
    "bad",
    [
        {"effective_batch_size": 10, "micro_batch_size": 4},
        {"finetune": "qlora"},
        {"precision": "fp16"},
        {"epochs": 0},
        {"warmup_ratio": 1.0},
        {"max_steps": 0},
        {"scheduler": "nope"},
        {"sharding": "zero3"},
        {"cpu_offload": True},  # offload is FSDP's: sharding "none" has no shards to offload
    ],
)
def test_it_rejects_invalid_values(bad):
    with pytest.raises(ValueError):
        CausalLMConfig(**bad)


def test_importing_configs_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys; from ml.training import CausalLMConfig, LabeledItem, split_items, sft_prompt; "
        "import ml.commands.train; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_dsm_and_sft_use_the_reference_codes_adamw_epsilon():
    assert CausalLMConfig().adam_eps == 1e-7
    assert SFTConfig().adam_eps == 1e-7


class _ModelConfig:
    def __init__(self, context):
        self.max_position_embeddings = context


class _MultimodalConfig:
    def __init__(self, context):
        self.text_config = _ModelConfig(context)


@pytest.mark.parametrize(
    "device, context, expected",
    [
        ("cpu", 131_072, 512),  # the CPU default whatever the model's context
        ("cuda", 131_072, 8192),  # the model's context, capped
        ("cuda", 2048, 2048),  # a model with a shorter context keeps its own
        ("mps", 131_072, 512),  # any device but CUDA is CPU-scale
    ],
)
def test_auto_max_length_follows_the_device_and_the_models_context(device, context, expected):
    from ml.training.config import resolve_max_length

    assert CausalLMConfig().max_length is None and SFTConfig().max_length is None
    assert resolve_max_length(None, _ModelConfig(context), device) == expected


def test_auto_max_length_reads_a_multimodal_configs_text_context_and_takes_a_torch_device():
    import torch

    from ml.training.config import resolve_max_length

    assert resolve_max_length(None, _MultimodalConfig(4096), torch.device("cuda", 1)) == 4096
    assert resolve_max_length(None, _MultimodalConfig(4096), torch.device("cpu")) == 512


def test_an_explicit_max_length_is_kept_on_every_device():
    from ml.training.config import resolve_max_length

    for device in ("cpu", "cuda"):
        assert resolve_max_length(300, _ModelConfig(131_072), device) == 300
    with pytest.raises(ValueError, match="max_length"):
        CausalLMConfig(max_length=4)


def test_the_dsm_instruction_goes_to_the_system_turn_by_default_and_sft_refuses_it():
    assert CausalLMConfig().instruction_turn == "system"
    assert CausalLMConfig(instruction_turn="user").instruction_turn == "user"
    with pytest.raises(ValueError, match="instruction_turn"):
        CausalLMConfig(instruction_turn="assistant")
    assert SFTConfig().instruction_turn == "user"
    with pytest.raises(ValueError, match="user turn"):
        SFTConfig(instruction_turn="system")
