"""`python -m ml peaks`: add peaks to relevance records.

Reads relevance JSONL (one line per note and task, as `python -m ml relevance` writes) and the
notes JSONL, and writes each relevance record again with:
- `peaks`: the peaks as token spans [[start, end], ...] (half-open, sorted): widened to words,
  merged and, unless `--no-trim`, trimmed of edge punctuation (ml.peaks, the app's rule),
- `peak_chars`: their character spans in the note text (aligned with `peaks`),
- `peak_params`: the parameters used (ml.peaks.PeakParams as a dict).
Also home to the record readers that `examples` and `localisation` share.
"""

from __future__ import annotations

import sys
from itertools import islice

import numpy as np
from tqdm import tqdm

from ml.jsonl import JsonlError, read_jsonl, write_jsonl
from ml.peaks import PAPER, PeakParams, peaks_of_arrays

BATCH = 4096  # relevance records per find_peaks_many call


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "peaks", help="find peaks (groups) in relevance maps", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--relevance", required=True, help="relevance JSONL")
    parser.add_argument("--notes", required=True, help="notes JSONL ({id, text, ...})")
    add_peak_arguments(parser)
    parser.add_argument("--drop-scores", action="store_true", help="leave scores and raw_scores out of the output")
    parser.add_argument("--out", required=True, help="output JSONL ('-' for stdout)")
    parser.set_defaults(func=run)


def add_peak_arguments(parser) -> None:
    group = parser.add_argument_group("peak parameters (docs/METHOD.md, section Peaks)")
    group.add_argument(
        "--kernel-size",
        type=int,
        default=PAPER.kernel_size,
        help=f"smoothing window in tokens (default {PAPER.kernel_size})",
    )
    group.add_argument("--sigma", type=float, default=PAPER.sigma, help=f"Gaussian sigma (default {PAPER.sigma:g})")
    group.add_argument("--lower", type=float, default=PAPER.lower, help=f"lower threshold (default {PAPER.lower:g})")
    group.add_argument("--upper", type=float, default=PAPER.upper, help=f"upper threshold (default {PAPER.upper:g})")
    group.add_argument("--strict", action="store_true", help="use > instead of >= (the reference code)")
    group.add_argument(
        "--no-trim",
        dest="trim",
        action="store_false",
        help="keep punctuation at peak edges and punctuation-only peaks (the reference code)",
    )


def peak_params(args) -> PeakParams:
    return PeakParams(
        kernel_size=args.kernel_size,
        sigma=args.sigma,
        lower=args.lower,
        upper=args.upper,
        strict=args.strict,
        trim=args.trim,
    )


def run(args) -> int:
    try:
        params = peak_params(args)
        notes = load_notes(args.notes)
        records = progress(read_jsonl(args.relevance), "peaks")
        count = write_jsonl(args.out, _with_peaks(records, args.relevance, notes, params, args.drop_scores))
    except (JsonlError, ValueError, OSError) as exc:
        return fail(exc)
    print(f"peaks: {count} records written to {args.out}", file=sys.stderr)
    return 0


def _with_peaks(records, path, notes, params, drop_scores):
    while batch := list(islice(records, BATCH)):
        parsed = [parse_relevance(path, line_no, obj, notes) for line_no, obj in batch]
        all_peaks = peaks_of_arrays(
            [(None, k, None) for k in range(len(parsed))],
            [(offsets, scores) for _, offsets, scores in parsed],
            {k: text for k, (text, _, _) in enumerate(parsed)},
            params,
        )
        for (_, obj), peaks in zip(batch, all_peaks):
            obj["peaks"] = [list(s) for s in peaks.word_spans]
            obj["peak_chars"] = [list(c) for c in peaks.char_spans]
            obj["peak_params"] = params.to_dict()
            if drop_scores:
                obj.pop("scores", None)
                obj.pop("raw_scores", None)
            yield obj


# ---------------------------------------------------------------- shared by the commands


def fail(exc: Exception) -> int:
    message = str(exc) if not isinstance(exc, OSError) else f"{exc.filename or ''}: {exc.strerror or exc}"
    print(f"error: {message}", file=sys.stderr)
    return 2


