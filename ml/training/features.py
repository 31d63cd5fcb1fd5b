"""Features for the classification heads: the frozen LM's last-layer hidden state (after
the final norm) at the LAST token of the prompt, the position from which the model would
write its answer. The prompt is the SFT prompt (data.sft_prompt: instruction, note,
`<crf_item> {s_T}? {mask} <\\crf_item>`, options) as the user turn followed by the chat
template's generation prompt, cut from the left to max_length tokens; so the state is
conditioned on both the note and s_T.

Computed once and cached as `<cache_dir>/features-<key>.npy` (float32, one row per item),
key = hash of (model fingerprint: path and a checksum of every parameter, the item ids and
the token ids of all prompts in order, max_length). Training heads for 20 epochs reads the array, never the
model.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ml.training.batching import collate, pad_id
from ml.training.data import LabeledItem, sft_prompt
from ml.training.encoding import Encoder
from ml.training.vocab import mask_token_for


def feature_prompt(item: LabeledItem, mask_token: str) -> str:
    return sft_prompt(item, mask_token)


def extract_features(loaded, items: Sequence[LabeledItem], *, cache_dir=None, batch_size: int = 8,
                     max_length: int = 512) -> np.ndarray:
    """(n_items, hidden) float32 array (see module doc)."""
    encoder = Encoder(loaded.tokenizer, max_length, loaded.family.chat_template_kwargs)
    mask = mask_token_for(loaded)
    encoded = [encoder.encode_prompt(feature_prompt(item, mask)) for item in items]
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"features-{_key(loaded, items, encoded, max_length)}.npy"
        if path.is_file():
            cached = np.load(path)
            if cached.shape[0] == len(items):
                return cached
    features = _compute(loaded, encoded, batch_size)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.npy")
        np.save(tmp, features)
        os.replace(tmp, path)
    return features


def _compute(loaded, encoded, batch_size: int) -> np.ndarray:
    model = loaded.model
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    pad = pad_id(loaded.tokenizer)
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i].input_ids))
    out = None
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start:start + batch_size]
                batch = collate([encoded[i] for i in chunk], pad)
                result = model(input_ids=batch["input_ids"].to(device),
                               attention_mask=batch["attention_mask"].to(device),
                               position_ids=batch["position_ids"].to(device),
                               output_hidden_states=True, logits_to_keep=1, use_cache=False)
                last = result.hidden_states[-1][:, -1, :].float().cpu().numpy()
                if out is None:
                    out = np.zeros((len(encoded), last.shape[1]), dtype=np.float32)
                out[chunk] = last
    finally:
        model.train(was_training)
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def model_fingerprint(model) -> str:
    """Names, shapes, dtypes and a checksum of every parameter (one pass over the weights)."""
    names, sums = [], []
    for name, p in model.named_parameters():
        names.append(f"{name}:{tuple(p.shape)}:{p.dtype}")
        sums.append(p.detach().float().sum())
    digest = hashlib.sha256("\n".join(names).encode())
    if sums:
        digest.update(torch.stack(sums).double().cpu().numpy().tobytes())
    return digest.hexdigest()


def _key(loaded, items, encoded, max_length: int) -> str:
    digest = hashlib.sha256(json.dumps({"path": str(loaded.path), "model": model_fingerprint(loaded.model),
                                        "max_length": max_length, "version": 1}).encode())
    digest.update("\x1f".join(item.item_id for item in items).encode())
    for e in encoded:
        digest.update(np.int64(len(e.input_ids)).tobytes())
        digest.update(e.input_ids.tobytes())
    return digest.hexdigest()[:32]
