"""What the rest of ml/ needs to know about one model family.

A family is one small file (families/<name>.py) holding one `Family` instance: which
`config.model_type` values it covers, which transformers module lxt must patch, which lxt
patch map to use, which special token serves as the DSM mask, and chat-template quirks.
Code elsewhere asks the family instead of testing model names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType


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
