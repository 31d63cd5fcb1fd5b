"""ml.models: registry, families, resolution, loading and the convert command."""

from __future__ import annotations

import json
import os

import pytest
import torch

from ml.models import (
    DEFAULT_MODEL,
    FAMILIES,
    REGISTRY,
    ModelNotFoundError,
    UnsupportedFamilyError,
    default_model_dir,
    family_for,
    load_model,
    pick_dtype,
)
from ml.models.convert import read_manifest
from tests.ml.conftest import build_loaded, build_tokenizer


@pytest.fixture
def tiny_folder(tmp_path):
    loaded = build_loaded("qwen3")
    folder = tmp_path / "tiny-qwen3"
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def test_the_default_model_is_registered_and_its_gguf_is_installed():
    entry = REGISTRY[DEFAULT_MODEL]
    assert DEFAULT_MODEL == "smollm2-135m-instruct"
    path = entry.gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()


def test_model_dir_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MODEL_DIR", str(tmp_path))
    assert default_model_dir() == tmp_path
    monkeypatch.delenv("MODEL_DIR")
    assert default_model_dir().parts[-2:] == ("var", "models")


def test_an_unconverted_default_model_says_how_to_convert_it(tmp_path):
    with pytest.raises(ModelNotFoundError, match="python -m ml convert"):
        load_model(DEFAULT_MODEL, model_dir=tmp_path)


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(ModelNotFoundError, match="smollm2-135m-instruct"):
        load_model("no-such-model")


def test_a_folder_without_a_config_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFoundError, match="config.json"):
        load_model(str(tmp_path))


def test_a_hub_id_is_never_downloaded_silently(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelNotFoundError, match="allow_download"):
        load_model("nobody-org/not-cached-model")


def test_an_unsupported_family_lists_the_supported_ones(tmp_path):
    from transformers import GPT2Config

    GPT2Config(n_layer=1, n_head=2, n_embd=8).save_pretrained(tmp_path)
    with pytest.raises(UnsupportedFamilyError, match="llama, qwen2, qwen3, gemma3"):
        load_model(str(tmp_path))


@pytest.mark.parametrize(
    "model_type,family",
    [
        ("llama", "llama"),
        ("qwen2", "qwen2"),
        ("qwen3", "qwen3"),
        ("gemma3_text", "gemma3"),
        ("gemma3", "gemma3"),
    ],
)
def test_family_is_chosen_from_the_config(model_type, family):
    class Config:
        pass

    config = Config()
    config.model_type = model_type
    assert family_for(config).name == family


def test_every_family_file_points_to_a_real_transformers_module():
    for family in FAMILIES.values():
        module = family.modeling()
        assert hasattr(module, "ALL_ATTENTION_FUNCTIONS") and hasattr(module, "eager_attention_forward")


def test_mask_token_is_the_first_candidate_in_the_vocabulary():
    chatml, gemma = build_tokenizer("chatml"), build_tokenizer("gemma")
    assert FAMILIES["qwen2"].mask_token(chatml) == "<|fim_pad|>"
    assert FAMILIES["gemma3"].mask_token(gemma) == "<mask>"
    assert FAMILIES["llama"].mask_token(chatml) == "<mask>"


def test_a_local_folder_loads_with_its_family(tiny_folder):
    loaded = load_model(str(tiny_folder))
    assert loaded.family.name == "qwen3"
    assert loaded.device == torch.device("cpu") and loaded.dtype == torch.float32
    assert not loaded.model.training
    assert loaded.tokenizer.chat_template
    assert loaded.label == "tiny-qwen3"


def test_a_dtype_can_be_asked_for(tiny_folder):
    loaded = load_model(str(tiny_folder), dtype="bfloat16")
    assert loaded.dtype == torch.bfloat16
    assert next(loaded.model.parameters()).dtype == torch.bfloat16


def test_default_dtype_is_fp32_on_cpu_and_explicit_dtype_wins():
    assert pick_dtype(torch.device("cpu")) == torch.float32
    assert pick_dtype(torch.device("cpu"), "bfloat16") == torch.bfloat16
    assert pick_dtype(torch.device("cpu"), torch.float16) == torch.float16


def test_preferred_relevance_dtype_is_bf16_or_fp32():
    from ml.models import preferred_dtype

    assert preferred_dtype("cpu") in (torch.bfloat16, torch.float32)


def test_convert_command_is_registered():
    from ml.__main__ import build_parser

    args = build_parser("convert").parse_args(["convert", "--model-dir", "/tmp/x"])
    assert args.model_dir == "/tmp/x" and callable(args.func)


@pytest.mark.slow
def test_conversion_is_complete_and_idempotent(smollm2_dir):
    from ml.models import convert_default_model

    folder = os.path.join(smollm2_dir, DEFAULT_MODEL)
    manifest = read_manifest(folder)
    assert manifest["model_type"] == "llama" and manifest["dtype"] == "float32"
    weights = os.path.join(folder, "model.safetensors")
    before = os.stat(weights).st_mtime_ns
    assert str(convert_default_model(smollm2_dir)) == folder
    assert os.stat(weights).st_mtime_ns == before
    assert not os.path.exists(os.path.join(folder, "tokenizer.model"))  # the 100 MB GGUF copy is dropped
    with open(os.path.join(folder, "config.json")) as f:
        assert json.load(f)["rope_theta"] == 100000.0


@pytest.mark.slow
def test_the_default_model_loads_with_a_working_chat_tokenizer(smollm2):
    assert smollm2.family.name == "llama"
    assert smollm2.tokenizer.eos_token == "<|im_end|>"
    assert smollm2.tokenizer.chat_template
    assert smollm2.family.mask_token(smollm2.tokenizer) == "<empty_output>"
    ids = smollm2.tokenizer("<|im_start|>user\nhi<|im_end|>", add_special_tokens=False).input_ids
    assert ids[0] == 1 and ids[-1] == 2
