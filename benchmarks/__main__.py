"""`python -m benchmarks NAME [options]`: run one benchmark; without NAME, list them.

Every benchmark prints one JSON object with its figures, the same work done the simple way in
the same process (the baseline its ratio is against), and the machine it ran on (CPU flags and
load average, benchmarks.machine), so a figure quoted in README can be re-run and checked.
`python -m benchmarks NAME --help` shows a benchmark's options.
"""

from __future__ import annotations

import importlib
import sys

# name -> (module, what it measures)
BENCHMARKS = {
    "ml": ("benchmarks.ml_core", "the ML core's targets: relevance, peaks, re-thresholding (make bench)"),
    "relevance": ("benchmarks.relevance", "relevance prompts/s: the product path against the naive lxt loop"),
    "faithfulness": ("benchmarks.faithfulness", "faithfulness: forward passes and seconds a pair, vs the plain loop"),
    "specificity": ("benchmarks.specificity", "task-specificity of a relevance configuration, against shuffled maps"),
    "features": ("benchmarks.features", "classification-head features: items/s"),
    "training": ("benchmarks.training", "DSM / SFT training steps: tokens/s"),
    "e3c-localisation": ("benchmarks.e3c_localisation", "relevance localisation on the E3C development data"),
    "e3c-xmi": ("benchmarks.e3c_xmi", "E3C's original XMI files read as gold evidence, checked against its JSONL"),
    "import": ("benchmarks.import_notes", "importing notes into PostgreSQL: notes/s and memory"),
    "datasets": ("benchmarks.dataset_builds", "dataset builds from stored maps: maps/s and memory"),
    "review": ("benchmarks.review_pages", "review pages' server time at corpus scale"),
    "review-report": (
        "benchmarks.review_report",
        "the review report's page and CSV from stored figures: p95, vs recomputing",
    ),
    "review-load": ("benchmarks.review_load", "N reviewers against gunicorn as compose runs it: decisions/s, p95"),
    "review-profile": ("benchmarks.review_profile", "the review loop's server CPU per answer, in process, profiled"),
    "long-note": ("benchmarks.long_note", "the review pages of one very long note"),
    "demo": ("benchmarks.demo", "relevance rate of the demo's model, to size the demo's first job"),
    "map-storage": ("benchmarks.map_storage", "bytes a token of stored relevance maps, all in, in PostgreSQL"),
    "lifecycle": ("benchmarks.lifecycle", "claims, heartbeats and sweeps of long work on PostgreSQL"),
    "deid": ("benchmarks.deid", "de-identification: recall and precision per type, notes/s, maps before/after"),
    "api-pages": ("benchmarks.api_pages", "every page of a corpus's notes by API: cursor against offset and count"),
    "scale": ("benchmarks.scale", "the app over a large corpus: import, map storage, pages, planning, builds"),
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "list"):  # peaks and re-thresholding run within "ml"
        print(__doc__.strip().splitlines()[0] + "\n")
        for name, (_, what) in BENCHMARKS.items():
            print(f"  {name:<17} {what}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in BENCHMARKS:
        print(f"no benchmark {name!r}; the benchmarks are: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(BENCHMARKS[name][0])
    sys.argv = [f"python -m benchmarks {name}", *rest]
    result = module.main(rest) if _takes_argv(module.main) else module.main()
    return result if isinstance(result, int) else 0


def _takes_argv(function) -> bool:
    import inspect

    return bool(inspect.signature(function).parameters)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