def progress(iterable, what: str):
    """An iterator with tqdm progress on stderr, silent when stderr is not a terminal. (The
    iterator, not the tqdm object: a tqdm object iterated again, e.g. by successive islice
    calls, starts a new pass over its iterable, and a disabled one stops early.)"""
    return iter(tqdm(iterable, desc=what, unit=" lines", file=sys.stderr, disable=None, mininterval=1.0))


def note_id_of(path, line_no, obj, key) -> str:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise JsonlError(path, line_no, f"'{key}' must be a non-empty string or an integer, got {value!r}")
    return str(value)


def spans_of(path, line_no, value, what: str, limit: int) -> list[tuple[int, int]]:
    """A list of [start, end) integer pairs with 0 <= start <= end <= limit."""
    return [tuple(pair) for pair in span_array(path, line_no, value, what, limit).tolist()]


def span_array(path, line_no, value, what: str, limit: int) -> np.ndarray:
    """`spans_of` as an int64 array of shape (n, 2), checked with numpy (fast path)."""
    if not isinstance(value, list):
        raise JsonlError(path, line_no, f"'{what}' must be a list of [start, end] pairs")
    if not value:
        return np.zeros((0, 2), np.int64)
    try:
        array = np.array(value)
    except (ValueError, OverflowError):
        array = None
    if array is None or array.ndim != 2 or array.shape[1] != 2 or array.dtype.kind not in "iu":
        _find_bad_pair(path, line_no, value, what)
        raise JsonlError(path, line_no, f"'{what}' must be a list of [start, end] integer pairs")
    bad = np.flatnonzero((array[:, 0] < 0) | (array[:, 0] > array[:, 1]) | (array[:, 1] > limit))
    if bad.size:
        k = int(bad[0])
        raise JsonlError(path, line_no, f"'{what}'[{k}] = {value[k]} is outside 0..{limit}")
    return array.astype(np.int64, copy=False)


def _find_bad_pair(path, line_no, value, what):
    for k, pair in enumerate(value):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
        ):
            raise JsonlError(path, line_no, f"'{what}'[{k}] must be a pair of integers, got {pair!r}")


def load_notes(path) -> dict[str, dict]:
    """{id: {"text": str, "evidence": {task: [(start, end), ...]}}} from notes JSONL."""
    notes: dict[str, dict] = {}
    for line_no, obj in read_jsonl(path):
        note_id = note_id_of(path, line_no, obj, "id")
        text = obj.get("text")
        if not isinstance(text, str):
            raise JsonlError(path, line_no, f"note {note_id!r}: 'text' must be a string")
        if note_id in notes:
            raise JsonlError(path, line_no, f"note id {note_id!r} appears twice")
        evidence = obj.get("evidence") or {}
        if not isinstance(evidence, dict):
            raise JsonlError(path, line_no, "'evidence' must be an object {task: [[start, end], ...]}")
        notes[note_id] = {
            "text": text,
            "evidence": {str(t): spans_of(path, line_no, s, f"evidence.{t}", len(text)) for t, s in evidence.items()},
        }
    return notes


def parse_relevance(path, line_no, obj, notes) -> tuple[str, np.ndarray, np.ndarray]:
    """(note text, offsets (n, 2), scores (n,)) of one relevance record, validated."""
    note_id = note_id_of(path, line_no, obj, "note_id")
    if not isinstance(obj.get("task"), str):
        raise JsonlError(path, line_no, "'task' must be a string")
    note = notes.get(note_id)
    if note is None:
        raise JsonlError(path, line_no, f"note {note_id!r} is not in the notes file")
    text = note["text"]
    offsets = span_array(path, line_no, obj.get("offsets"), "offsets", len(text))
    scores = obj.get("scores")
    array = None
    if isinstance(scores, list):
        try:
            array = np.array(scores, dtype=None if scores else np.float64)
        except (ValueError, OverflowError):
            pass
    if array is None or array.ndim != 1 or array.dtype.kind not in "iuf":
        raise JsonlError(path, line_no, "'scores' must be a list of numbers")
    if len(array) != len(offsets):
        raise JsonlError(path, line_no, f"{len(array)} scores for {len(offsets)} offsets")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise JsonlError(path, line_no, f"scores[{bad[0]}] is {scores[bad[0]]} (NaN or infinite)")
    return text, offsets, array.astype(np.float64, copy=False)
