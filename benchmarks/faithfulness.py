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

    python -m benchmarks faithfulness --per-method --pairs 2     # E3C English, every method

--per-method: what one pair of the verdict table costs, per method, batched (the product path)
against unbatched (one prompt row per forward pass: IG's and occlusion's `rows` set to 1,
occlusion's copies whole, without its prefix cache, and the scorer's `max_rows` to 1), in this
process, on the first --pairs (note, task) pairs of --notes
(default ../shared/data's E3C English layer 1, tasks --task, default "heart rate"). Per method:
the map's CPU seconds a pair (this process's, one thread: what an idle core would take; the wall
time, longer on a shared machine, is reported beside) and its forward passes, and the
faithfulness rows' seconds (its 2 x fractions rows; the full row and the random draws' rows are
shared by the methods and reported apart); the largest difference batched - unbatched (maps and
F), with the magnitudes it is relative to; and the table's estimate: seconds a pair for all the
methods and 100 pairs' hours on one core, per explain variant. AttnLRP runs last (it patches the process).
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
E3C = ROOT.parent / "shared" / "data" / "e3c" / "english_layer1_train.jsonl"


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
    parser.add_argument("--per-method", action="store_true", help="every method on E3C pairs, batched vs not")
    parser.add_argument("--notes", default=str(E3C), help="notes JSONL for --per-method (default E3C English)")
    parser.add_argument("--task", action="append", default=None, help="--per-method tasks (default heart rate)")
    parser.add_argument("--methods", default=None, help="--per-method: comma-separated (default every method)")
    args = parser.parse_args(argv)
    if args.per_method:
        return per_method(args)

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


