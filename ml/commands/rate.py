"""`python -m ml rate`: this machine's relevance rate on a few prompts; prints one JSON line.

`manage.py rundemo` sizes the demo's first job with it, so the job fits its time on the hardware
at hand (a CPU without native bf16 computes the same prompts about twice as slowly). The prompts
are the first --notes synthetic notes (ml.synthetic, seed 0, "mixed": the demo corpus's) x the
--task descriptions, computed as the relevance worker computes them: the default
RelevanceConfig in the device's preferred dtype, --chunk-size prompts a call, after the model is
loaded. seconds_per_prompt includes the first call's warm-up, which a job pays too.

Output keys: seconds_per_prompt, prompts, load_seconds, model, device, dtype, torch_threads, and
the hardware the figure belongs to: cpu (model name), cores, native_bf16, load_average (1 min).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("rate", help="measure this machine's relevance rate", description=__doc__.splitlines()[0])
    p.add_argument("--task", action="append", required=True, help="task description s_T (repeatable)")
    p.add_argument("--notes", type=int, default=1, help="synthetic notes (default 1)")
    p.add_argument("--chunk-size", type=int, default=2, help="prompts a relevance call (default 2)")
    p.add_argument("--model", default=None, help="registry name or model folder (default: the default model)")
    p.add_argument("--model-dir", default=None, help="where registry models live (default: $MODEL_DIR or var/models)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's)")
    p.set_defaults(func=run)


def run(args) -> int:
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    from ml.models import DEFAULT_MODEL, cpu_has_native_bf16, load_model, pick_device, preferred_dtype
    from ml.relevance import compute_relevance
    from ml.synthetic import make_note

    notes = [make_note(i, seed=0, language="mixed").text for i in range(args.notes)]
    pairs = [(note, task) for note in notes for task in args.task]  # the planner's order
    started = time.perf_counter()
    device = pick_device(None)
    loaded = load_model(
        args.model or DEFAULT_MODEL, model_dir=args.model_dir, device=device, dtype=preferred_dtype(device)
    )
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(0, len(pairs), args.chunk_size):
        chunk = pairs[i : i + args.chunk_size]
        compute_relevance(loaded, [n for n, _ in chunk], [t for _, t in chunk], method="attnlrp")
    seconds = time.perf_counter() - started
    result = {
        "seconds_per_prompt": round(seconds / len(pairs), 3),
        "prompts": len(pairs),
        "load_seconds": round(load_s, 2),
        "model": loaded.label,
        "device": device.type if device.type != "cuda" else torch.cuda.get_device_name(device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "torch_threads": torch.get_num_threads(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "native_bf16": cpu_has_native_bf16(),
        "load_average": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))
    return 0


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                return value.strip()
    except OSError:
        pass
    return None
