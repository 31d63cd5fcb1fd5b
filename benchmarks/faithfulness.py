"""Faithfulness's cost beside the map's: forward passes a pair and seconds, batched against the
plain loop.

    python -m benchmarks faithfulness                   # 100 pairs, SmolLM2, grad_input, next
    python -m benchmarks faithfulness --pairs 20 --method attnlrp --explain span

On --pairs (note, task) pairs of synthetic notes (ml.synthetic, seeded; no data needed), in this
process and on the same prompts: the relevance maps (ml.relevance.compute_relevance, the cost of
the map itself), then ml.faithfulness.evaluate on them (one batch of rows a pair: full prompt,
deletions, insertions, random row), counting the model's forward passes by a hook; then the
baseline, the same rows scored one prompt at a time (the plain loop: one forward pass a row, the
way a first implementation would). Prints one JSON object: passes a pair (the issue's budget is
12 beyond the map for one method), seconds of each, the ratio, and the machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe  # noqa: E402

TASKS = ("heart rate", "blood pressure", "body temperature", "diagnosis", "presence of pacemaker")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks faithfulness", description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--model", default="smollm2-135m-instruct", help="registry name or model folder")
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--method", default="grad_input")
    parser.add_argument("--explain", default="next", choices=("next", "max", "target", "span"))
    parser.add_argument("--max-note-tokens", type=int, default=192)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--baseline-pairs", type=int, default=10, help="pairs the plain loop scores (default 10)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from ml.faithfulness import FaithfulnessConfig, evaluate, model_pairs
    from ml.models import load_model
    from ml.relevance import RelevanceConfig, compute_relevance
    from ml.synthetic.generator import generate_notes

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, model_dir=args.model_dir, device="cpu", dtype=torch.float32)
    notes = [n.text for n in generate_notes(-(-args.pairs // len(TASKS)), seed=args.seed, max_words=200)]
    pair_notes = [notes[i // len(TASKS)] for i in range(args.pairs)]
    tasks = [TASKS[i % len(TASKS)] for i in range(args.pairs)]
    keys = [(f"n{i // len(TASKS)}", t) for i, t in enumerate(tasks)]
    relevance = RelevanceConfig(method=args.method, explain=args.explain, max_note_tokens=args.max_note_tokens)
    config = FaithfulnessConfig(seed=args.seed, n_resamples=200)

    started = time.perf_counter()
    maps = {args.method: compute_relevance(loaded, pair_notes, tasks, relevance)}
    map_s = time.perf_counter() - started
    pairs = model_pairs(loaded, pair_notes, tasks, keys, maps, relevance, config)
    rows: list[int] = []  # rows of each forward pass of the scorer
    hook = loaded.model.register_forward_hook(
        lambda _m, _a, kwargs, _o: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    try:
        started = time.perf_counter()
        result = evaluate(pairs, config)
        batched_s = time.perf_counter() - started
        passes = sum(rows)
    finally:
        hook.remove()

    # The baseline: the same rows, one prompt per forward pass, for the first --baseline-pairs pairs.
    n_base = min(args.baseline_pairs, args.pairs)
    replace_rows = []
    for pair in pairs[:n_base]:
        scorer = pair.scorer
        rng = np.random.default_rng(args.seed)
        n = scorer.n_tokens
        replace = np.zeros((passes // args.pairs, n), dtype=bool)
        for r in range(1, len(replace)):
            replace[r, rng.permutation(n)[: max(1, n * r // len(replace))]] = True
        replace_rows.append((scorer, replace))
    started = time.perf_counter()
    for scorer, replace in replace_rows:
        scorer(replace[:1])
        for row in replace[1:]:
            scorer(row[None, :])
    plain_s = (time.perf_counter() - started) / n_base * args.pairs
    started = time.perf_counter()
    for scorer, replace in replace_rows:
        scorer(replace)
    batched_same_rows_s = (time.perf_counter() - started) / n_base * args.pairs

    out = {
        "settings": vars(args),
        "model": loaded.label,
        "pairs": args.pairs,
        "map": {"seconds": round(map_s, 2), "seconds_per_pair": round(map_s / args.pairs, 4)},
        "faithfulness": {
            "seconds": round(batched_s, 2),
            "forward_passes": passes,
            "forward_passes_per_pair": passes / args.pairs,
            "reported_forward_passes": result.forward_passes,
            "seconds_per_pair": round(batched_s / args.pairs, 4),
            "cost_relative_to_map": round(batched_s / map_s, 2),
        },
        "baseline_plain_loop": {
            "pairs_timed": n_base,
            "seconds_extrapolated": round(plain_s, 2),
            "batched_same_rows_seconds_extrapolated": round(batched_same_rows_s, 2),
            "speedup_of_batching": round(plain_s / batched_same_rows_s, 2),
        },
        "machine": describe(),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