def per_method(args) -> int:
    """--per-method (module doc)."""
    import numpy as np
    import torch

    from ml.commands.relevance import read_notes
    from ml.faithfulness import (
        PASSES_PER_PAIR,
        FaithfulnessConfig,
        ModelScorer,
        PairInput,
        evaluate_pair,
        neutral_token_id,
    )
    from ml.models import load_model
    from ml.relevance import METHODS, RelevanceConfig, compute_relevance
    from ml.relevance.methods import get, run_order

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, model_dir=args.model_dir, device="cpu", dtype=torch.float32)
    notes = read_notes(args.notes)
    tasks = args.task or ["heart rate"]
    chosen = [(n, t) for n in notes for t in tasks][: args.pairs]
    methods = run_order(args.methods.split(",") if args.methods else METHODS)
    config = FaithfulnessConfig(seed=args.seed)
    relevance = RelevanceConfig(explain=args.explain, max_note_tokens=args.max_note_tokens)
    neutral = neutral_token_id(loaded.tokenizer, config.neutral)
    passes: list[int] = []
    hook = loaded.model.register_forward_hook(
        lambda _m, _a, kwargs, _o: passes.append(len(kwargs.get("input_ids", kwargs.get("inputs_embeds")))),
        with_kwargs=True,
    )

    spent = {"wall": 0.0, "cpu": 0.0}

    def timed(fn, *fn_args):
        """fn's output, its CPU seconds (this process, one thread: what it would take on an idle
        core, give or take the cache another process shares) and its forward rows."""
        passes.clear()
        wall, started = time.perf_counter(), time.process_time()
        out = fn(*fn_args)
        seconds = time.process_time() - started
        spent["wall"] += time.perf_counter() - wall
        spent["cpu"] += seconds
        return out, seconds, sum(passes)

    out_methods: dict = {}
    maps: dict[str, list] = {}
    texts, task_list = [n["text"] for n, _ in chosen], [t for _, t in chosen]
    for name in methods:
        method, cfg = get(name), RelevanceConfig(**{**relevance.to_dict(), "method": name})
        results, batched_s, batched_passes = timed(compute_relevance, loaded, texts, task_list, cfg)
        row = {"map_seconds_per_pair": round(batched_s / len(chosen), 3), "map_forward_rows": batched_passes}
        if hasattr(method, "rows"):  # IG and occlusion batch their rows: the same with one row a pass
            saved = method.rows, getattr(method, "share_prefix", None)
            method.rows = 1
            if saved[1] is not None:  # occlusion: whole copies, no prefix cache
                method.share_prefix = False
            try:
                plain, plain_s, _ = timed(compute_relevance, loaded, texts, task_list, cfg)
            finally:
                method.rows = saved[0]
                if saved[1] is not None:
                    method.share_prefix = saved[1]
            raw = np.concatenate([r.raw_scores for r in results])
            diff = np.concatenate([r.raw_scores - q.raw_scores for r, q in zip(results, plain)])
            row["map_unbatched_seconds_per_pair"] = round(plain_s / len(chosen), 3)
            row["map_largest_difference"] = float(np.abs(diff).max())
            row["map_largest_magnitude"] = float(np.abs(raw).max())
        else:
            row["map_unbatched_seconds_per_pair"] = row["map_seconds_per_pair"]  # one prompt, one pass
        maps[name] = results
        out_methods[name] = row

    rows_batched = rows_plain = n_rows = 0.0
    f_diff, f_scale = 0.0, 0.0
    for i, (note, task) in enumerate(chosen):
        scores = {m: np.asarray(maps[m][i].scores, dtype=np.float64) for m in methods}
        values = {}
        for max_rows in (None, 1):  # None: the product's batch (rows_for_memory)
            scorer = ModelScorer(
                loaded, note["text"], task, relevance, neutral_id=neutral, quantity=config.quantity, max_rows=max_rows
            )
            (record, rows, _), seconds, _ = timed(
                evaluate_pair, PairInput((note["id"], task), scorer, scores), methods, config
            )
            values[max_rows] = record
            if max_rows is None:
                rows_batched, n_rows, batch_rows = rows_batched + seconds, n_rows + rows, scorer.max_rows
            else:
                rows_plain += seconds
        a, b = values[None], values[1]
        for m in methods:
            for kind in ("deletion", "insertion"):
                f_diff = max(f_diff, float(np.abs(np.subtract(a["methods"][m][kind], b["methods"][m][kind])).max()))
        f_scale = max(f_scale, abs(a["full"]))
    hook.remove()
    per_row = {"batched": rows_batched / n_rows, "unbatched": rows_plain / n_rows}
    m_rows = 2 * len(config.fractions)
    for name in methods:
        for label, key in (("batched", "map_seconds_per_pair"), ("unbatched", "map_unbatched_seconds_per_pair")):
            out_methods[name][f"rows_seconds_per_pair_{label}"] = round(m_rows * per_row[label], 3)
            out_methods[name][f"seconds_per_pair_{label}"] = round(out_methods[name][key] + m_rows * per_row[label], 3)
    shared_rows = 1 + m_rows * config.random_draws
    table = {}
    for label in ("batched", "unbatched"):
        pair_s = sum(out_methods[m][f"seconds_per_pair_{label}"] for m in methods) + shared_rows * per_row[label]
        table[label] = {"seconds_per_pair": round(pair_s, 1), "hours_for_100_pairs": round(100 * pair_s / 3600, 2)}
    out = {
        "settings": {k: v for k, v in vars(args).items() if k != "func"},
        "model": loaded.label,
        "pairs": [[n["id"], t] for n, t in chosen],
        "prompt_tokens": [
            len(ModelScorer(loaded, n["text"], t, relevance, neutral_id=neutral).enc.input_ids) for n, t in chosen
        ],
        "methods": out_methods,
        "faithfulness_rows": {
            "rows_per_pair_with_these_methods": 1 + m_rows * (len(methods) + config.random_draws),
            "rows_per_pair_one_method": PASSES_PER_PAIR,
            "seconds_per_row_batched": round(per_row["batched"], 4),
            "seconds_per_row_unbatched": round(per_row["unbatched"], 4),
            "rows_per_forward_call_batched": batch_rows,
            "shared_rows_per_pair": shared_rows,
            "largest_F_difference": f_diff,
            "largest_F_magnitude": f_scale,
        },
        "table_estimate_per_explain_variant": table,
        "seconds": "CPU seconds of this process (one thread), the idle-core figure; wall below",
        "timed_wall_seconds": round(spent["wall"], 1),
        "timed_cpu_seconds": round(spent["cpu"], 1),
        "machine": describe(),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
