"""Relevance rate of `make demo`'s first job on this CPU; prints JSON. Rerun it to check the
figure README quotes for `make demo`:

    .venv/bin/python benchmarks/demo.py                  # the demo's job: its notes x tasks
    .venv/bin/python benchmarks/demo.py --threads 1 --notes 2

What it measures: the prompts of the demo's first relevance job (demo.DEMO_TASKS on the first
notes of the demo corpus: ml.synthetic notes, language "mixed", seed 0, as load_demo_corpus writes
them), computed as the relevance worker computes them (ml.relevance.compute_relevance with the
default RelevanceConfig, the default model in ml.models.preferred_dtype, one chunk of
demo.DEMO_CHUNK_SIZE prompts at a time; `webapp/home/demo.py`), with torch's thread count set as
rundemo sets it for the relevance worker (settings.WORKER_TORCH_THREADS rule: cores - 1, at least 1) unless --threads.

Printed: seconds to load the model, seconds per prompt (mean, first chunk, slowest chunk), the
job's projected time, and the load average before and after (a busy machine measures slower: read
the figures with it). No database, no broker, no Django: ml/ only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe  # noqa: E402

# The demo's job as webapp/home/demo.py queues it (kept here, not imported: that module imports Django).
DEMO_TASKS = ["heart-rate", "blood-pressure", "spo2", "anticoagulants-or-antiplatelet-drug-therapy", "chest-pain"]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=None, help="notes of the job (default: rundemo's)")
    parser.add_argument("--tasks", type=int, default=len(DEMO_TASKS), help="first N of the demo's tasks")
    parser.add_argument("--chunk-size", type=int, default=None, help="prompts a chunk (default: rundemo's)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: cores - 1, at least 1)")
    parser.add_argument("--model-dir", default=str(ROOT / "var" / "models"))
    args = parser.parse_args(argv)

    demo = _rundemo_sizes()
    notes_n = args.notes if args.notes is not None else demo["notes"]
    chunk_size = args.chunk_size if args.chunk_size is not None else demo["chunk_size"]
    cores = os.cpu_count() or 1
    threads = args.threads if args.threads else max(1, cores - 1)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    load_before = os.getloadavg()

    import torch

    torch.set_num_threads(threads)
    from ml.models import DEFAULT_MODEL, load_model, pick_device, preferred_dtype
    from ml.relevance import compute_relevance
    from ml.synthetic import make_note
    from ml.synthetic.tasks import CATALOG

    tasks = DEMO_TASKS[: args.tasks]
    descriptions = {slug: CATALOG[slug].description for slug in tasks}
    notes = [make_note(i, seed=0, language="mixed").text for i in range(notes_n)]
    # The planner's order: note by note, each note's tasks together.
    pairs = [(note, descriptions[slug]) for note in notes for slug in tasks]

    started = time.perf_counter()
    device = pick_device("cpu")
    loaded = load_model(DEFAULT_MODEL, model_dir=args.model_dir, device=device, dtype=preferred_dtype(device))
    load_s = time.perf_counter() - started

    chunk_seconds = []
    started = time.perf_counter()
    for i in range(0, len(pairs), chunk_size):
        chunk = pairs[i : i + chunk_size]
        t0 = time.perf_counter()
        compute_relevance(loaded, [n for n, _ in chunk], [t for _, t in chunk], method="attnlrp")
        chunk_seconds.append(time.perf_counter() - t0)
    total_s = time.perf_counter() - started
    per_prompt = total_s / max(1, len(pairs))
    result = {
        "model": DEFAULT_MODEL,
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "cpu_count": cores,
        "torch_threads": torch.get_num_threads(),
        "notes": notes_n,
        "tasks": len(tasks),
        "prompts": len(pairs),
        "chunk_size": chunk_size,
        "mean_note_words": round(sum(len(n.split()) for n in notes) / max(1, len(notes)), 1),
        "model_load_seconds": round(load_s, 2),
        "seconds_per_prompt": round(per_prompt, 3),
        "prompts_per_minute": round(60 / per_prompt, 1) if per_prompt else None,
        "first_chunk_seconds": round(chunk_seconds[0], 2) if chunk_seconds else None,
        "slowest_chunk_seconds": round(max(chunk_seconds), 2) if chunk_seconds else None,
        "job_seconds": round(total_s, 2),
        "job_seconds_with_model_load": round(total_s + load_s, 2),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    return result


def _rundemo_sizes() -> dict:
    """The demo's DEMO_JOB_NOTES and DEMO_CHUNK_SIZE, read from its source (no Django import)."""
    source = (ROOT / "webapp" / "home" / "demo.py").read_text()
    sizes = {"notes": 4, "chunk_size": 2}
    for line in source.splitlines():
        for name, key in (("DEMO_JOB_NOTES = ", "notes"), ("DEMO_CHUNK_SIZE = ", "chunk_size")):
            if line.startswith(name):
                sizes[key] = int(line[len(name) :].split("#")[0].strip())
    return sizes


if __name__ == "__main__":
    main()
