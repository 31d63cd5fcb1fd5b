"""compute_relevance: the maps of many (note, task) pairs under one configuration, batched, with
a note's prompts sharing their prefix where the method allows (module docstring of ml.relevance)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ml.prompts import get_template
from ml.relevance import methods
from ml.relevance.config import RelevanceConfig, RelevanceResult
from ml.relevance.encoding import EncodedPair, PromptError, context_limit, encode_pair, explained_ids
from ml.relevance.targets import ExplainedTargets

if TYPE_CHECKING:
    import torch


def shares_prefix_by_default(device: torch.device | str) -> bool:
    """compute_relevance's `share_prefix` when not told: a note's prompts share their prefix's
    forward pass on the CPU, and run whole on CUDA.

    On the CPU sharing pays (~2x the prompts/s on 2 cores: the note's forward pass once, not
    once a task). On one H200 it did not: batches of 16 whole prompts gave 4.1x (SmolLM2-135M)
    and 2.6x (a 1B-shaped Llama) the prompts/s of the shared path, whose tails and backward
    passes run in smaller batches (scripts/gpu_check.py, docs/benchmarks/gpu-check-h200.json)."""
    import torch

    return torch.device(device).type == "cpu"


def compute_relevance(
    loaded,
    notes: list[str],
    task_descriptions: list[str],
    config: RelevanceConfig | None = None,
    *,
    batch_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    chat: bool | None = None,
    share_prefix: bool | None = None,
    **settings,
) -> list[RelevanceResult]:
    """Relevance of each note's tokens for its task description; one result per pair, in order.

    loaded: an ml.models.LoadedModel. notes and task_descriptions: equal-length lists.
    config: a RelevanceConfig, or its fields as keywords (method="grad_input", explain="span",
    template="it", normalise="clip", max_note_tokens=..., truncate=..., dtype=..., neutral=...),
    not both. See RelevanceConfig and the module docstring for their meaning.
    method "attnlrp" patches this process with lxt (see ml.lrp): it must not train afterwards.
    An explicit config.dtype must be the dtype the model is loaded in ("auto": any).
    batch_size: prompts per forward pass (None: 1 on CPU, where batching gains nothing on
    two cores, 16 on CUDA); on CUDA it halves on out-of-memory. Results do not depend on it.
    progress(done, total) is called after each batch, in prompts ("contrastive" adds one
    prompt per distinct note).
    share_prefix: run the common prefix of a note's prompts once (module doc; None:
    shares_prefix_by_default(the model's device)). An execution detail like batch_size: maps
    equal to float rounding, the configuration key unchanged; "attention" never shares.
    batch_size also bounds the rows over one shared prefix (None: 16, on CPU too).
    Notes longer than config.max_note_tokens are cut (the task part never is); None: the
    model's context (max_position_embeddings) minus TEMPLATE_ROOM tokens.
    """
    import torch

    if config is None:
        config = RelevanceConfig(**settings)
    elif settings:
        raise TypeError(f"give a RelevanceConfig or its fields as keywords, not both ({', '.join(settings)})")
    if len(notes) != len(task_descriptions):
        raise ValueError("notes and task_descriptions must have the same length")
    tokenizer, model = loaded.tokenizer, loaded.model
    if config.dtype != "auto" and getattr(loaded, "dtype", None) != getattr(torch, config.dtype):
        raise ValueError(
            f"this configuration asks for {config.dtype}, but the model is loaded in "
            f"{loaded.dtype}; load it with dtype={config.dtype!r}"
        )
    explain, method = config.explain, methods.get(config.method)
    max_note_tokens = config.max_note_tokens if config.max_note_tokens is not None else context_limit(model)
    encode = dict(
        template=get_template(config.template),
        chat=chat,
        chat_template_kwargs=loaded.family.chat_template_kwargs,
        max_note_tokens=max_note_tokens,
        truncate=config.truncate,
    )
    whole_task = explain in ("span", "contrastive")
    prompts: list[tuple[EncodedPair, list[int] | None]] = []  # (prompt, ids explained; None: top logit)
    prompt_notes: list[str] = []  # the note of each prompt (its prompts may share their prefix)
    neutral_prompt: dict[str, int] = {}  # note text -> index of its neutral prompt ("contrastive")
    pairs: list[tuple[int, int | None]] = []  # per pair: (its prompt, its neutral prompt or None)
    for note, task in zip(notes, task_descriptions):
        enc = encode_pair(tokenizer, note, task, include_target=explain == "next", whole_task=whole_task, **encode)
        prompts.append((enc, explained_ids(enc, explain)))
        prompt_notes.append(note)
        main = len(prompts) - 1
        if explain != "contrastive":
            pairs.append((main, None))
            continue
        if note not in neutral_prompt:
            other = encode_pair(tokenizer, note, config.neutral, whole_task=True, **encode)
            if not np.array_equal(other.offsets, enc.offsets):  # the note precedes the task: never expected
                raise PromptError(
                    "the neutral prompt tokenised the note differently (a custom template whose task "
                    "follows the note without a separator?)"
                )
            prompts.append((other, other.task_ids))
            prompt_notes.append(note)
            neutral_prompt[note] = len(prompts) - 1
        pairs.append((main, neutral_prompt[note]))

    method.prepare(loaded.family)
    method.prepare_tokenizer(tokenizer)
    # Rows per pass over a shared prefix: the whole group on CPU too, where its batched
    # backward through the prefix is what pays (see ml.relevance.sharing).
    group_rows = batch_size or 16
    if batch_size is None:
        batch_size = 16 if model.device.type == "cuda" else 1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (tokenizer.eos_token_id or 0)
    share = shares_prefix_by_default(model.device) if share_prefix is None else bool(share_prefix)
    groups, alone = ([], range(len(prompts)))
    if share and method.shares_prefix:
        groups, alone = _prefix_groups(prompts, prompt_notes)

    raw: list[np.ndarray | None] = [None] * len(prompts)  # note-token relevance of each prompt
    predicted: list[list[int] | None] = [None] * len(prompts)
    order = sorted(alone, key=lambda i: len(prompts[i][0].input_ids))
    done = 0

    def plain(indices):
        return _run_batch(
            model, [prompts[i][0].input_ids for i in indices], pad_id, method, [prompts[i][1] for i in indices]
        )

    def keep(indices, rows, tops):
        nonlocal done
        for i, row, top in zip(indices, rows, tops):
            enc = prompts[i][0]
            raw[i] = row[len(row) - len(enc.input_ids) + enc.note_index].astype(np.float32)
            predicted[i] = top
        done += len(indices)
        if progress is not None:
            progress(done, len(prompts))

    with _relevance_mode(model, method):
        if groups:
            from ml.relevance.sharing import run_group
        for group, shared in groups:
            (rows, tops), group_rows = _halving_on_oom(
                group_rows,
                functools.partial(
                    run_group,
                    model,
                    [prompts[i][0].input_ids for i in group],
                    shared,
                    pad_id,
                    [prompts[i][1] for i in group],
                ),
            )
            keep(group, rows, tops)
        start = 0
        while start < len(order):
            (rows, tops), batch_size = _halving_on_oom(batch_size, lambda n, at=start: plain(order[at : at + n]))
            keep(order[start : start + len(rows)], rows, tops)
            start += len(rows)

    results = []
    for main, neutral in pairs:
        enc = prompts[main][0]
        scores = raw[main]
        if neutral is not None:
            other = prompts[neutral][0]
            scores = (scores / len(enc.task_ids) - raw[neutral] / len(other.task_ids)).astype(np.float32)
        explained = enc.task_ids if whole_task else [enc.target_id]
        results.append(
            RelevanceResult(
                offsets=enc.offsets,
                raw_scores=scores,
                scores=normalise_scores(scores, config.normalise),
                target_token=tokenizer.decode(explained),
                predicted_token=tokenizer.decode(predicted[main]),
                truncated=enc.truncated,
            )
        )
    return results


def _prefix_groups(
    prompts: list[tuple[EncodedPair, list[int] | None]], prompt_notes: list[str]
) -> tuple[list[tuple[list[int], int]], list[int]]:
    """-> ([(prompt indices of one note, tokens they share)], the other prompts' indices).
    A note's prompts form a group when their common prefix is long enough to share
    (ml.relevance.sharing.group_prefix); the explained positions always stay in the tails."""
    from ml.relevance.sharing import group_prefix

    by_note: dict[str, list[int]] = {}
    for i, note in enumerate(prompt_notes):
        by_note.setdefault(note, []).append(i)
    groups, alone = [], []
    for indices in by_note.values():
        shared = group_prefix(
            [prompts[i][0].input_ids for i in indices], [len(prompts[i][1]) if prompts[i][1] else 1 for i in indices]
        )
        if shared:
            groups.append((indices, shared))
        else:
            alone.extend(indices)
    return groups, alone


def _halving_on_oom(rows: int, attempt: Callable[[int], tuple]) -> tuple[tuple, int]:
    """(attempt(rows), rows); on CUDA out-of-memory, tried again with half as many rows."""
    import torch

    while True:
        try:
            return attempt(rows), rows
        except torch.cuda.OutOfMemoryError:
            if rows == 1:
                raise
            rows = max(1, rows // 2)
            torch.cuda.empty_cache()


def normalise_scores(raw: np.ndarray, how: str = "abs") -> np.ndarray:
    values = np.abs(raw) if how == "abs" else np.clip(raw, 0.0, None)
    top = float(values.max()) if values.size else 0.0
    if top <= 0.0 or not np.isfinite(top):
        return np.zeros_like(values, dtype=np.float32)
    return (values / top).astype(np.float32)


def _run_batch(
    model,
    batch: list[list[int]],
    pad_id: int,
    method: methods.RelevanceMethod,
    explained: list[list[int] | None],
) -> tuple[np.ndarray, list[list[int]]]:
    """-> (relevance per position (B, L) as float32 numpy, top predicted ids at each prompt's
    explained positions). explained[b]: the token ids whose logits prompt b explains, one per
    position at its end (None: its largest logit at the last position); their sum is explained."""
    import torch

    width = max(len(ids) for ids in batch)
    device = model.device
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for row, ids in enumerate(batch):  # left padding: every prompt ends in the last column
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        mask[row, width - len(ids) :] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)
    targets = ExplainedTargets.of(explained, device)
    keep = targets.keep
    input_ids, mask, position_ids = input_ids.to(device), mask.to(device), position_ids.to(device)
    kwargs = {"attention_mask": mask, "position_ids": position_ids, "use_cache": False, "logits_to_keep": keep}

    relevance, logits = method.batch(model, input_ids, kwargs, targets)
    return relevance.float().cpu().numpy(), targets.predicted(logits)


@contextlib.contextmanager
def _relevance_mode(model, method: methods.RelevanceMethod):
    """eval mode, frozen parameters, eager attention for a method that reads attention weights;
    restored after."""
    was_training = model.training
    flags = [(p, p.requires_grad) for p in model.parameters()]
    previous_attn = getattr(model.config, "_attn_implementation", None)
    model.eval()
    for p, _ in flags:
        p.requires_grad_(False)
    if method.eager_attention and previous_attn != "eager":
        model.set_attn_implementation("eager")  # sdpa does not return attention weights
    try:
        yield
    finally:
        if method.eager_attention and previous_attn not in (None, "eager"):
            model.set_attn_implementation(previous_attn)
        for p, flag in flags:
            p.requires_grad_(flag)
        model.train(was_training)
