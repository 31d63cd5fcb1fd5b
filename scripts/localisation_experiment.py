"""Which relevance configuration localises real evidence best: every method x explain variant of
SmolLM2 on CodiEsp and E3C, scored by ml.localisation against uniform and random relevance.

Reads ../shared/data when it exists (it is not part of the product; nothing is written there):
* CodiEsp train + dev: the Spanish text (`text_es`, where the evidence offsets are valid) with the
  Spanish template ("es"); one task per frequent diagnosis code (--codes most frequent by number
  of documents with evidence), s_T = its English ICD-10 title (diagnosis_titles_en.json); gold =
  every evidence span of that code in the document.
* E3C English layer 1 train: one task per entity type (benchmarks.e3c_localisation.TYPE_TASKS,
  "clinical finding", "body part", ...), gold = every entity span of the type; English template.
Pairs are (document, task) with gold evidence within the first --max-note-tokens tokens of the
note (what the model reads: longer notes are cut there; pairs with all their evidence further on
cannot be scored and are counted, not computed); at most --max-pairs per dataset, drawn with --seed.

Configurations: methods attention, grad_input, attnlrp (in that order: AttnLRP patches this
process with lxt for good, gradient x input refuses a patched process) x explain variants
next, max, target, span, contrastive (contrastive costs up to two prompts a pair). No database:
maps are computed here and scored at once (per dataset: groups, baselines, recommendation).
Prints one JSON object, then a markdown table per dataset. --out also writes the JSON to a file.

Cost: each prompt ~0.5-1.3 s on this project's 2-core CPU (AttnLRP, SmolLM2-135M, bf16,
<= 512 note tokens), so a run is about pairs x 15 configurations x 1 s (x 1.2 for contrastive):
e.g. --max-pairs 40 on both datasets ~ 40 x 2 x 15 ~ 20-30 minutes. Bound it with --max-pairs,
--max-note-tokens, --methods and --explain.

    .venv/bin/python scripts/localisation_experiment.py --max-pairs 40 --out var/localisation.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from codiesp import read_jsonl  # noqa: E402  (scripts/)

from ml.relevance import METHODS  # noqa: E402
from ml.relevance.methods import run_order  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
ORDER = tuple(run_order(METHODS))  # AttnLRP last: it patches the process
EXPLAINS = ("next", "max", "target", "span", "contrastive")
BATCH = 16  # prompts per compute_relevance call (progress is printed after each)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="registry name or model folder")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--datasets", default="codiesp,e3c")
    parser.add_argument("--methods", default=",".join(ORDER))
    parser.add_argument("--explain", default=",".join(EXPLAINS))
    parser.add_argument("--max-pairs", type=int, default=40, help="(document, task) pairs per dataset; 0: all")
    parser.add_argument("--max-note-tokens", type=int, default=512, help="notes are cut to this many tokens")
    parser.add_argument(
        "--codes", type=int, default=20, help="CodiEsp: the most frequent diagnosis codes used as tasks"
    )
    parser.add_argument("--types", default="CLINENTITY,BODYPART,EVENT,ACTOR,TIMEX3", help="E3C entity types")
    parser.add_argument(
        "--dtype",
        default=None,
        help="float32 or bfloat16 (default: ml.models.preferred_dtype; plain grad_input is noisy in bf16)",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="torch threads")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--min-pairs", type=int, default=10, help="pairs a configuration needs to be recommended")
    parser.add_argument("--seed", type=int, default=0, help="draws the pairs, the bootstrap and the random baseline")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    return parser.parse_args(argv)


# ---------------------------------------------------------------- data


def codiesp_pairs(folder: Path, n_codes: int) -> list[dict]:
    """(document, diagnosis code) pairs of train + dev with the code's evidence spans on text_es."""
    titles = json.loads((folder / "diagnosis_titles_en.json").read_text(encoding="utf-8"))
    docs = [row for name in ("train.jsonl", "dev.jsonl") for row in read_jsonl(folder / name)]
    spans_of: list[dict[str, list[tuple[int, int]]]] = []
    counts: Counter = Counter()
    for doc in docs:
        spans: dict[str, list[tuple[int, int]]] = {}
        for entry in doc.get("evidence") or ():
            code = entry.get("code")
            if entry.get("type") != "DIAGNOSTICO" or code not in titles:
                continue
            for start, end in entry.get("spans") or ():
                if 0 <= start < end <= len(doc["text_es"]):
                    spans.setdefault(code, []).append((int(start), int(end)))
        spans_of.append(spans)
        counts.update(spans.keys())
    codes = [code for code, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n_codes]]
    return [
        {"note_id": doc["id"], "task": titles[code], "text": doc["text_es"], "gold": spans[code]}
        for doc, spans in zip(docs, spans_of)
        for code in codes
        if code in spans
    ]


def e3c_pairs(path: Path, types: list[str]) -> list[dict]:
    from benchmarks.e3c_localisation import load_pairs

    pairs, _ = load_pairs(path, None, types, 0)
    return [{"note_id": p["doc"], "task": p["task"], "text": p["text"], "gold": p["gold"]} for p in pairs]


def within_window(tokenizer, pairs: list[dict], max_note_tokens: int) -> list[dict]:
    """The pairs with some gold evidence in the note's first max_note_tokens tokens (the part the
    model reads: longer notes are cut there, as ml.relevance does). The others cannot be scored
    (no gold token), so they are not computed."""
    cut: dict[str, int] = {}
    for text in {p["text"] for p in pairs}:
        spans = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        cut[text] = spans[max_note_tokens - 1][1] if len(spans) > max_note_tokens else len(text)
    return [p for p in pairs if any(start < cut[p["text"]] for start, _ in p["gold"])]


