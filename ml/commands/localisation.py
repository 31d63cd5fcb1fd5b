"""`python -m ml localisation`: how well relevance finds annotated evidence, against chance.

For each relevance record whose note has gold evidence spans for its task (notes JSONL with
"evidence": {task: [[start, end], ...]}, and/or an annotations JSONL `--annotations`, lines
{"note_id", "task", "evidence": [[start, end], ...], ...} as `python -m ml synth` writes them):
the token ROC AUC of the scores against the gold tokens, the relevance mass ratio (1.0 =
uniform) and the token TP/FP/FN of the record's peaks (the product's peak rule: runs, words,
trimming). Aggregated per group of records (default: per model, method and explain variant) by
`ml.localisation`: mean AUC and mean mass ratio over the pairs where defined, micro peak P/R/F1,
each with a 95% percentile bootstrap CI over pairs; the uniform and random baselines on the same
pairs; and the recommended group (the highest AUC whose CI beats the random baseline's).
Prints one JSON object, then the same as a markdown table. Records without a field of
--group-by are grouped under null.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
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
from ml.localisation import CONFIDENCE, MIN_PAIRS, N_RESAMPLES, Evaluation, Pair, label, nan_to_none, peak_rule

BATCH = 4096
DEFAULT_GROUP_BY = "model,method,explain,config_key"  # config_key: records of two configurations never mix


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "localisation", help="relevance and peaks against gold evidence", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--relevance", required=True, help="relevance JSONL")
    parser.add_argument("--gold", required=True, help="notes JSONL (text, optional 'evidence' {task: [[s, e], ...]})")
    parser.add_argument("--annotations", help="annotations JSONL {note_id, task, evidence: [[s, e], ...]} to add")
    parser.add_argument(
        "--group-by",
        default=DEFAULT_GROUP_BY,
        help=f"comma-separated record fields to aggregate by (default {DEFAULT_GROUP_BY})",
    )
    parser.add_argument(
        "--n-resamples", type=int, default=N_RESAMPLES, help=f"bootstrap resamples (default {N_RESAMPLES})"
    )
    parser.add_argument("--confidence", type=float, default=CONFIDENCE, help=f"CI level (default {CONFIDENCE})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the random baseline (default 0)")
    parser.add_argument(
        "--min-pairs",
        type=int,
        default=MIN_PAIRS,
        help=f"pairs of defined AUC a group needs to be recommended (default {MIN_PAIRS})",
    )
    add_peak_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    try:
        params = peak_params(args)
        keys = [k.strip() for k in args.group_by.split(",") if k.strip()]
        notes = load_notes(args.gold)
        if args.annotations:
            add_annotations(notes, args.annotations)
        evaluation = Evaluation(
            peak_rule(params),
            seed=args.seed,
            n_resamples=args.n_resamples,
            confidence=args.confidence,
            min_pairs=args.min_pairs,
        )
        skipped = evaluate(read_jsonl(args.relevance), args.relevance, notes, keys, evaluation)
        result = evaluation.result()
    except (JsonlError, ValueError, OSError) as exc:
        return fail(exc)
    summary = {"peak_params": _plain_params(params), "group_by": keys, **result, "records_without_gold": skipped}
    print(json.dumps(nan_to_none(summary), indent=2))
    print()
    print(markdown(summary, keys))
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


def evaluate(records, path, notes, keys, evaluation: Evaluation) -> int:
    """Feed the records with gold evidence to `evaluation`, by group; returns how many had none."""
    skipped = 0
    records = progress(records, "localisation")
    while batch := list(islice(records, BATCH)):
        groups: dict[tuple, list[Pair]] = {}
        for line_no, obj in batch:
            text, offsets, scores = parse_relevance(path, line_no, obj, notes)
            gold = notes[str(obj["note_id"])]["evidence"].get(obj["task"])
            if not gold:
                skipped += 1
                continue
            if (scores < 0).any():
                raise JsonlError(path, line_no, "scores must be non-negative (the normalised |r| / max|r| scores)")
            key = tuple(_group_value(obj.get(k)) for k in keys)
            groups.setdefault(key, []).append(Pair(str(obj["note_id"]), obj["task"], text, offsets, scores, gold))
        for key, pairs in groups.items():
            evaluation.add(dict(zip(keys, key)), pairs)
    return skipped


def _group_value(value):
    return value if value is None or isinstance(value, (str, int, float, bool)) else json.dumps(value, sort_keys=True)


def markdown(summary: dict, keys) -> str:
    columns = keys or ["group"]
    head = [
        *columns,
        "pairs",
        "undefined",
        "AUC (95% CI)",
        "ΔAUC vs next, paired (95% CI; p)",
        "mass ratio (95% CI)",
        "peak P",
        "peak R",
        "peak F1 (95% CI)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    rows = [([_cell(g.get(k)) for k in keys] or ["all"], g) for g in summary["groups"]]
    rows += [
        ([f"{name} (baseline)", *[""] * (len(columns) - 1)], summary["baselines"][name])
        for name in ("uniform", "random")
    ]
    for cells, g in rows:
        cells = [
            *cells,
            g["n_pairs"],
            g["n_undefined"],
            _with_ci(g, "auc"),
            _paired(g.get("auc_vs_next")),
            _with_ci(g, "mass_ratio"),
            _fmt(g["peak_precision"]),
            _fmt(g["peak_recall"]),
            _with_ci(g, "peak_f1"),
        ]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    choice = summary["recommended"]["choice"]
    lines += ["", f"Recommended: {label(choice) if choice is not None else 'none'}. {summary['recommended']['reason']}"]
    return "\n".join(lines)


def _paired(diff: dict | None) -> str:
    if not diff:
        return ""
    low, high = diff["ci"]
    return f"{diff['diff']:+.3f} ({_fmt(low)}-{_fmt(high)}; p {_fmt(diff['p_value'])})"


def _with_ci(group: dict, name: str) -> str:
    low, high = group[f"{name}_ci"]
    return f"{_fmt(group[name])} ({_fmt(low)}-{_fmt(high)})"


def _cell(value) -> str:
    return "–" if value is None else str(value)


def _fmt(value) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def _plain_params(params):
    if is_dataclass(params):
        return asdict(params)
    return dict(params) if isinstance(params, Mapping) else params
