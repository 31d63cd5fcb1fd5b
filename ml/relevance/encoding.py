"""The relevance prompt of one (note, task) pair: its tokens, where the note's tokens are (with
character offsets into the original note), and which logits each explain variant explains."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ml.prompts import PromptTemplate, build_prompt, get_template
from ml.relevance.config import TRUNCATE

TEMPLATE_ROOM = 256  # tokens kept free for the chat header, template and s_T


class PromptError(ValueError):
    """A note-task pair that gives no prompt to explain (empty note, no note token before the
    task...). Its message never quotes the note, so callers may show it."""


@dataclass
class EncodedPair:
    input_ids: list[int]  # prompt tokens up to the target token (included when include_target)
    note_index: np.ndarray  # positions of the note tokens in input_ids
    offsets: np.ndarray  # int32 (n, 2) into the original note
    target_id: int  # the middle token of s_T
    truncated: bool
    task_ids: list[int] = field(default_factory=list)  # every token of s_T, in order


def encode_pair(
    tokenizer,
    note: str,
    task: str,
    *,
    template: PromptTemplate | str | None = None,
    chat: bool | None = None,
    chat_template_kwargs: dict | None = None,
    max_note_tokens: int | None = None,
    truncate: str = "right",
    include_target: bool = False,
    whole_task: bool = False,
) -> EncodedPair:
    """Tokenise one (note, task) prompt and locate the note tokens and the target token.

    input_ids end just before s_T's middle token; with include_target, just after it; with
    whole_task, just before s_T's LAST token (so the last len(task_ids) positions are the
    ones that predict the tokens of s_T).

    A token belongs to the note when its character span overlaps the note's span in the
    prompt; its offsets are clipped to the note (a token straddling the boundary, e.g. a
    whitespace run, keeps only its note part). Special tokens and template text never
    overlap the note, so they are excluded.
    """
    if not isinstance(note, str) or not note.strip():
        raise PromptError("note text is empty")
    if not isinstance(task, str) or not task.strip():
        raise PromptError("task description is empty")
    if truncate not in TRUNCATE:
        raise ValueError(f"truncate must be one of {TRUNCATE}")
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("relevance needs a fast tokenizer (character offsets)")
    template = get_template(template)

    shift, used, truncated = 0, note, False
    if max_note_tokens is not None:
        if max_note_tokens < 1:
            raise ValueError("max_note_tokens must be >= 1")
        spans = tokenizer(note, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        if len(spans) > max_note_tokens:
            truncated = True
            if truncate == "right":  # keep the beginning, as the reference's text[:max_len]
                used = note[: spans[max_note_tokens - 1][1]]
            else:  # keep the end
                shift = spans[len(spans) - max_note_tokens][0]
                used = note[shift:]

    prompt = build_prompt(tokenizer, template, used, task, chat=chat, chat_template_kwargs=chat_template_kwargs)
    enc = tokenizer(prompt.text, add_special_tokens=False, return_offsets_mapping=True)
    ids, spans = enc["input_ids"], np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    starts, ends = spans[:, 0], spans[:, 1]
    (n0, n1), (t0, t1) = prompt.note_span, prompt.task_span
    in_note = np.flatnonzero((ends > starts) & (starts < n1) & (ends > n0))
    in_task = np.flatnonzero((ends > starts) & (starts < t1) & (ends > t0))
    if len(in_task) == 0:
        raise PromptError("the task description produced no tokens")
    target = int(in_task[(len(in_task) - 1) // 2])
    in_note = in_note[in_note < target]
    if len(in_note) == 0:
        raise PromptError("note produced no tokens before the task description")
    offsets = np.stack([np.clip(starts[in_note], n0, n1), np.clip(ends[in_note], n0, n1)], axis=1)
    offsets = (offsets - n0 + shift).astype(np.int32)
    if include_target and whole_task:
        raise ValueError("include_target and whole_task are exclusive")
    end = int(in_task[-1]) if whole_task else target + 1 if include_target else target
    return EncodedPair(list(ids[:end]), in_note, offsets, int(ids[target]), truncated, [int(ids[i]) for i in in_task])


def explained_ids(enc: EncodedPair, explain: str) -> list[int] | None:
    """Token ids whose logits a prompt explains, at its last len(ids) positions (None: the top
    logit at its last position)."""
    if explain in ("span", "contrastive"):
        return enc.task_ids
    if explain == "target":
        return [enc.target_id]
    return None  # "next", "max"


def context_limit(model) -> int | None:
    """Default note limit: the model's context minus room for the chat header and template."""
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is None:
        positions = getattr(getattr(model.config, "text_config", None), "max_position_embeddings", None)
    return max(positions - TEMPLATE_ROOM, 1) if positions else None