def sample(pairs: list[dict], max_pairs: int, seed: int) -> list[dict]:
    if max_pairs and len(pairs) > max_pairs:
        pairs = random.Random(seed).sample(pairs, max_pairs)
    return sorted(pairs, key=lambda p: (str(p["note_id"]), p["task"]))


# ---------------------------------------------------------------- relevance and scores


def compute(loaded, pairs: list[dict], config, label: str) -> tuple[list, int, float]:
    """(ml.localisation pairs, pairs skipped, seconds) for one configuration."""
    from ml.localisation import Pair
    from ml.relevance import compute_relevance

    out, skipped, started = [], 0, time.perf_counter()
    for start in range(0, len(pairs), BATCH):
        batch = pairs[start : start + BATCH]
        try:
            results = compute_relevance(loaded, [p["text"] for p in batch], [p["task"] for p in batch], config)
        except ValueError:  # one bad prompt: try them one by one
            results = []
            for p in batch:
                try:
                    results += compute_relevance(loaded, [p["text"]], [p["task"]], config)
                except ValueError:
                    results.append(None)
        for p, r in zip(batch, results):
            if r is None:
                skipped += 1
                continue
            out.append(Pair(p["note_id"], p["task"], p["text"], r.offsets, r.scores, p["gold"]))
        done = min(start + BATCH, len(pairs))
        print(f"  {label}: {done}/{len(pairs)} ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return out, skipped, time.perf_counter() - started


def nan_to_none(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [nan_to_none(v) for v in value]
    return value


def main(argv=None) -> int:
    args = parse_args(argv)
    wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
    sources = {"codiesp": args.data / "codiesp", "e3c": args.data / "e3c" / "english_layer1_train.jsonl"}
    unknown = sorted(set(wanted) - set(sources))
    if unknown:
        raise SystemExit(f"unknown dataset(s) {', '.join(unknown)}; choose among codiesp, e3c")
    available = [d for d in wanted if sources[d].exists()]
    if not available:
        print(f"no development data under {args.data}; nothing to do", file=sys.stderr)
        return 0

    import torch

    from ml.commands.localisation import markdown
    from ml.localisation import Evaluation, peak_rule
    from ml.models import load_model, pick_device, preferred_dtype
    from ml.relevance import RelevanceConfig

    torch.set_num_threads(args.threads)
    methods = [m for m in ORDER if m in args.methods.split(",")]
    explains = [e for e in EXPLAINS if e in args.explain.split(",")]
    device = pick_device(None)
    loaded = load_model(
        args.model, model_dir=args.model_dir, device=device, dtype=args.dtype or preferred_dtype(device)
    )
    found = {}
    if "codiesp" in available:
        found["codiesp"] = ("es", codiesp_pairs(sources["codiesp"], args.codes))
    if "e3c" in available:
        found["e3c"] = ("en", e3c_pairs(sources["e3c"], [t.strip() for t in args.types.split(",") if t.strip()]))
    datasets, out_of_window = {}, {}
    for name, (template, pairs) in found.items():
        readable = within_window(loaded.tokenizer, pairs, args.max_note_tokens)
        out_of_window[name] = len(pairs) - len(readable)
        datasets[name] = (template, sample(readable, args.max_pairs, args.seed))
        print(
            f"{name}: {len(pairs)} pairs, {out_of_window[name]} with all their evidence past "
            f"{args.max_note_tokens} note tokens left out",
            file=sys.stderr,
        )
    n_prompts = sum(len(pairs) for _, pairs in datasets.values()) * len(methods) * len(explains)
    print(
        f"model {loaded.label} {str(loaded.dtype).removeprefix('torch.')} on {loaded.device}, {args.threads} threads; "
        + ", ".join(f"{name}: {len(pairs)} pairs ({template})" for name, (template, pairs) in datasets.items())
        + f"; {len(methods)} methods x {len(explains)} explain variants: about {n_prompts} prompts",
        file=sys.stderr,
        flush=True,
    )

    rule = peak_rule()
    evaluations = {
        name: Evaluation(rule, seed=args.seed, n_resamples=args.n_resamples, min_pairs=args.min_pairs)
        for name in datasets
    }
    seconds, skipped = {}, {}
    for method in methods:  # configurations outside, datasets inside: AttnLRP only once the others are done
        for explain in explains:
            for name, (template, pairs) in datasets.items():
                config = RelevanceConfig(
                    method=method, explain=explain, template=template, max_note_tokens=args.max_note_tokens
                )
                label = f"{name} {method} / {explain}"
                scored, n_skipped, took = compute(loaded, pairs, config, label)
                evaluations[name].add({"method": method, "explain": explain}, scored)
                seconds[label], skipped[label] = round(took, 1), n_skipped

    results = {name: evaluation.result() for name, evaluation in evaluations.items()}
    out = nan_to_none(
        {
            "settings": {
                "model": loaded.label,
                "dtype": str(loaded.dtype).removeprefix("torch."),
                "threads": args.threads,
                "max_pairs": args.max_pairs,
                "max_note_tokens": args.max_note_tokens,
                "codes": args.codes,
                "types": args.types,
                "seed": args.seed,
                "peak_params": "paper (ml.peaks.PAPER)",
            },
            "datasets": {
                name: {
                    "template": datasets[name][0],
                    "n_pairs": len(datasets[name][1]),
                    "pairs_out_of_window": out_of_window[name],
                    **result,
                }
                for name, result in results.items()
            },
            "seconds": seconds,
            "skipped": {label: n for label, n in skipped.items() if n},
        }
    )
    text = json.dumps(out, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    for name in results:
        print(f"\n### {name} ({out['datasets'][name]['n_pairs']} pairs, template {datasets[name][0]})\n")
        print(markdown(out["datasets"][name], ["method", "explain"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
