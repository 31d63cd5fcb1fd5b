"""E3C layer 1 (English): how well AttnLRP, attention and gradient x input localise entities.

For each document and entity type, the gold evidence is every entity span of that type in
the document and the task description s_T is a short name of the type (TYPE_TASKS). The
score is ml.metrics.relevance_mass_ratio: relevance mass on gold tokens divided by their
share of tokens (1.0 = uniform). Prints a markdown table: method -> mean ratio, n pairs,
time. Reads ../shared/data/e3c only when it exists (it is not part of the product).

    python -m benchmarks e3c-localisation [--docs 24] [--types CLINENTITY,...]

Methods that need an unpatched process (attention, grad_input) run before AttnLRP, which
patches this process with lxt.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from pathlib import Path

from ml.relevance import METHODS
from ml.relevance.methods import run_order

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "e3c" / "english_layer1_train.jsonl"
TYPE_TASKS = {
    "CLINENTITY": "clinical finding",
    "BODYPART": "body part",
    "EVENT": "clinical event",
    "ACTOR": "person",
    "TIMEX3": "time expression",
    "RML": "test result",
}
DEFAULT_TYPES = "CLINENTITY,BODYPART,EVENT,ACTOR,TIMEX3"
ORDER = tuple(run_order(METHODS))  # AttnLRP last: it patches the process


def load_pairs(path: Path, n_docs: int | None, types: list[str], seed: int) -> tuple[list[dict], int]:
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    total = len(docs)
    if n_docs is not None and n_docs < total:
        docs = sorted(random.Random(seed).sample(docs, n_docs), key=lambda d: d["id"])
    pairs = []
    for doc in docs:
        for entity_type in types:
            spans = [(e["begin"], e["end"]) for e in doc["entities"] if e["type"] == entity_type]
            if spans:
                pairs.append(
                    {
                        "doc": doc["id"],
                        "type": entity_type,
                        "text": doc["text"],
                        "task": TYPE_TASKS[entity_type],
                        "gold": spans,
                    }
                )
    return pairs, total


def evaluate(
    loaded, pairs: list[dict], method: str, explain: str, max_note_tokens: int | None
) -> tuple[list[float], list[float], float]:
    """-> (mass ratio per pair, the same without the first note token, seconds).

    The first note token often takes sink-like relevance (a large |r| right after the
    chat header); the second ratio shows how much a method's score depends on it."""
    from ml.metrics import relevance_mass_ratio
    from ml.relevance import compute_relevance, normalise_scores

    started = time.perf_counter()
    results = compute_relevance(
        loaded,
        [p["text"] for p in pairs],
        [p["task"] for p in pairs],
        method=method,
        explain=explain,
        max_note_tokens=max_note_tokens,
    )
    seconds = time.perf_counter() - started
    ratios = [relevance_mass_ratio(r.scores, r.offsets, p["gold"]) for r, p in zip(results, pairs)]
    no_first = [
        relevance_mass_ratio(normalise_scores(r.raw_scores[1:]), r.offsets[1:], p["gold"])
        for r, p in zip(results, pairs)
    ]
    return ratios, no_first, seconds


def _mean(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--docs", type=int, default=24, help="documents to sample (default 24 of 36; 0 = all)")
    parser.add_argument("--types", default=DEFAULT_TYPES, help=f"entity types (known: {', '.join(TYPE_TASKS)})")
    parser.add_argument("--methods", default="attnlrp,attention,grad_input")
    parser.add_argument("--explain", default="next", help="next | max | target (see ml.relevance)")
    parser.add_argument("--max-note-tokens", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"E3C data not found at {args.data}; nothing to do", file=sys.stderr)
        return 0

    from ml.models import load_model, pick_device, preferred_dtype

    types = [t.strip() for t in args.types.split(",") if t.strip()]
    methods = [m for m in ORDER if m in args.methods.split(",")]
    pairs, total = load_pairs(args.data, args.docs or None, types, args.seed)
    device = pick_device(None)
    loaded = load_model(args.model, model_dir=args.model_dir, device=device, dtype=preferred_dtype(device))
    n_docs = len({p["doc"] for p in pairs})
    print(
        f"E3C English layer 1: {n_docs} of {total} documents (seed {args.seed}), types {', '.join(types)}, "
        f"{len(pairs)} (document, type) pairs; model {loaded.label} {str(loaded.dtype).removeprefix('torch.')} "
        f"on {loaded.device}; explain={args.explain}; notes cut to {args.max_note_tokens} tokens\n",
        file=sys.stderr,
    )

    rows, per_type = [], {}
    for method in methods:
        ratios, no_first, seconds = evaluate(loaded, pairs, method, args.explain, args.max_note_tokens)
        defined = [r for r in ratios if not math.isnan(r)]
        rows.append(
            (
                method,
                _mean(ratios),
                statistics.median(defined) if defined else math.nan,
                sum(r > 1 for r in defined) / max(len(defined), 1),
                _mean(no_first),
                len(defined),
                seconds,
            )
        )
        for p, r in zip(pairs, ratios):
            per_type.setdefault((method, p["type"]), []).append(r)
        print(f"  {method}: {seconds:.0f} s", file=sys.stderr)

    print(
        "| method | mean mass ratio | median | pairs > 1 | mean, first note token excluded | n pairs | time (s) "
        "| s / prompt |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for method, mean, median, above, no_first, n, seconds in sorted(rows, key=lambda r: -r[1]):
        print(
            f"| {method} | {mean:.3f} | {median:.3f} | {above:.0%} | {no_first:.3f} | {n} | {seconds:.0f} "
            f"| {seconds / len(pairs):.2f} |"
        )
    print("\n| method | " + " | ".join(f"{t} ({TYPE_TASKS[t]})" for t in types) + " |")
    print("| --- |" + " --- |" * len(types))
    for method in methods:
        print(f"| {method} | " + " | ".join(f"{_mean(per_type.get((method, t), [])):.3f}" for t in types) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
