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
    assert (c.finetune, c.epochs, c.lr, c.scheduler, c.weight_decay, c.warmup_ratio, c.effective_batch_size) == \
        ("full", 1.0, 4e-5, "cosine", 0.001, 0.1, 128)


def test_sft_defaults_are_the_papers_lora_values():
    c = SFTConfig()
    assert (c.finetune, c.lora_r, c.lora_alpha, c.lora_dropout, c.lr, c.effective_batch_size, c.warmup_ratio,
            c.adam_eps, c.scheduler, c.epochs) == ("lora", 32, 64, 0.05, 3e-4, 64, 0.1, 1e-7, "cosine", 1.0)
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


@pytest.mark.parametrize("bad", [
    {"effective_batch_size": 10, "micro_batch_size": 4}, {"finetune": "qlora"}, {"precision": "fp16"},
    {"epochs": 0}, {"warmup_ratio": 1.0}, {"max_steps": 0}, {"scheduler": "nope"},
])
def test_it_rejects_invalid_values(bad):
    with pytest.raises(ValueError):
        CausalLMConfig(**bad)


def test_importing_configs_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; from ml.training import CausalLMConfig, LabeledItem, split_items, sft_prompt; "
            "import ml.commands.train; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
