"""Configurations: presets are the paper's values, every problem is said in plain words."""

import pytest

from webapp.training import configs, presets
from webapp.training.models import RunKind


@pytest.mark.parametrize("key", list(presets.PRESETS))
def test_every_preset_gives_a_complete_valid_configuration(key):
    preset = presets.PRESETS[key]
    config, problems = configs.build_config(preset.kind, preset.overrides)
    assert problems == {}
    assert set(config) == set(configs.section_classes(preset.kind))


def test_dsm_full_holds_the_papers_training_settings():
    train = presets.get("dsm-full").config()["train"]
    assert (
        train["finetune"],
        train["epochs"],
        train["lr"],
        train["scheduler"],
        train["weight_decay"],
        train["warmup_ratio"],
        train["effective_batch_size"],
    ) == ("full", 1.0, 4e-5, "cosine", 0.001, 0.1, 128)


def test_sft_and_ch_presets_hold_the_papers_adaptation_settings():
    sft = presets.get("sft").config()["train"]
    assert (
        sft["finetune"],
        sft["lora_r"],
        sft["lora_alpha"],
        sft["lora_dropout"],
        sft["lr"],
        sft["effective_batch_size"],
        sft["adam_eps"],
    ) == ("lora", 32, 64, 0.05, 3e-4, 64, 1e-7)
    heads = presets.get("ch").config()["heads"]
    assert (heads["hidden"], heads["dropout"], heads["epochs"], heads["lr"]) == (256, 0.1, 20, 1e-3)
    assert presets.get("one-peak").config()["train"]["epochs"] == 5.0
    assert presets.get("2-shot").config()["prompting"]["shots"] == 2
    assert presets.get("0-shot").config()["prompting"]["variants"] == 3


def test_overrides_keep_every_other_default():
    config, problems = configs.build_config(RunKind.DSM, {"train": {"max_steps": 7, "lr": 1e-4}})
    assert problems == {}
    assert config["train"]["max_steps"] == 7 and config["train"]["lr"] == 1e-4
    assert config["train"]["warmup_ratio"] == 0.1


@pytest.mark.parametrize(
    "overrides, key, words",
    [
        ({"train": {"lr": 0}}, "train.lr", "learning rate must be greater than 0"),
        ({"train": {"lr": "fast"}}, "train.lr", "learning rate must be a number"),
        ({"train": {"epochs": -1}}, "train.epochs", "epochs must be greater than 0"),
        ({"train": {"warmup_ratio": 1.5}}, "train.warmup_ratio", "at least 0 and below 1"),
        ({"train": {"micro_batch_size": 0}}, "train.micro_batch_size", "at least 1"),
        ({"train": {"effective_batch_size": 10, "micro_batch_size": 4}}, "train.effective_batch_size", "multiple of"),
        ({"train": {"finetune": "half"}}, "train.finetune", "must be one of full, lora"),
        ({"train": {"precision": "fp8"}}, "train.precision", "must be one of auto, bf16, fp32"),
        ({"train": {"max_steps": 2.5}}, "train.max_steps", "whole number"),
        ({"train": {"max_steps": 0}}, "train.max_steps", "at least 1"),
        ({"train": {"gradient_checkpointing": "yes"}}, "train.gradient_checkpointing", "true or false"),
        ({"train": {"lr_warmup": 3}}, "train.lr_warmup", "Unknown setting 'lr_warmup'"),
        ({"heads": {"epochs": 1}}, "heads", "Unknown section 'heads'"),
    ],
)
def test_a_bad_setting_is_refused_with_a_clear_message(overrides, key, words):
    _, problems = configs.build_config(RunKind.DSM, overrides)
    assert key in problems and words in problems[key], problems


def test_prompting_shots_are_bounded():
    _, problems = configs.build_config(RunKind.PROMPTING, {"prompting": {"shots": 50}})
    assert "At most 8 shots" in problems["prompting.shots"]


def test_an_empty_optional_setting_is_accepted_and_a_whole_float_becomes_an_int():
    config, problems = configs.build_config(RunKind.DSM, {"train": {"max_steps": None, "micro_batch_size": 4.0}})
    assert problems == {} and config["train"]["max_steps"] is None and config["train"]["micro_batch_size"] == 4


def test_the_seed_of_a_run_is_its_main_sections_seed():
    assert configs.seed_of(RunKind.HEADS, {"heads": {"seed": 5}}) == 5
    assert configs.seed_of(RunKind.SFT, {"train": {"seed": 3}}) == 3


def test_flatten_names_settings_by_section():
    assert configs.flatten({"a": {"x": 1}, "b": {"y": None}}) == {"a.x": 1, "b.y": None}


def test_zero_shot_variants_are_bounded_by_the_system_prompts_of_ml():
    from ml.training import SYSTEM_PROMPTS

    assert configs.ZERO_SHOT_PROMPTS == len(SYSTEM_PROMPTS)
    _, problems = configs.build_config(RunKind.PROMPTING, {"prompting": {"shots": 0, "variants": 4}})
    assert "at most 3 variants" in problems["prompting.variants"]
    _, problems = configs.build_config(RunKind.PROMPTING, {"prompting": {"shots": 2, "variants": 5}})
    assert problems == {}


def test_a_list_setting_accepts_a_comma_separated_text():
    config, problems = configs.build_config(RunKind.SFT, {"train": {"lora_target_modules": "q_proj, v_proj"}})
    assert problems == {} and config["train"]["lora_target_modules"] == ["q_proj", "v_proj"]
    config, _ = configs.build_config(RunKind.SFT, {"train": {"lora_target_modules": ""}})
    assert config["train"]["lora_target_modules"] is None


def test_dsm_full_leaves_max_length_to_the_device_and_puts_the_instruction_in_the_system_turn():
    train = presets.get("dsm-full").config()["train"]
    assert (train["max_length"], train["adam_eps"], train["instruction_turn"]) == (None, 1e-7, "system")
    config, problems = configs.build_config(RunKind.DSM, {"train": {"max_length": 2048, "instruction_turn": "user"}})
    assert problems == {} and (config["train"]["max_length"], config["train"]["instruction_turn"]) == (2048, "user")


def test_it_refuses_an_unknown_instruction_turn_and_a_system_turn_for_sft():
    _, problems = configs.build_config(RunKind.DSM, {"train": {"instruction_turn": "assistant"}})
    assert "system, user" in problems["train.instruction_turn"]
    _, problems = configs.build_config(RunKind.SFT, {"train": {"instruction_turn": "system"}})
    assert "user turn" in problems["train"]
