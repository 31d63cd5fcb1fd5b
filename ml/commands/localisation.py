"""`python -m ml localisation`: how well relevance finds annotated evidence.

For each relevance record whose note has gold evidence spans for its task (notes JSONL with
"evidence": {task: [[start, end], ...]}): the relevance mass ratio on gold tokens (1.0 =
uniform) and the token precision / recall / F1 of its word-extended peaks against the gold
tokens. Evidence comes from the notes' "evidence" field and/or an annotations JSONL
(`--annotations`, lines {"note_id", "task", "evidence": [[start, end], ...], ...}, as
`python -m ml synth` writes them). Aggregated per group of records (by default per model and method): mean and median
mass ratio over the pairs where it is defined, micro-averaged P/R/F1 (token counts summed
over pairs). Prints one JSON object, then the same as a markdown table.
"""
from __future__ import annotations

import json
import math
import statistics
from itertools import islice

from ml.commands.peaks import (
    add_peak_arguments,
    fail,
    load_notes,
    note_id_of,
    parse_relevance,
    peak_params,
    progress,
    spans_of,
)
from ml.jsonl import JsonlError, read_jsonl
from ml.metrics import PRF, peak_token_prf, relevance_mass_ratio
from ml.peaks import extend_to_words, find_peaks_many

BATCH = 4096


def register(subparsers) -> None:
    parser = subparsers.add_parser("localisation", help="relevance and peaks against gold evidence",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--relevance", required=True, help="relevance JSONL")
    parser.add_argument("--gold", required=True, help="notes JSONL (text, optional 'evidence' {task: [[s, e], ...]})")
    parser.add_argument("--annotations", help="annotations JSONL {note_id, task, evidence: [[s, e], ...]} to add")
    parser.add_argument("--group-by", default="model,method",
                        help="comma-separated record fields to aggregate by (default model,method)")
    add_peak_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    try:
        params = peak_params(args)
        keys = [k.strip() for k in args.group_by.split(",") if k.strip()]
        notes = load_notes(args.gold)
        if args.annotations:
            add_annotations(notes, args.annotations)
        summary = evaluate(read_jsonl(args.relevance), args.relevance, notes, params, keys)
    except (JsonlError, ValueError, OSError) as exc:
        return fail(exc)
    summary = {"peak_params": params, "group_by": keys, **summary}
    print(json.dumps(_nan_to_none(summary), indent=2))
    print()
    print(markdown(summary["groups"], keys))
    return 0


def add_annotations(notes: dict, path) -> None:
    """Add the evidence spans of annotation lines to the notes' evidence."""
    for line_no, obj in read_jsonl(path):
        note_id = note_id_of(path, line_no, obj, "note_id")
        task = obj.get("task")
        if not isinstance(task, str):
            raise JsonlError(path, line_no, "'task' must be a string")
        if note_id not in notes:
            raise JsonlError(path, line_no, f"note {note_id!r} is not in the gold notes file")
        spans = spans_of(path, line_no, obj.get("evidence", []), "evidence", len(notes[note_id]["text"]))
        if spans:
            notes[note_id]["evidence"].setdefault(task, []).extend(spans)


def evaluate(records, path, notes, params, keys) -> dict:
    ratios: dict[tuple, list[float]] = {}
    prfs: dict[tuple, PRF] = {}
    skipped = 0
    records = progress(records, "localisation")
    while batch := list(islice(records, BATCH)):
        parsed = [parse_relevance(path, line_no, obj, notes) for line_no, obj in batch]
        all_peaks = find_peaks_many([scores for _, _, scores in parsed], **params)
        for (line_no, obj), (text, offsets, scores), spans in zip(batch, parsed, all_peaks):
            gold = notes[str(obj["note_id"])]["evidence"].get(obj["task"])
            if not gold:
                skipped += 1
                continue
            key = tuple(str(obj.get(k)) for k in keys)
            try:
                ratio = relevance_mass_ratio(scores, offsets, gold)
            except ValueError as exc:
                raise JsonlError(path, line_no, str(exc)) from None
            ratios.setdefault(key, []).append(ratio)
            prf = peak_token_prf(extend_to_words(spans, offsets, text), offsets, gold)
            prfs[key] = prfs.get(key, PRF(0, 0, 0)) + prf
    groups = []
    for key in sorted(ratios):
        defined = [r for r in ratios[key] if not math.isnan(r)]
        groups.append({
            **dict(zip(keys, key)),
            "n_pairs": len(ratios[key]),
            "n_undefined": len(ratios[key]) - len(defined),
            "mass_ratio_mean": statistics.fmean(defined) if defined else math.nan,
            "mass_ratio_median": statistics.median(defined) if defined else math.nan,
            "peaks": prfs[key].as_dict(),
        })
    return {"groups": groups, "records_without_gold": skipped}


def markdown(groups, keys) -> str:
    head = [*keys, "pairs", "undefined", "mass ratio mean", "mass ratio median", "peak P", "peak R", "peak F1"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in groups:
        cells = [*(g[k] for k in keys), g["n_pairs"], g["n_undefined"], _fmt(g["mass_ratio_mean"]),
                 _fmt(g["mass_ratio_median"]), _fmt(g["peaks"]["precision"]), _fmt(g["peaks"]["recall"]),
                 _fmt(g["peaks"]["f1"])]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines)


def _fmt(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def _nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value

