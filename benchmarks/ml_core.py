"""`python -m benchmarks ml [--skip-relevance] [--quick]`: the ML core's speed targets, one JSON object.

Sections: "relevance" (benchmarks.relevance.run(), when that module exists), "peaks"
(find_peaks_many vs Python loops), "rethreshold" (one 1,000-token note), and "targets" with
pass/fail flags: relevance >= 2x, peaks >= 20x the plain Python loop, rethreshold < 5 ms.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys

from benchmarks import peaks as peaks_benchmark
from benchmarks.machine import describe

TARGETS = {"relevance_speedup": 2.0, "peaks_speedup": 20.0, "rethreshold_ms": 5.0}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks ml", description=__doc__.splitlines()[0])
    parser.add_argument("--skip-relevance", action="store_true", help="do not run the relevance benchmark")
    parser.add_argument("--quick", action="store_true", help="smaller runs (10,000 maps; relevance quick mode)")
    args = parser.parse_args(argv)

    report = {"relevance": _relevance(args)}
    report.update(
        peaks_benchmark.run(
            n_maps=10_000 if args.quick else 100_000, n_tokens=300, loop_maps=500 if args.quick else 2_000
        )
    )
    report["targets"] = targets(report)
    report["machine"] = describe()
    print(json.dumps(report, indent=2))
    return 0


def _relevance(args) -> dict:
    if args.skip_relevance:
        return {"status": "skipped"}
    try:
        module = importlib.import_module("benchmarks.relevance")
    except ImportError as exc:
        return {"status": "not available", "reason": str(exc)}
    kwargs = {"quick": True} if args.quick and "quick" in inspect.signature(module.run).parameters else {}
    return {"status": "ok", **module.run(**kwargs)}


def targets(report: dict) -> dict:
    relevance = report["relevance"]
    speedup = relevance.get("speedup") if isinstance(relevance.get("speedup"), (int, float)) else None
    peaks = report["peaks"]["speedup_vs_python_loop"]
    # what a page needs after a slider moves: the peaks (runs, words, trimming) and the word heat
    latency = report["rethreshold"]["note_peaks_and_word_heat_ms_median"]
    return {
        "relevance_speedup": {
            "value": speedup,
            "target": f">= {TARGETS['relevance_speedup']}x",
            "pass": None if speedup is None else speedup >= TARGETS["relevance_speedup"],
        },
        "peaks_speedup": {
            "value": peaks,
            "target": f">= {TARGETS['peaks_speedup']}x vs the plain Python loop",
            "pass": peaks >= TARGETS["peaks_speedup"],
            "vs_reference_loop": report["peaks"]["speedup_vs_reference_loop"],
        },
        "rethreshold_ms": {
            "value": latency,
            "target": f"< {TARGETS['rethreshold_ms']} ms",
            "pass": latency < TARGETS["rethreshold_ms"],
            "runs_only": report["rethreshold"]["find_peaks_ms_median"],
            "peaks_without_heat": report["rethreshold"]["note_peaks_ms_median"],
        },
    }


if __name__ == "__main__":
    sys.exit(main())
