"""Relevance maps computed outside the product (inseq, Captum, the AttnLRP authors' package...):
one JSON object a line, checked against the model's own tokens and turned into the maps the
product stores (docs/ml-cli.md#imported-relevance-maps).

A line names a note (`note`: its external id in the corpus), a task (`task`: its slug, or its
description) and its scores in one of four forms:
* `tokens` + `scores`: one score per note token, the tokens as the model's tokenizer gives them in
  the product's prompt; a token matches as the tokenizer's own string ("Ġrate"), its decoded text
  (" rate") or the note's text at the token's offsets ("rate"). Any other token, or another count,
  refuses the line with the first differing token position.
* `spans`: [[start, end, score], ...] character offsets into the note, end excluded;
* `offsets` + `scores`: [[start, end], ...] and one score each (the same, in two lists).
  Spans are projected onto the model's note tokens: a token's score is the score of the
  overlapping span with the largest |score| (signed), 0 where no span overlaps; a span that
  covers no token, or ends past the note, refuses the line.
* `input_ids` + `relevance`: the AttnLRP authors' package (lxt) output as its users save it, one
  relevance per token of the WHOLE prompt they explained (`(input_embeds * input_embeds.grad)
  .sum(-1)`, and the `input_ids` given to the model; a batch of one, `[[...]]`, is taken as
  well). The ids must be the product's prompt for the pair, position by position, through its
  last note token (what follows, the template's end and the explained token, may differ); the
  note tokens' relevance is kept. Another id refuses the line with the first differing position.
Scores are then normalised as the product's own are (RelevanceConfig.normalise: |r| / max |r|
by default), so thresholds and peaks mean the same on an imported map.

Nothing here reads Django or a model's weights; the tokenizer is the model version's. Messages
name positions and lengths, never the note's text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ml.relevance.compute import normalise_scores
from ml.relevance.config import RelevanceConfig
from ml.relevance.encoding import PromptError, encode_pair

FIELDS = ("note", "task", "tokens", "scores", "spans", "offsets", "input_ids", "relevance")
MAX_SCORE = 65504.0  # the largest float16: raw scores beyond it are refused, not silently made infinite


class MapLineError(ValueError):
    """A line that cannot become a map; the message says why in plain words (no note text)."""


@dataclass(frozen=True)
class MapLine:
    """One parsed line: note and task keys, and either tokens or (start, end) spans with scores."""

    note: str
    task: str
    scores: np.ndarray  # float64 (n,)
    tokens: list[str] | None = None
    spans: np.ndarray | None = None  # int64 (n, 2)
    input_ids: list[int] | None = None  # the whole prompt's ids (lxt's form): scores are per prompt token


@dataclass(frozen=True)
class NoteTokens:
    """The model's note tokens in the product's prompt for one pair: offsets into the note and,
    per token, the strings a given token may equal."""

    offsets: np.ndarray  # int32 (n, 2)
    accepted: list[tuple[str, ...]]
    input_ids: tuple[int, ...] = ()  # the whole prompt
    note_index: np.ndarray | None = None  # the note tokens' positions in input_ids


def parse(obj: dict) -> MapLine:
    """A line's object as a MapLine, or MapLineError naming the field at fault."""
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        raise MapLineError(f"unknown field(s) {', '.join(unknown)}; a line has {', '.join(FIELDS)}")
    note, task = obj.get("note"), obj.get("task")
    if isinstance(note, int) and not isinstance(note, bool):
        note = str(note)
    if not isinstance(note, str) or not note.strip():
        raise MapLineError("missing field note (the note's external id in the corpus)")
    if not isinstance(task, str) or not task.strip():
        raise MapLineError("missing field task (the task's slug or description)")
    forms = [name for name in ("tokens", "spans", "offsets", "input_ids") if name in obj]
    if len(forms) != 1:
        raise MapLineError(
            "give exactly one of tokens (with scores), spans, offsets (with scores) or input_ids (with relevance)"
        )
    if forms == ["input_ids"]:
        return _prompt_line(obj, note.strip(), task.strip())
    if "relevance" in obj:
        raise MapLineError("relevance goes with input_ids (the whole prompt); with tokens or offsets give scores")
    if forms == ["spans"]:
        if "scores" in obj:
            raise MapLineError("spans carry their scores ([start, end, score]): leave out scores")
        spans = obj["spans"]
        if not isinstance(spans, list) or not all(isinstance(s, list) and len(s) == 3 for s in spans):
            raise MapLineError("spans must be a list of [start, end, score]")
        offsets, scores = [s[:2] for s in spans], [s[2] for s in spans]
        return MapLine(note.strip(), task.strip(), _scores(scores, "spans"), spans=_offsets(offsets, "spans"))
    if "scores" not in obj:
        raise MapLineError(f"missing field scores (one per item of {forms[0]})")
    scores = _scores(obj["scores"], "scores")
    if forms == ["offsets"]:
        offsets = obj["offsets"]
        if not isinstance(offsets, list) or not all(isinstance(s, list) and len(s) == 2 for s in offsets):
            raise MapLineError("offsets must be a list of [start, end]")
        if len(offsets) != len(scores):
            raise MapLineError(f"{len(offsets)} offsets but {len(scores)} scores")
        return MapLine(note.strip(), task.strip(), scores, spans=_offsets(offsets, "offsets"))
    tokens = obj["tokens"]
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise MapLineError("tokens must be a list of strings")
    if len(tokens) != len(scores):
        raise MapLineError(f"{len(tokens)} tokens but {len(scores)} scores")
    return MapLine(note.strip(), task.strip(), scores, tokens=tokens)


