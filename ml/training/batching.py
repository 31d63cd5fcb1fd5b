"""Data order and micro-batches.

Each epoch is a permutation of the examples drawn from (seed, epoch) alone, so a resumed
run regenerates exactly the order of the interrupted one. Consecutive slices of
`effective_batch_size` examples make the optimizer steps; WITHIN a step the examples are
sorted by length (longest first) before being cut into micro-batches. A step's gradient is
that of the same examples whatever their grouping (the loss is normalised by the step's
supervised-token count, see loop.py), so sorting only removes padding. Under several
processes, process r takes micro-batches r, r + world, ... of each step.

Micro-batches are LEFT-padded with explicit position ids (every sequence sees the positions
it would see alone), so all answers end in the last column and the output layer is only
computed for the last `keep` positions (`logits_to_keep`): for DSM examples (long prompt,
short answer) this skips most of the vocabulary projection.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ml.training.encoding import Encoded

IGNORE_INDEX = -100


def epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    return np.random.default_rng([seed, epoch]).permutation(n)


def step_plan(lengths: Sequence[int], *, seed: int, epoch: int, effective: int, micro: int) -> list[list[np.ndarray]]:
    """For one epoch: steps -> micro-batches -> example indices (see module doc)."""
    lengths = np.asarray(lengths)
    order = epoch_order(len(lengths), seed, epoch)
    steps = []
    for start in range(0, len(order), effective):
        chunk = order[start : start + effective]
        chunk = chunk[np.argsort(-lengths[chunk], kind="stable")]
        steps.append([chunk[i : i + micro] for i in range(0, len(chunk), micro)])
    return steps


def pad_id(tokenizer) -> int:
    """Any id works (padding is masked and never supervised): pad, else eos, else 0."""
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return token_id
    return 0


def collate(batch: Sequence[Encoded], pad_id: int) -> dict:
    """Left-padded tensors: input_ids, attention_mask, position_ids, labels (-100 on prompt
    and padding), and `keep`, the number of last positions whose logits the loss needs."""
    width = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    keep = 1
    for row, e in enumerate(batch):
        n = len(e.input_ids)
        tokens = torch.from_numpy(e.input_ids.astype(np.int64))
        ids[row, width - n :] = tokens
        mask[row, width - n :] = 1
        labels[row, width - n + e.prompt_len :] = tokens[e.prompt_len :]
        keep = max(keep, n - e.prompt_len + 1)
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "position_ids": position_ids,
        "labels": labels,
        "keep": min(keep, width),
    }


def token_losses(model, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-position cross-entropy (fp32, 0 where not supervised) and the supervised mask,
    both (rows, keep - 1), aligned with the last keep - 1 tokens of each row."""
    keep = batch["keep"]
    out = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        logits_to_keep=keep,
        use_cache=False,
    )
    logits = out.logits[:, :-1].float()
    labels = batch["labels"][:, batch["labels"].size(1) - keep + 1 :]
    losses = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX, reduction="none"
    )
    return losses.view(labels.shape), labels != IGNORE_INDEX


def loss_sum(model, batch: dict) -> tuple[torch.Tensor, int]:
    """(sum of the token cross-entropies of the supervised tokens, their number)."""
    losses, mask = token_losses(model, batch)
    return losses.sum(), int(mask.sum())
