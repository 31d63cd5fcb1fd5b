"""Tiny random models and tokenizers for ml/ tests, built in code in milliseconds.

Tokenizers are trained here with the `tokenizers` library on a small corpus, so the suite
needs no download and no converted model:
  * "chatml": byte-level BPE (GPT-2 / SmolLM2 / Qwen style) with a SmolLM2-like chat
    template that adds a default system prompt;
  * "gemma": Metaspace BPE (sentencepiece style, "▁word" tokens) with a Gemma-like chat
    template that writes <bos> itself and trims message contents;
  * "plain": the byte-level tokenizer without a chat template (bos + template).

Plain functions (not only fixtures), so spawned child processes can build the very same
models: `build_loaded("llama")` is deterministic (fixed seed).

The real SmolLM2 model (tests marked slow) comes from $MODEL_DIR or <repo>/var/models when
converted there, otherwise it is converted once per session into a temporary folder.
"""

from __future__ import annotations

import functools
import multiprocessing
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

CORPUS = [
    "Patient is a 67-year-old man admitted for community acquired pneumonia.",
    "Vital signs: heart rate 130 bpm, tachycardic, blood pressure 110/70 mmHg.",
    "He has a pacemaker since 2019 and takes amlodipine for hypertension.",
    "Chest X-ray shows right lower lobe consolidation; started on ceftriaxone.",
    "The patient denies chest pain. Temperature 38.5 C, oxygen saturation 91%.",
    "Given the patient's medical history, the following is observed",
    "Data la storia del paziente, nel paziente si riscontra",
    "heart rate presence of pacemaker body temperature clinical finding",
    "You are a helpful assistant. user assistant model system",
]
SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<bos>",
    "<eos>",
    "<unk>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<mask>",
    "<|fim_pad|>",
]
CHATML = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
GEMMA = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' + (message['content'] | trim) + '<end_of_turn>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)
FAMILY_TOKENIZER = {"llama": "chatml", "qwen2": "chatml", "qwen3": "chatml", "gemma3": "gemma"}


@functools.cache
def build_tokenizer(kind: str = "chatml"):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if kind == "gemma":
        tok = Tokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first")
        tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first")
        alphabet = sorted(set("".join(CORPUS)) | set("\n\t"))
        trainer = trainers.BpeTrainer(
            vocab_size=400, special_tokens=SPECIALS, initial_alphabet=alphabet, show_progress=False
        )
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=500,
            special_tokens=SPECIALS,
            show_progress=False,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    tok.train_from_iterator(CORPUS * 3, trainer)
    if kind == "gemma":
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            bos_token="<bos>",
            eos_token="<eos>",
            pad_token="<eos>",
            unk_token="<unk>",
            chat_template=GEMMA,
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        chat_template=CHATML if kind == "chatml" else None,
    )


def build_model(family: str, vocab_size: int, *, seed: int = 0, attn: str = "sdpa"):
    import torch
    from transformers import (
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        LlamaConfig,
        LlamaForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
        Qwen3Config,
        Qwen3ForCausalLM,
    )

    common = dict(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        initializer_range=0.2,
        attn_implementation=attn,
    )
    builders = {
        "llama": lambda: LlamaForCausalLM(LlamaConfig(**common)),
        "qwen2": lambda: Qwen2ForCausalLM(Qwen2Config(**common)),
        "qwen3": lambda: Qwen3ForCausalLM(Qwen3Config(head_dim=8, **common)),
        "gemma3": lambda: Gemma3ForCausalLM(
            Gemma3TextConfig(
                head_dim=8,
                sliding_window=8,
                query_pre_attn_scalar=8,
                layer_types=["sliding_attention", "full_attention"],
                **common,
            )
        ),
    }
    torch.manual_seed(seed)
    return builders[family]().eval()


def build_loaded(family: str = "llama", tokenizer_kind: str | None = None, *, seed: int = 0, attn: str = "sdpa"):
    import torch

    from ml.models import FAMILIES, LoadedModel

    tokenizer = build_tokenizer(tokenizer_kind or FAMILY_TOKENIZER[family])
    model = build_model(family, len(tokenizer), seed=seed, attn=attn)
    return LoadedModel(
        model=model,
        tokenizer=tokenizer,
        family=FAMILIES[family],
        name=f"tiny-{family}",
        device=torch.device("cpu"),
        dtype=torch.float32,
        path="",
    )


@pytest.fixture(params=["llama", "qwen2", "qwen3", "gemma3"])
def tiny(request):
    """A tiny random model of each supported family with a matching tokenizer."""
    return build_loaded(request.param)


@pytest.fixture
def tiny_llama():
    return build_loaded("llama")


@pytest.fixture(autouse=True)
def _this_process_stays_unpatched():
    """lxt patches are process-global: any AttnLRP computation in a test must run in a
    spawned child (see `patched_child`), so test order can never matter."""
    yield
    import ml.lrp

    assert not ml.lrp.is_patched(), "a test patched the pytest process with lxt"


@pytest.fixture(scope="session")
def patched_child():
    """A spawned worker process, kept for the session, where AttnLRP may patch freely.
    Use `patched_child.apply(module_level_function, args)`."""
    pool = multiprocessing.get_context("spawn").Pool(1)
    yield pool
    pool.terminate()
    pool.join()


@pytest.fixture(scope="session")
def lxt_reference_child():
    """A second spawned worker, patched only by lxt's own `monkey_patch` recipe."""
    pool = multiprocessing.get_context("spawn").Pool(1)
    yield pool
    pool.terminate()
    pool.join()


def real_model_dir(tmp_root=None):
    """Folder holding a converted smollm2-135m-instruct (converting into tmp_root if needed)."""
    from ml.models import DEFAULT_MODEL, convert_default_model, default_model_dir
    from ml.models.convert import read_manifest

    for folder in (os.environ.get("MODEL_DIR"), default_model_dir()):
        if folder and read_manifest(os.path.join(folder, DEFAULT_MODEL)):
            return str(folder)
    convert_default_model(tmp_root)
    return str(tmp_root)


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    return real_model_dir(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def smollm2(smollm2_dir):
    from ml.models import DEFAULT_MODEL, load_model

    return load_model(DEFAULT_MODEL, model_dir=smollm2_dir, dtype="float32")