def _prompt_line(obj: dict, note: str, task: str) -> MapLine:
    """The lxt form: the whole prompt's ids and one relevance each (a batch of one unwrapped)."""
    if "scores" in obj:
        raise MapLineError("input_ids go with relevance (one per prompt token): leave out scores")
    if "relevance" not in obj:
        raise MapLineError("missing field relevance (one per item of input_ids)")
    ids, relevance = _unbatched(obj["input_ids"]), _unbatched(obj["relevance"])
    if not isinstance(ids, list) or not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise MapLineError("input_ids must be a non-empty list of token ids (whole numbers)")
    scores = _scores(relevance, "relevance")
    if len(ids) != len(scores):
        raise MapLineError(f"{len(ids)} input_ids but {len(scores)} relevance values")
    return MapLine(note, task, scores, input_ids=ids)


def _unbatched(values):
    """[[...]] (a tensor of batch 1, as `.tolist()` gives it) -> [...]."""
    if isinstance(values, list) and len(values) == 1 and isinstance(values[0], list):
        return values[0]
    return values


def _scores(values, field: str) -> np.ndarray:
    if not isinstance(values, list) or not values:
        raise MapLineError(f"{field}: a non-empty list of numbers is needed")
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MapLineError(f"{field}: score {index} is not a number")
        if not math.isfinite(value):
            raise MapLineError(f"{field}: score {index} is not finite (NaN or infinity)")
        if abs(value) > MAX_SCORE:
            raise MapLineError(f"{field}: score {index} is beyond {MAX_SCORE:g} (scale the map down)")
    return np.asarray(values, dtype=np.float64)


def _offsets(values, field: str) -> np.ndarray:
    for index, (start, end) in enumerate(values):
        if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
            raise MapLineError(f"{field}: item {index} has offsets that are not whole numbers")
        if not 0 <= start < end:
            raise MapLineError(f"{field}: item {index} is not a span (0 <= start < end)")
    return np.asarray(values, dtype=np.int64).reshape(-1, 2)


def context_limit_of(hf_config) -> int | None:
    """ml.relevance.encoding.context_limit of a model's config alone (no weights loaded)."""
    from ml.relevance.encoding import context_limit

    return context_limit(type("Model", (), {"config": hf_config})())


