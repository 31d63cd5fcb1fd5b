"""Features for the classification heads: the frozen LM's last-layer hidden state (after
the final norm) at the LAST token of the prompt, the position from which the model would
write its answer. The prompt is the SFT prompt (data.sft_prompt: instruction, note,
`<crf_item> {s_T}? {mask} <\\crf_item>`, options) as the user turn followed by the chat
template's generation prompt, cut from the left to max_length tokens; so the state is
conditioned on both the note and s_T.

The items of one note share a long token prefix (chat header, instruction, note): it is
run once for all of them (ml.training.prefix), about 7x less compute on CodiEsp notes with
20 tasks each (`python -m benchmarks features`), same states to float rounding. A note
too long for max_length is cut from the left ONCE for all its tasks, to the window the
task with the longest tail needs (cut per item, each task would see a slightly different
window and nothing would be shared).

Computed once and cached as `<cache_dir>/features-<key>.npy` (float32, one row per item),
key = hash of (model fingerprint: path and a checksum of every parameter, the item ids and
the token ids of all prompts in order, max_length). Training heads for 20 epochs reads the array, never the
model.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from ml.training.batching import pad_id
from ml.training.data import LabeledItem, sft_prompt, sft_prompt_parts
from ml.training.encoding import Encoded, Encoder
from ml.training.errors import TrainingCancelled
from ml.training.prefix import run_sequences
from ml.training.vocab import mask_token_for


def feature_prompt(item: LabeledItem, mask_token: str) -> str:
    return sft_prompt(item, mask_token)


def extract_features(
    loaded,
    items: Sequence[LabeledItem],
    *,
    cache_dir=None,
    batch_size: int = 8,
    max_length: int = 512,
    shared_prefix: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> np.ndarray:
    """(n_items, hidden) float32 array (see module doc). `on_progress(done, total)` after
    each batch; `should_stop()` before each, raising TrainingCancelled when True (nothing
    is cached then)."""
    encoder = Encoder(loaded.tokenizer, max_length, loaded.family.chat_template_kwargs)
    mask = mask_token_for(loaded)
    groups = note_groups(items) if shared_prefix else None
    encoded = [encoder.encode_prompt(feature_prompt(item, mask)) for item in items]
    for group in groups or ():
        if len(group) > 1 and any(encoded[i].truncated for i in group):
            _one_window(encoder, items, encoded, group, mask)
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"features-{_key(loaded, items, encoded, max_length)}.npy"
        if path.is_file():
            cached = np.load(path)
            if cached.shape[0] == len(items):
                return cached
    hidden = loaded.model.config.get_text_config().hidden_size
    features = np.zeros((len(items), hidden), dtype=np.float32)
    done = 0

    def store(indices: list[int], states: list[torch.Tensor]) -> None:
        nonlocal done
        features[indices] = torch.stack([s[-1] for s in states]).float().cpu().numpy()
        done += len(indices)
        if on_progress is not None:
            on_progress(done, len(items))

    try:
        run_sequences(
            loaded.model,
            encoded,
            [1] * len(encoded),
            store,
            batch_size=batch_size,
            groups=groups,
            pad_id=pad_id(loaded.tokenizer),
            should_stop=should_stop,
        )
    except TrainingCancelled:
        raise TrainingCancelled(
            f"cancelled while computing features ({done} of {len(items)} done)", step=done
        ) from None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}.npy")
        np.save(tmp, features)
        os.replace(tmp, path)
    return features


def _one_window(
    encoder: Encoder, items: Sequence[LabeledItem], encoded: list[Encoded], group: list[int], mask: str
) -> None:
    """Re-encode a truncated note's items on the shortest window any of them was cut to."""
    windows = []
    for i in group:
        before, after = sft_prompt_parts(items[i], mask)
        fitted = encoder.fit(before + items[i].text + after, "")
        user = fitted[0] if fitted else ""
        windows.append(user[len(before) : len(user) - len(after)] if user.endswith(after) else "")
    window = min(windows, key=len)
    for i in group:
        encoded[i] = replace(
            encoder.encode_prompt(feature_prompt(replace(items[i], text=window), mask)), truncated=True
        )


def note_groups(items: Sequence[LabeledItem]) -> list[list[int]]:
    """Item indices grouped by note (same note id and text), in first-seen order."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, item in enumerate(items):
        groups.setdefault((item.note_id, item.text), []).append(index)
    return list(groups.values())


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
    digest = hashlib.sha256(
        json.dumps(
            {"path": str(loaded.path), "model": model_fingerprint(loaded.model), "max_length": max_length, "version": 1}
        ).encode()
    )
    digest.update("\x1f".join(item.item_id for item in items).encode())
    for e in encoded:
        digest.update(np.int64(len(e.input_ids)).tobytes())
        digest.update(e.input_ids.tobytes())
    return digest.hexdigest()[:32]
