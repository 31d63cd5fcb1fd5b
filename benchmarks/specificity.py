"""Is a relevance configuration task-specific? Every task's map on every note, then ml.specificity.

    python -m benchmarks specificity --notes notes.jsonl --task "heart rate" --task "blood pressure"
    python -m benchmarks specificity                      # 12 synthetic notes x 3 tasks

For each note (JSONL: id, text; or --synthetic notes of ml.synthetic, seeded) the maps of every
--task (ml.relevance, --method and --explain), their peaks under the paper's thresholds
(ml.peaks, kernel 3, sigma 1, 0.2 / 0.4, word-extended), then ml.specificity.note_specificity:
the mean Spearman rank correlation of two tasks' maps of one note (1 = the same ranking), the
mean Jaccard of their peak characters, and the share of (note, task) pairs whose peaks are "the
same as for every other task" (what the review page warns about). The baseline in the same
process: the same statistics for maps whose scores are shuffled independently per task (what a
map unrelated to the task, and to the other tasks, gives). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe  # noqa: E402


def statistics(notes: list[dict], tasks: list[str], maps: list, rng=None) -> dict:
    """Specificity over notes; maps[i][j] is note i's map for task j. `rng`: shuffle scores first."""
    import numpy as np

    from ml.peaks import PeakParams, peaks_of_arrays
    from ml.specificity import TaskMap, note_specificity

    params = PeakParams()
    rho, jaccard, same, with_peaks = [], [], 0, 0
    for i, note in enumerate(notes):
        arrays = []
        for r in maps[i]:
            scores = np.asarray(r.scores, dtype=np.float32)
            arrays.append((np.asarray(r.offsets), rng.permutation(scores) if rng is not None else scores))
        keys = [(None, 0, j) for j in range(len(tasks))]
        peaks = peaks_of_arrays(keys, arrays, {0: note["text"]}, params)
        spec = note_specificity(
            [TaskMap(tasks[j], arrays[j][0], arrays[j][1], p.char_spans) for j, p in enumerate(peaks)]
        )
        rho += [p["spearman"] for p in spec.pairs if p["spearman"] is not None]
        jaccard += [p["jaccard"] for p in spec.pairs if p["jaccard"] is not None]
        same += sum(t.same_as_all for t in spec.tasks)
        with_peaks += sum(t.n_peaks > 0 for t in spec.tasks)
    return {
        "spearman_mean": float(np.mean(rho)) if rho else None,
        "peak_jaccard_mean": float(np.mean(jaccard)) if jaccard else None,
        "pairs_with_peaks": with_peaks,
        "same_as_every_other_task": same,
        "same_share": same / with_peaks if with_peaks else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks specificity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", help="notes JSONL (id, text); default: --synthetic notes")
    parser.add_argument("--synthetic", type=int, default=12, help="synthetic notes when no --notes (default 12)")
    parser.add_argument("--task", action="append", default=[], help="repeatable (default: 3 tasks)")
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--method", default="attnlrp")
    parser.add_argument("--explain", default="next")
    parser.add_argument("--max-note-tokens", type=int, default=192)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    from ml.models import load_model
    from ml.relevance import RelevanceConfig, compute_relevance

    torch.set_num_threads(args.threads)
    tasks = args.task or ["heart rate", "blood pressure", "diagnosis"]
    if args.notes:
        with open(args.notes, encoding="utf-8") as handle:
            notes = [json.loads(line) for line in handle if line.strip()]
    else:
        from ml.synthetic.generator import generate_notes

        notes = [{"id": n.id, "text": n.text} for n in generate_notes(args.synthetic, seed=args.seed, max_words=200)]
    loaded = load_model(args.model, model_dir=args.model_dir, device="cpu", dtype=torch.float32)
    config = RelevanceConfig(method=args.method, explain=args.explain, max_note_tokens=args.max_note_tokens)
    results = compute_relevance(
        loaded, [n["text"] for n in notes for _ in tasks], [t for _ in notes for t in tasks], config
    )
    maps = [results[i * len(tasks) : (i + 1) * len(tasks)] for i in range(len(notes))]
    out = {
        "settings": vars(args) | {"task": tasks},
        "notes": len(notes),
        "maps": len(results),
        "configuration": statistics(notes, tasks, maps),
        "baseline_shuffled_maps": statistics(notes, tasks, maps, rng=np.random.default_rng(args.seed)),
        "machine": describe(),
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