def note_tokens(
    tokenizer,
    note: str,
    task: str,
    config: RelevanceConfig,
    *,
    max_note_tokens: int | None,
    chat_template_kwargs: dict | None = None,
) -> NoteTokens:
    """The note tokens of the pair's prompt exactly as ml.relevance.compute_relevance finds them
    (same template, truncation and note limit), with the strings each may be given as."""
    from ml.prompts import get_template

    try:
        enc = encode_pair(
            tokenizer,
            note,
            task,
            template=get_template(config.template),
            chat_template_kwargs=chat_template_kwargs,
            max_note_tokens=config.max_note_tokens if config.max_note_tokens is not None else max_note_tokens,
            truncate=config.truncate,
            include_target=config.explain == "next",
        )
    except PromptError as exc:
        raise MapLineError(f"no prompt for this pair: {exc}") from None
    ids = [enc.input_ids[i] for i in enc.note_index]
    raw = tokenizer.convert_ids_to_tokens(ids)
    accepted = [
        tuple(dict.fromkeys((raw[i], tokenizer.decode([ids[i]]), note[a:b])))
        for i, (a, b) in enumerate(enc.offsets.tolist())
    ]
    return NoteTokens(enc.offsets, accepted, tuple(enc.input_ids), np.asarray(enc.note_index))


def raw_scores(line: MapLine, expected: NoteTokens, note_length: int) -> np.ndarray:
    """The line's scores over the model's note tokens (before normalisation), or MapLineError
    naming the first token that does not match, or the span that does not fit."""
    n = len(expected.offsets)
    if line.input_ids is not None:
        return _prompt_scores(line, expected)
    if line.tokens is not None:
        for index, (given, accepted) in enumerate(zip(line.tokens, expected.accepted)):
            if given not in accepted:
                raise MapLineError(
                    f"tokens differ from the model's tokenizer at token {index}: expected a token of "
                    f"{len(accepted[-1])} character(s) of the note, given one of {len(given)} character(s) "
                    f"({n} note tokens expected, {len(line.tokens)} given)"
                )
        if len(line.tokens) != n:
            raise MapLineError(
                f"tokens differ from the model's tokenizer at token {min(n, len(line.tokens))}: "
                f"{n} note tokens expected, {len(line.tokens)} given"
            )
        return line.scores.astype(np.float64)
    return project(line.spans, line.scores, expected.offsets, note_length)


def _prompt_scores(line: MapLine, expected: NoteTokens) -> np.ndarray:
    """The note tokens' relevance of a whole prompt, once its ids are the product's through the
    last note token (module doc)."""
    if expected.note_index is None or not len(expected.note_index):
        raise MapLineError("the product's prompt for this pair has no note token")
    wanted = expected.input_ids[: int(expected.note_index[-1]) + 1]
    given = line.input_ids
    for index, (a, b) in enumerate(zip(wanted, given)):
        if a != b:
            raise MapLineError(
                f"input_ids differ from the product's prompt at position {index} "
                f"({len(expected.input_ids)} prompt tokens expected, the note's last at {len(wanted) - 1}; "
                f"{len(given)} given)"
            )
    if len(given) < len(wanted):
        raise MapLineError(
            f"input_ids differ from the product's prompt at position {len(given)}: they end before the note's "
            f"last token ({len(expected.input_ids)} prompt tokens expected, {len(given)} given)"
        )
    return line.scores[expected.note_index].astype(np.float64)


def project(spans: np.ndarray, scores: np.ndarray, offsets: np.ndarray, note_length: int) -> np.ndarray:
    """Character spans' scores onto tokens: each token takes the score of the overlapping span
    with the largest |score| (signed), 0 where none overlaps."""
    if len(spans) and int(spans[:, 1].max()) > note_length:
        index = int(np.argmax(spans[:, 1] > note_length))
        raise MapLineError(f"span {index} ends at {int(spans[index, 1])}, past the note's {note_length} characters")
    out = np.zeros(len(offsets), dtype=np.float64)
    best = np.full(len(offsets), -1.0)
    starts, ends = offsets[:, 0], offsets[:, 1]
    for index, ((a, b), score) in enumerate(zip(spans.tolist(), scores.tolist())):
        hit = np.flatnonzero((starts < b) & (ends > a))
        if len(hit) == 0:
            raise MapLineError(f"span {index} ({a}-{b}) overlaps no token of the model's prompt (a truncated note?)")
        better = hit[abs(score) > best[hit]]
        out[better], best[better] = score, abs(score)
    return out


def final_scores(raw: np.ndarray, config: RelevanceConfig) -> np.ndarray:
    """The stored scores: normalised as the product's maps are (config.normalise)."""
    return normalise_scores(raw.astype(np.float32), config.normalise)
