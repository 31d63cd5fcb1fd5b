"""`python -m ml faithfulness`: how much hiding a map's top tokens changes the prediction (no gold).

Reads notes JSONL as `python -m ml relevance` does (id, text, optional "tasks"), draws --pairs
(note, task) pairs (seeded), computes each --method's map with ml.relevance and scores it with
ml.faithfulness: comprehensiveness and sufficiency at each fraction and their AOPC, deletion and
insertion curves, the random baseline (--random-draws random rankings a pair, their mean), the
paired difference method - random on the same pair, each with a 95% bootstrap CI over pairs, and
the forward passes used. Prints one JSON object ("pairs" only with --per-pair; "verdicts": per
method and measure whether it beats the random rankings, from the paired difference's CI, or why
there is no verdict: fewer than --min-pairs pairs or an interval of zero width), then with --table
the same as a markdown table.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ml.commands.relevance import read_notes, read_tasks
from ml.faithfulness import (
    FRACTIONS,
    MIN_PAIRS,
    NEUTRAL,
    QUANTITIES,
    RANDOM_DRAWS,
    FaithfulnessConfig,
    markdown,
    verdicts,
)
from ml.relevance import DTYPES, EXPLAIN, METHODS, NORMALISE, TRUNCATE, ConfigError, RelevanceConfig
from ml.relevance.methods import DEFAULT as DEFAULT_METHOD


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "faithfulness", help="faithfulness of relevance maps (AOPC, deletion/insertion)", description=__doc__
    )
    p.add_argument("--notes", required=True, help="notes JSONL (id, text, optional tasks)")
    p.add_argument("--model", default="smollm2-135m-instruct", help="registry name, model folder or cached hub id")
    p.add_argument("--model-dir", default=None, help="where registry models live (default: $MODEL_DIR or var/models)")
    p.add_argument("--task", action="append", default=[], help="task description s_T (repeatable)")
    p.add_argument("--tasks-file", help="file with one task description per line")
    p.add_argument(
        "--method", action="append", choices=METHODS, default=None, help="repeatable (default attnlrp); compared"
    )
    p.add_argument("--explain", choices=[e for e in EXPLAIN if e != "contrastive"], default="next")
    p.add_argument("--template", default="en")
    p.add_argument("--normalise", choices=NORMALISE, default="abs", help="abs ranks |r|; clip ranks positive r")
    p.add_argument("--truncate", choices=TRUNCATE, default="right")
    p.add_argument("--max-note-tokens", type=int, default=None)
    p.add_argument("--pairs", type=int, default=100, help="(note, task) pairs drawn (default 100)")
    p.add_argument("--seed", type=int, default=0, help="pair draw, random rankings and bootstrap (default 0)")
    p.add_argument(
        "--random-draws",
        type=int,
        default=RANDOM_DRAWS,
        help="random rankings a pair, each scored at every fraction and kind; the pair's random score is "
        "their mean (default %(default)s; 2 x fractions forward passes each)",
    )
    p.add_argument(
        "--min-pairs",
        type=int,
        default=MIN_PAIRS,
        help="fewer pairs give no verdict (default %(default)s)",
    )
    p.add_argument("--fractions", default=",".join(map(str, FRACTIONS)), help="comma-separated (default %(default)s)")
    p.add_argument("--neutral", choices=NEUTRAL, default="pad", help="replacement token (default pad)")
    p.add_argument("--quantity", choices=QUANTITIES, default="logprob")
    p.add_argument("--n-resamples", type=int, default=1000)
    p.add_argument("--batch-size", type=int, default=None, help="prompts per relevance pass (default: auto)")
    p.add_argument("--per-pair", action="store_true", help="include every pair's values")
    p.add_argument("--table", action="store_true", help="after the JSON, the summary as a markdown table")
    p.add_argument(
        "--resume",
        metavar="FILE",
        default=None,
        help="checkpoint JSONL (created when missing): each note's maps and each pair's scores are appended "
        "as they finish, what it holds is skipped, and the JSON is computed from it; a killed run loses at "
        "most the pair in progress. Refused when it belongs to a run with other settings",
    )
    p.add_argument("--device", default=None)
    p.add_argument("--dtype", default=None, choices=[d for d in DTYPES if d != "auto"])
    p.add_argument("--allow-download", action="store_true")
    p.set_defaults(func=run)


def draw_pairs(notes: list[dict], tasks: list[str], n: int, seed: int) -> list[tuple[dict, str]]:
    """Every (note, task) pair (a note's own tasks replace the given ones), then n drawn
    without replacement (seeded), in file order."""
    pairs = []
    for note in notes:
        if not note["text"].strip():
            continue
        for task in note["tasks"] if note["tasks"] is not None else tasks:
            pairs.append((note, task))
    if not pairs:
        raise SystemExit("no (note, task) pair: give --task, --tasks-file or notes with tasks")
    if n < len(pairs):
        chosen = np.sort(np.random.default_rng(seed).choice(len(pairs), size=n, replace=False))
        pairs = [pairs[i] for i in chosen]
    return pairs


def run(args) -> int:
    from ml.faithfulness import faithfulness
    from ml.models import load_model, pick_device, preferred_dtype

    try:
        relevance = RelevanceConfig(
            method=(args.method or [DEFAULT_METHOD])[0],
            explain=args.explain,
            normalise=args.normalise,
            template=args.template,
            truncate=args.truncate,
            max_note_tokens=args.max_note_tokens,
            dtype=args.dtype or "auto",
        )
        config = FaithfulnessConfig(
            fractions=tuple(float(f) for f in args.fractions.split(",") if f.strip()),
            neutral=args.neutral,
            quantity=args.quantity,
            seed=args.seed,
            n_resamples=args.n_resamples,
            random_draws=args.random_draws,
        )
    except ConfigError as exc:
        print(f"--{exc.field.replace('_', '-')}: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"faithfulness: {exc}", file=sys.stderr)
        return 2
    pairs = draw_pairs(read_notes(args.notes), read_tasks(args), args.pairs, args.seed)
    device = pick_device(args.device)
    loaded = load_model(
        args.model,
        model_dir=args.model_dir,
        device=device,
        dtype=args.dtype or preferred_dtype(device),
        allow_download=args.allow_download,
    )
    methods = list(dict.fromkeys(args.method or [DEFAULT_METHOD]))
    texts, keys = [n["text"] for n, _ in pairs], [(n["id"], t) for n, t in pairs]
    checkpoint = None
    if args.resume:
        from dataclasses import asdict

        from ml.faithfulness_checkpoint import Checkpoint, CheckpointMismatch, notes_digest

        settings = asdict(config)
        settings.pop("n_resamples")  # the summary's, recomputed from the records
        settings.pop("confidence")
        header = {
            "model": loaded.label,
            "methods": methods,
            "relevance": {k: v for k, v in relevance.to_dict().items() if k != "method"},
            "faithfulness": settings,
            "pairs": [list(k) for k in keys],
            "notes_sha256": notes_digest(texts),
        }
        try:
            checkpoint = Checkpoint(args.resume, header)
        except (CheckpointMismatch, ValueError) as exc:
            print(f"--resume: {exc}", file=sys.stderr)
            return 2
    result = faithfulness(
        loaded,
        texts,
        [t for _, t in pairs],
        keys,
        methods,
        relevance,
        config,
        batch_size=args.batch_size,
        checkpoint=checkpoint,
        progress=(lambda line: print(f"faithfulness: {line}", file=sys.stderr, flush=True)) if checkpoint else None,
    ).as_dict()
    if not args.per_pair:
        result.pop("pairs")
    result["model"] = loaded.label
    result["relevance_config"] = {m: {**relevance.to_dict(), "method": m} for m in methods}
    result["verdicts"] = verdicts(result["summary"], min_pairs=args.min_pairs)
    print(json.dumps(result, allow_nan=True))
    if args.table:
        print()
        print(markdown(result["summary"], min_pairs=args.min_pairs))
    return 0
