"""What the rest of ml/ needs to know about one model family.

A family is one small file (families/<name>.py) holding one `Family` instance: which
`config.model_type` values it covers, which transformers module lxt must patch, which lxt
patch map to use, which special token serves as the DSM mask, chat-template quirks, and its
`Layout` (the parameters a decoder layer holds besides its linear weights, for the memory
planner). Code elsewhere asks the family instead of testing model names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
ATTENTION = LINEAR[:4]
MLP = LINEAR[4:]


@dataclass(frozen=True)
class Layout:
    """What the memory planner (ml/training/memory.py) needs beyond the sizes every config.json
    gives: a decoder layer's biases and norms, and whether the output head shares the input
    embeddings when config.json does not say. Pure data, read from a config dict by `facts`."""

    # Linear layers (of LINEAR) that carry a bias whatever the config says (Qwen2: q, k, v).
    biases: tuple[str, ...] = ()
    # config key -> the linear layers a true value gives a bias (Llama: "attention_bias" -> q, k,
    # v, o; "mlp_bias" -> gate, up, down); the key absent counts as false.
    bias_switches: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # RMSNorms over the hidden size in each layer: 2 (before attention and before the MLP), 4 in
    # Gemma 3 (before and after each).
    hidden_norms: int = 2
    # RMSNorms over one head (head_dim) in each layer: 2 with qk-norm (Qwen3, Gemma 3), else 0.
    head_norms: int = 0
    # tie_word_embeddings when config.json lacks it: the default of the family's config class.
    tied_embeddings: bool = False

    def __post_init__(self):
        named = set(self.biases).union(*(layers for _, layers in self.bias_switches))
        if named - set(LINEAR):
            raise ValueError(f"unknown linear layer(s) {sorted(named - set(LINEAR))}; known: {', '.join(LINEAR)}")

    def facts(self, config: dict) -> dict:
        """{"biased": linear layers with a bias, "hidden_norms", "head_norms",
        "tie_word_embeddings"} for a config.json dict of this family (a multimodal one's
        text_config already picked): ml.training.memory.ModelShape's layout fields."""
        biased = set(self.biases)
        for key, layers in self.bias_switches:
            if config.get(key):
                biased.update(layers)
        return {
            "biased": tuple(name for name in LINEAR if name in biased),
            "hidden_norms": self.hidden_norms,
            "head_norms": self.head_norms,
            "tie_word_embeddings": bool(config.get("tie_word_embeddings", self.tied_embeddings)),
        }


@dataclass(frozen=True)
class Family:
    name: str
    # config.model_type values this family covers (e.g. "gemma3" and "gemma3_text").
    model_types: tuple[str, ...]
    # transformers module whose classes lxt patches, e.g. transformers.models.llama.modeling_llama
    modeling_module: str
    # "module:attribute" of lxt's AttnLRP patch map for that module
    lxt_patch_map: str
    # Tried in order; the first one the tokenizer knows as a single token is the DSM mask.
    mask_token_candidates: tuple[str, ...]
    # Biases, norms and tying for the memory planner; required, so a new family states them.
    layout: Layout
    # Extra keyword arguments for tokenizer.apply_chat_template (e.g. Qwen3's enable_thinking).
    chat_template_kwargs: dict = field(default_factory=dict)

    def modeling(self) -> ModuleType:
        return importlib.import_module(self.modeling_module)

    def mask_token(self, tokenizer) -> str | None:
        """The first candidate that the tokenizer encodes as one known token, else None
        (then the training code must add a token and resize the embeddings)."""
        vocab = tokenizer.get_vocab()
        for token in self.mask_token_candidates:
            if token in vocab:
                return token
        return None
