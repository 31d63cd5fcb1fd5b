"""The DSM mask token of a model, in one place.

The mask is a model-dependent special token (docs/METHOD.md, section DSM training): the family names candidates
(`Family.mask_token`). A tokenizer that knows none of them gets ADDED_MASK_TOKEN as a new
special token, and the embedding matrix grows by one row set to the mean of the existing
rows (deterministic, no random draw, so a resumed run rebuilds the very same model). The
trained model's folder is saved with this tokenizer, so the token stays in the DSM model.

Note: with LoRA the embedding rows are frozen, so an added token keeps its mean embedding.
"""

from __future__ import annotations

import torch

from ml.masking import DEFAULT_MASK_TOKEN
from ml.training import refusals
from ml.training.errors import TrainingInputError

ADDED_MASK_TOKEN = DEFAULT_MASK_TOKEN  # "<mask>": also the last candidate of every family


def mask_token_for(loaded) -> str:
    """The mask token to write into prompts for this model: the family's, or the one
    `ensure_mask_token` adds. Changes nothing."""
    return loaded.family.mask_token(loaded.tokenizer) or ADDED_MASK_TOKEN


def is_single_token(tokenizer, token: str) -> bool:
    ids = tokenizer(token, add_special_tokens=False)["input_ids"]
    return len(ids) == 1 and tokenizer.convert_ids_to_tokens(ids[0]) == token


def ensure_mask_token(loaded, token: str | None = None) -> str:
    """Make `token` (default: `mask_token_for(loaded)`) one special token of the tokenizer,
    adding it and resizing the model's embeddings when needed. Returns the token."""
    token = token or mask_token_for(loaded)
    tokenizer, model = loaded.tokenizer, loaded.model
    if is_single_token(tokenizer, token):
        return token
    tokenizer.add_special_tokens({"additional_special_tokens": [token]}, replace_additional_special_tokens=False)
    old = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) > old:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        with torch.no_grad():
            for emb in {
                id(m): m for m in (model.get_input_embeddings(), model.get_output_embeddings()) if m is not None
            }.values():
                emb.weight[old:] = emb.weight[:old].mean(0, keepdim=True)
    if not is_single_token(tokenizer, token):  # pragma: no cover - a tokenizer that refuses added tokens
        raise TrainingInputError(refusals.NOT_SINGLE_TOKEN, token=repr(token))
    return token
