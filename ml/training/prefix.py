"""Running many sequences that begin alike: the shared beginning once, its cache reused.

A labeled note is asked about many tasks, and the note comes before s_T in the prompt
(data.sft_prompt), so the items of one note share a long token prefix: chat header,
instruction, note. Option scoring adds one sequence per option of each item, all sharing
the whole prompt. `run_sequences` takes the sequences in groups (e.g. by note); for a group
whose common prefix is worth it, it runs the prefix ONCE, keeps its key/value cache, and runs
every sequence's own tail on a copy of that cache (right-padded batches, the cache repeated
per row). Everything else goes through plain left-padded batches, longest first. Outputs are
those of a full forward of each sequence alone, to float rounding (tests check every
supported family, including Gemma3's sliding-window layers).

The caller says how many LAST positions of each sequence it needs (`keep`) and receives,
batch by batch, those positions' last-layer hidden states (after the final norm) or logits.
A group shares at most up to where each member's kept positions start, so kept positions are
always computed, never read from the cache. Relevance shares prefixes the same way, with
gradients (ml.relevance.sharing): it reuses common_prefix_length, tail_batch and repeat_cache.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ml.training.batching import collate
from ml.training.encoding import Encoded
from ml.training.errors import TrainingCancelled

# A group shares its prefix only when that saves real work: at least this many tokens.
MIN_SHARED_TOKENS = 32

# consume(indices, outputs): outputs[j] is a (keep[indices[j]], hidden or vocab) tensor.
Consumer = Callable[[list[int], list[torch.Tensor]], None]


def common_prefix_length(sequences: Sequence[np.ndarray], keep: Sequence[int] | None = None) -> int:
    """Tokens shared by all sequences from the start, leaving each its last keep[i] tokens
    (default 1) of its own."""
    keep = keep or [1] * len(sequences)
    limit = min(len(s) - k for s, k in zip(sequences, keep))
    if limit <= 0:
        return 0
    first = sequences[0][:limit]
    for other in sequences[1:]:
        differ = np.flatnonzero(first != other[:limit])
        if differ.size:
            limit = int(differ[0])
            first = first[:limit]
    return limit


def tail_batch(
    tails: Sequence[np.ndarray], shared: int, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input ids, attention mask, position ids) of the tails that follow a cached prefix of
    `shared` tokens, one row each, RIGHT-padded: row j's tail ends at column len(tails[j]) - 1.
    Right, not left, padding: the masks of sliding-window layers (Gemma3) count from the cache
    position of each column, so a tail must start right after the prefix."""
    width = max(len(t) for t in tails)
    ids = torch.full((len(tails), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(tails), shared + width), dtype=torch.long)
    mask[:, :shared] = 1
    for row, tail in enumerate(tails):
        ids[row, : len(tail)] = torch.from_numpy(np.asarray(tail, dtype=np.int64))
        mask[row, shared : shared + len(tail)] = 1
    positions = torch.arange(shared, shared + width).expand(len(tails), -1)
    return ids, mask, positions


def repeat_cache(cache, rows: int):
    """A copy of a batch-1 key/value cache repeated `rows` times along the batch: the tails'
    forward appends to the copy, so `cache` stays the prefix's."""
    copied = copy.deepcopy(cache)
    copied.batch_repeat_interleave(rows)
    return copied


def run_sequences(
    model,
    sequences: Sequence[Encoded],
    keep: Sequence[int],
    consume: Consumer,
    *,
    groups: Sequence[Sequence[int]] | None = None,
    logits: bool = False,
    batch_size: int = 8,
    pad_id: int = 0,
    should_stop: Callable[[], bool] | None = None,
) -> None:
    """Call `consume` for every sequence exactly once (see module doc). groups: lists of
    sequence indices that may share a prefix (default: none shared). should_stop() is asked
    before every forward pass; True raises TrainingCancelled."""
    runner = _Runner(model, sequences, keep, consume, logits, max(1, batch_size), pad_id, should_stop)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            alone = []
            for group in groups if groups is not None else [range(len(sequences))]:
                group = list(group)
                shared = 0
                if groups is not None and len(group) > 1:
                    shared = common_prefix_length([sequences[i].input_ids for i in group], [keep[i] for i in group])
                if shared >= MIN_SHARED_TOKENS:
                    runner.shared(group, shared)
                else:
                    alone.extend(group)
            runner.plain(alone)
    finally:
        model.train(was_training)


class _Runner:
    def __init__(self, model, sequences, keep, consume, logits, batch_size, pad_id, should_stop):
        self.model, self.sequences, self.keep, self.consume = model, sequences, keep, consume
        self.logits, self.batch_size, self.pad, self.should_stop = logits, batch_size, pad_id, should_stop
        self.device = next(model.parameters()).device

    def plain(self, indices: list[int]) -> None:
        order = sorted(indices, key=lambda i: -len(self.sequences[i].input_ids))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            self._check_stop()
            width_keep = max(self.keep[i] for i in chunk)
            batch = collate([self.sequences[i] for i in chunk], self.pad)
            out = self.model(
                input_ids=batch["input_ids"].to(self.device),
                attention_mask=batch["attention_mask"].to(self.device),
                position_ids=batch["position_ids"].to(self.device),
                output_hidden_states=not self.logits,
                logits_to_keep=width_keep,
                use_cache=False,
            )
            states = out.logits if self.logits else out.hidden_states[-1][:, -width_keep:]
            # Left padding: every sequence ends in the last column.
            self.consume(chunk, [states[row, states.size(1) - self.keep[i] :] for row, i in enumerate(chunk)])

    def shared(self, group: list[int], shared: int) -> None:
        self._check_stop()
        prefix = torch.from_numpy(self.sequences[group[0]].input_ids[:shared].astype(np.int64))[None]
        cache = self.model(input_ids=prefix.to(self.device), use_cache=True, logits_to_keep=1).past_key_values
        for start in range(0, len(group), self.batch_size):
            chunk = group[start : start + self.batch_size]
            self._check_stop()
            tails = [self.sequences[i].input_ids[shared:] for i in chunk]
            ids, mask, positions = tail_batch(tails, shared, self.pad)
            batch_cache = repeat_cache(cache, len(chunk))
            out = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions.to(self.device),
                past_key_values=batch_cache,
                use_cache=True,
                output_hidden_states=not self.logits,
                logits_to_keep=0 if self.logits else 1,
            )
            states = out.logits if self.logits else out.hidden_states[-1]
            # Right padding: row j's sequence ends at column len(tail) - 1.
            self.consume(
                chunk,
                [states[row, len(tail) - self.keep[i] : len(tail)] for row, (i, tail) in enumerate(zip(chunk, tails))],
            )

    def _check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise TrainingCancelled("cancelled")
