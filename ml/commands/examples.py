"""`python -m ml examples`: masked training examples from peaks.

Reads peaks JSONL (`python -m ml peaks` output: note_id, task, peaks, peak_chars) and the notes
JSONL, and writes one line per example: {"note_id", "tasks", "input", "label", "char_span",
"mode"}. Peaks lines should come grouped by note (all tasks of a note together), as the
relevance command writes them; otherwise examples of a note seen again are not merged with its
earlier ones (reported on stderr). A summary goes to stderr.
"""

from __future__ import annotations

import sys

from ml.commands.peaks import fail, load_notes, note_id_of, progress, spans_of
from ml.jsonl import JsonlError, read_jsonl, write_jsonl
from ml.masking import DEFAULT_MASK_TOKEN, BuildStats, Group, MaskingMode, PeakItem, build_examples


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "examples", help="build masked training examples from peaks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--peaks", required=True, help="peaks JSONL (from `python -m ml peaks`)")
    parser.add_argument("--notes", required=True, help="notes JSONL ({id, text, ...})")
    parser.add_argument(
        "--mode",
        choices=[m.value for m in MaskingMode],
        default=MaskingMode.DSM.value,
        help="dsm (default) or an ablation: random, one_peak, unmasked",
    )
    parser.add_argument("--mask-token", default=DEFAULT_MASK_TOKEN, help=f"default {DEFAULT_MASK_TOKEN!r}")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random ablation (default 0)")
    parser.add_argument("--out", required=True, help="output JSONL ('-' for stdout)")
    parser.set_defaults(func=run)


def run(args) -> int:
    stats = BuildStats()
    try:
        if not args.mask_token:
            raise ValueError("--mask-token must not be empty")
        notes = load_notes(args.notes)
        items = _items(progress(read_jsonl(args.peaks), "examples"), args.peaks, notes)
        examples = build_examples(items, mode=args.mode, mask_token=args.mask_token, seed=args.seed, stats=stats)
        write_jsonl(
            args.out,
            (
                {
                    "note_id": e.note_id,
                    "tasks": list(e.tasks),
                    "input": e.masked_text,
                    "label": e.label,
                    "char_span": list(e.char_span) if e.char_span else None,
                    "mode": e.mode,
                }
                for e in examples
            ),
        )
    except (JsonlError, ValueError, OSError) as exc:
        return fail(exc)
    print(
        f"examples: {stats.examples} written to {args.out} (mode {args.mode}); "
        f"notes kept: {stats.notes_kept} of {stats.notes}; pairs used: {stats.items_used} of {stats.items}; "
        f"duplicates removed: {stats.duplicates} ({stats.merged_across_tasks} merged across tasks, "
        f"{stats.dropped_duplicate_notes} repeating an earlier note)",
        file=sys.stderr,
    )
    if stats.notes_not_contiguous:
        shown = ", ".join(stats.notes_not_contiguous[:5])
        print(
            f"warning: {len(stats.notes_not_contiguous)} notes appear in separate runs of lines "
            f"(e.g. {shown}): group peaks lines by note to merge their tasks",
            file=sys.stderr,
        )
    return 0


def _items(records, path, notes):
    for line_no, obj in records:
        note_id = note_id_of(path, line_no, obj, "note_id")
        task = obj.get("task")
        if not isinstance(task, str):
            raise JsonlError(path, line_no, "'task' must be a string")
        note = notes.get(note_id)
        if note is None:
            raise JsonlError(path, line_no, f"note {note_id!r} is not in the notes file")
        text = note["text"]
        if "peak_chars" not in obj:
            raise JsonlError(path, line_no, "no 'peak_chars': run `python -m ml peaks` first")
        chars = spans_of(path, line_no, obj["peak_chars"], "peak_chars", len(text))
        tokens = obj.get("peaks")
        tokens = spans_of(path, line_no, tokens, "peaks", 10**12) if tokens is not None else [None] * len(chars)
        if len(tokens) != len(chars):
            raise JsonlError(path, line_no, f"{len(tokens)} peaks but {len(chars)} peak_chars")
        previous_end = 0
        for a, b in chars:
            if a >= b or a < previous_end:
                raise JsonlError(path, line_no, f"peak_chars must be sorted, non-empty and disjoint; see {[a, b]}")
            previous_end = b
        groups = tuple(Group(char_span=c, token_span=t) for c, t in zip(chars, tokens))
        yield PeakItem(note_id, task, text, groups)
