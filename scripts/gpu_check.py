"""The GPU checks in one prepared run: `python scripts/gpu_check.py [--smoke]` prints ONE JSON object.

Written to be run once on a GPU machine (it should end well inside 8 minutes on one H200) with
nothing installed beyond the project's own setup (`make install model`). It measures and checks:

* relevance prompts/s at the default batch (compute_relevance's defaults) against the naive
  lxt-README loop in the same run, with the ratio (benchmarks.relevance.compare), for the
  default model (SmolLM2-135M, converted under $MODEL_DIR or var/models, converted there first
  if missing) and for a randomly initialised ~1B-parameter Llama-shaped model (Llama 3.2 1B's
  layers with SmolLM2's vocabulary);
* the maps of the device path (its preferred dtype, default batch) against the CPU path (the
  same weights in float32 on the CPU, one prompt at a time): equal to bf16 tolerance;
* the out-of-memory back-off of compute_relevance (halve the batch on
  torch.cuda.OutOfMemoryError) forced by capping this process's GPU memory
  (torch.cuda.set_per_process_memory_fraction) just above what two prompts need, and recovered:
  every map computed, equal to the uncapped maps;
* a DSM training step through train_causal_lm (accelerate) against a plain transformers.Trainer,
  tokens/s of each (benchmarks.training.run);
* classification-head features items/s, note prefix shared vs one forward per item
  (benchmarks.features.run);
* sharded training (FSDP2, `sharding: "fsdp"`) of a random Llama-3.2-1B-shaped model over 2 GPUs
  (`torchrun --standalone --nproc-per-node 2` of this script's `--sharded-rank`): tokens/s, each
  GPU's peak memory against the memory planner's estimate, a sharded checkpoint written, and the
  final model gathered into a folder that loads; skipped with the reason on fewer than 2 GPUs,
  and in the smoke run unless `--sharded` (then 2 CPU processes over gloo, a tiny Llama, ~20-40 s
  of which most is starting the processes: tests/ml/training/test_sharding.py covers that path);
* the peak GPU memory of each part.

Relevance patches its process with lxt for good, and a patched process must never train: the
relevance parts run in a spawned child, training and features in this process. A part that
fails reports {"error": ...} and the others still run, so one JSON object always comes out.

`--smoke`: the same steps on the CPU with tiny random Llamas (seconds, no converted model
needed), the same keys, "device": "cpu"; what only a GPU can measure is null with a reason.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Llama 3.2 1B's decoder (16 layers, hidden 2048, MLP 8192, 32 heads, 8 KV heads, tied embeddings):
# ~0.97B parameters in the layers, ~1.07B with SmolLM2's 49,152-token vocabulary.
LLAMA_1B = dict(
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    tie_word_embeddings=True,
    max_position_embeddings=8192,
)
TINY_LLAMA = dict(
    hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2
)
MAP_PEARSON_MIN = 0.995  # per prompt, device vs CPU maps; SmolLM2 bf16 vs fp32 on CPU: 0.9992-0.9999
MAP_ABS_MAX = 0.1  # largest |difference| of the normalised (0..1) maps; same measure: 0.017-0.073
NOT_CUDA = "needs a CUDA device (this run is on the CPU)"


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How much each part does: the GPU run's sizes, or the smoke run's (tiny and quick)."""

    prompts: int = 64  # relevance prompts per model (each once through ours, once through the naive loop)
    prompts_1b: int = 32
    note_tokens: int = 300
    map_prompts: int = 4  # prompts compared with the CPU path
    oom_prompts: int = 16  # one default batch
    train_steps: int = 6
    train_seq_len: int = 512
    train_micro_batch: int = 8
    train_rounds: int = 2
    feature_notes: int = 8
    feature_tasks: int = 20
    feature_note_tokens: int = 400
    feature_batch: int = 16
    sharded_steps: int = 4  # steps of the sharded (FSDP) training on 2 devices (a checkpoint halfway)
    sharded_seq_len: int = 512
    sharded_micro_batch: int = 4


SMOKE = Sizes(
    prompts=3,
    prompts_1b=2,
    note_tokens=40,
    map_prompts=2,
    oom_prompts=0,
    train_steps=2,
    train_seq_len=48,
    train_micro_batch=2,
    train_rounds=1,
    feature_notes=2,
    feature_tasks=3,
    feature_note_tokens=40,
    feature_batch=4,
    sharded_steps=2,
    sharded_seq_len=48,
    sharded_micro_batch=2,
)
SHARDED_SECONDS = 420  # the sharded part's launcher is stopped after this long


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/gpu_check.py", description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the same steps on the CPU with tiny models")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch CPU threads (default: $WORKER_TORCH_THREADS, else the CPU count)",
    )
    parser.add_argument(
        "--model-dir", default=None, help="where the default model is converted (default: $MODEL_DIR, else var/models)"
    )
    parser.add_argument(
        "--sharded", action="store_true", help="with --smoke: run the sharded training step on 2 CPU processes too"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="also write the report so far to this file after every part (what a run stopped at a time "
        "limit had measured survives; the relevance parts' go to <out>.relevance.json as they end)",
    )
    parser.add_argument("--sharded-rank", default=None, help=argparse.SUPPRESS)  # one rank of the sharded part
    args = parser.parse_args(argv)
    if args.sharded_rank:
        return _sharded_rank(Path(args.sharded_rank), SMOKE if args.smoke else Sizes())
    started = time.perf_counter()
    threads = args.threads or int(os.environ.get("WORKER_TORCH_THREADS") or 0) or os.cpu_count() or 1

    import torch

    torch.set_num_threads(threads)
    cuda = torch.cuda.is_available()
    report = {
        "device": torch.cuda.get_device_name(0) if cuda and not args.smoke else "cpu",
        "smoke": args.smoke,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_threads": threads,
    }
    if not args.smoke and not cuda:
        report["error"] = (
            f"no CUDA device visible to torch {torch.__version__} (built for CUDA: "
            f"{torch.version.cuda or 'no'}); use --smoke for the CPU run"
        )
        print(json.dumps(report, indent=2))
        return 2
    sizes = SMOKE if args.smoke else Sizes()
    out = Path(args.out) if args.out else None
    model_dir = None if args.smoke else _default_model_dir(args.model_dir, report)
    _save(out, report)
    relevance_out = out.with_name(out.name + ".relevance.json") if out else None
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        try:
            report.update(pool.apply(_relevance_checks, (sizes, model_dir, threads, args.smoke, relevance_out)))
        except Exception as exc:  # noqa: BLE001 - the child died: say so, run the rest
            report.update({key: {"error": _error(exc)} for key in RELEVANCE_KEYS})
    _save(out, report)
    report["training"] = _part(_training, sizes, model_dir, args.smoke)
    _save(out, report)
    report["features"] = _part(_features, sizes, model_dir, args.smoke)
    _save(out, report)
    report["sharded_training"] = _part(_sharded_training, sizes, args.smoke, args.sharded)
    report["seconds"] = round(time.perf_counter() - started, 1)
    report["all_checks_passed"] = _all_passed(report)
    _save(out, report)
    print(json.dumps(report, indent=2))
    return 0 if report["all_checks_passed"] else 1


RELEVANCE_KEYS = ("relevance_default_model", "relevance_1b", "maps_match_cpu", "oom_backoff")


def _default_model_dir(model_dir, report) -> str:
    """The folder holding the converted default model, converting it there once if needed."""
    from ml.models import convert_default_model, default_model_dir

    folder = Path(model_dir) if model_dir else default_model_dir()
    convert_default_model(folder)  # idempotent: nothing to do when already converted
    report["model_dir"] = str(folder)
    return str(folder)


# ------------------------------------------------------------------ relevance (spawned child)
def _relevance_checks(sizes: Sizes, model_dir, threads: int, smoke: bool, partial: Path | None = None) -> dict:
    import torch

    torch.set_num_threads(threads)
    device = torch.device("cpu" if smoke else "cuda")
    small = _default_models(model_dir, device, smoke)
    out = {"relevance_default_model": _part(_throughput, small, sizes.prompts, sizes.note_tokens)}
    _save(partial, out)
    out["relevance_1b"] = _part(_throughput_1b, small, sizes, device, smoke)
    _save(partial, out)
    out["maps_match_cpu"] = _part(_maps_match_cpu, small, sizes, model_dir, smoke)
    _save(partial, out)
    out["oom_backoff"] = (
        _part(_oom_backoff, small[0], sizes) if not smoke else {"forced": None, "recovered": None, "reason": NOT_CUDA}
    )
    _save(partial, out)
    return out


def _default_models(model_dir, device, smoke: bool):
    """(ours: the device's relevance dtype, base: float32) of the default model, or of a tiny
    random Llama in the smoke run."""
    from ml.models import DEFAULT_MODEL, load_model, preferred_dtype

    if smoke:
        base = _random_llama(device, "tiny random Llama", TINY_LLAMA)
        return _in_dtype(base, preferred_dtype(device)), base
    return (
        load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype=preferred_dtype(device)),
        load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype="float32"),
    )


TASKS_PER_NOTE = 9


def _throughput(models, n_prompts: int, note_tokens: int) -> dict:
    from benchmarks.relevance import compare

    ours, base = models
    with _peak_memory(ours.device) as peak:
        # A note asked about 9 tasks, as the paper samples: the product path with and without the
        # shared note prefix, against the naive loop.
        result = compare(ours, base, n_prompts, note_tokens, tasks_per_note=TASKS_PER_NOTE)
    naive = result.pop("baseline_prompts_per_s")
    return {
        "model": ours.name,
        "parameters": _parameters(ours.model),
        "batch_size": _default_batch(ours),
        **result,
        "naive_prompts_per_s": naive,
        **peak,
    }


def _throughput_1b(small, sizes: Sizes, device, smoke: bool) -> dict:
    """The ~1B model (smoke: a second tiny Llama) with the default model's tokenizer."""
    from ml.models import preferred_dtype

    shape, name = (
        (dict(TINY_LLAMA, num_hidden_layers=3), "tiny random Llama (stands in for ~1B)")
        if smoke
        else (LLAMA_1B, "random Llama-3.2-1B-shaped")
    )
    base = _random_llama(device, name, shape, tokenizer=small[0].tokenizer)
    ours = _in_dtype(base, preferred_dtype(device))
    try:
        return _throughput((ours, base), sizes.prompts_1b, sizes.note_tokens)
    finally:
        del ours, base
        _release(device)


def _maps_match_cpu(models, sizes: Sizes, model_dir, smoke: bool) -> dict:
    """The device path (preferred dtype, default batch) against the CPU path (float32, one
    prompt at a time) on the same prompts and weights: per-prompt Pearson of the raw maps and
    the largest difference of the normalised maps, over prompts that explain the same token
    (explain="next" explains the top logit, which a near-tie can change between dtypes)."""
    import random

    import numpy as np

    from benchmarks.relevance import TASKS, synthetic_note
    from ml.models import DEFAULT_MODEL, load_model
    from ml.relevance import compute_relevance

    ours, base = models
    cpu = base if smoke else load_model(DEFAULT_MODEL, model_dir=model_dir, device="cpu", dtype="float32")
    rng = random.Random(1)
    notes = [synthetic_note(rng, ours.tokenizer, sizes.note_tokens) for _ in range(sizes.map_prompts)]
    tasks = [TASKS[i % len(TASKS)] for i in range(len(notes))]
    on_device = compute_relevance(ours, notes, tasks)
    on_cpu = compute_relevance(cpu, notes, tasks, batch_size=1)
    same = [(a, b) for a, b in zip(on_device, on_cpu) if a.predicted_token == b.predicted_token]
    pearson = [float(np.corrcoef(a.raw_scores, b.raw_scores)[0, 1]) for a, b in same]
    largest = [float(np.abs(a.scores - b.scores).max()) for a, b in same]
    return {
        "device_path": f"{ours.device.type}, {str(ours.dtype).removeprefix('torch.')}, batch {_default_batch(ours)}",
        "cpu_path": "cpu, float32, batch 1",
        "prompts": len(notes),
        "same_explained_token": len(same),
        "pearson_min": round(min(pearson), 5) if pearson else None,
        "max_abs_diff_normalised": round(max(largest), 4) if largest else None,
        "tolerance": {"pearson_min": MAP_PEARSON_MIN, "max_abs_diff_normalised": MAP_ABS_MAX},
        "pass": bool(same) and min(pearson) >= MAP_PEARSON_MIN and max(largest) <= MAP_ABS_MAX,
    }


def _oom_backoff(ours, sizes: Sizes) -> dict:
    """Cap this process's GPU memory so that a default batch cannot fit but two prompts can;
    compute_relevance must halve its batch until it fits and return every map, equal to the
    uncapped ones. The batch sizes it used are read from its progress callback."""
    import random

    import numpy as np
    import torch

    from benchmarks.relevance import TASKS, synthetic_note
    from ml.relevance import compute_relevance

    rng = random.Random(2)
    notes = [synthetic_note(rng, ours.tokenizer, sizes.note_tokens) for _ in range(sizes.oom_prompts)]
    tasks = [TASKS[0]] * len(notes)  # one task: prompts of (nearly) one length
    asked = _default_batch(ours)
    gpu = ours.model.device.index if ours.model.device.index is not None else torch.cuda.current_device()
    reference = compute_relevance(ours, notes, tasks, batch_size=1)
    _release("cuda")
    base = torch.cuda.memory_allocated(gpu)
    torch.cuda.reset_peak_memory_stats(gpu)
    compute_relevance(ours, notes[:1], tasks[:1], batch_size=1)
    per_prompt = torch.cuda.max_memory_allocated(gpu) - base
    total = torch.cuda.get_device_properties(gpu).total_memory
    fraction = float(min(1.0, (base + 3.5 * per_prompt) / total))
    done: list[int] = []
    _release("cuda")
    torch.cuda.set_per_process_memory_fraction(fraction, gpu)
    try:
        capped = compute_relevance(ours, notes, tasks, batch_size=asked, progress=lambda n, _total: done.append(n))
        error = None
    except torch.cuda.OutOfMemoryError as exc:
        capped, error = None, _error(exc)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, gpu)
        _release("cuda")
    batches = [b - a for a, b in zip([0] + done, done)]
    equal = capped is not None and all(
        np.corrcoef(a.raw_scores, b.raw_scores)[0, 1] >= MAP_PEARSON_MIN for a, b in zip(capped, reference)
    )
    return {
        "memory_fraction": round(fraction, 5),
        "cap_mb": round(fraction * total / 2**20, 1),
        "one_prompt_mb": round(per_prompt / 2**20, 1),
        "asked_batch": asked,
        "batches_run": batches,
        "forced": bool(batches) and batches[0] < asked,
        "recovered": capped is not None and len(capped) == len(notes),
        "maps_equal_uncapped": bool(equal),
        "error": error,
    }


# ------------------------------------------------------------------ training and features (this process)
def _training(sizes: Sizes, model_dir, smoke: bool) -> dict:
    import accelerate
    import torch

    from benchmarks import training
    from ml.models import DEFAULT_MODEL, load_model

    device = torch.device("cpu" if smoke else "cuda")
    loaded = (
        _random_llama(device, "tiny random Llama", TINY_LLAMA)
        if smoke
        else load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype="float32")
    )
    with _peak_memory(device) as peak:
        result = training.run(
            sizes.train_steps, sizes.train_seq_len, sizes.train_micro_batch, rounds=sizes.train_rounds, loaded=loaded
        )
    return {
        "accelerate": accelerate.__version__,
        "parameters": _parameters(loaded.model),
        **result,
        **peak,
        "peak_note": "ours and the Trainer together (they alternate in one process)",
    }


def _sharded_training(sizes: Sizes, smoke: bool, on_cpu: bool = False) -> dict:
    """2 processes under torchrun, each running `_sharded_rank`; rank 0's JSON."""
    import subprocess
    import tempfile

    import torch

    gpus = torch.cuda.device_count()
    if smoke and not on_cpu:
        return {"skipped": "needs 2 GPUs; the smoke run is on the CPU (--smoke --sharded runs it there)", "pass": None}
    if not smoke and gpus < 2:
        return {"skipped": f"needs 2 GPUs, {gpus} visible", "pass": None}
    with tempfile.TemporaryDirectory(prefix="gpu-check-sharded-") as out:
        torchrun = Path(sys.executable).with_name("torchrun")
        command = [str(torchrun), "--standalone", "--nproc-per-node", "2", __file__, "--sharded-rank", out]
        done = subprocess.run(
            command + (["--smoke"] if smoke else []),
            capture_output=True,
            text=True,
            timeout=SHARDED_SECONDS,
            env={**os.environ, "OMP_NUM_THREADS": "1"} if smoke else None,
        )
        result = Path(out) / "rank-0.json"
        if done.returncode or not result.is_file():
            raise RuntimeError(f"the sharded launch exited with {done.returncode}: {done.stderr[-800:]}")
        report = json.loads(result.read_text())
        other = json.loads((Path(out) / "rank-1.json").read_text())
    report["peak_gpu_mem_mb_per_rank"] = [report.pop("peak_gpu_mem_mb"), other.get("peak_gpu_mem_mb")]
    return report


def _sharded_rank(out: Path, sizes: Sizes) -> int:
    """One rank of the sharded part: train with sharding "fsdp", write rank-N.json into `out`."""
    import torch
    import torch.distributed as dist

    from benchmarks.training import _pairs
    from ml.training import CausalLMConfig, train_causal_lm
    from ml.training.memory import ModelShape, PlanSettings, estimate
    from ml.training.runtime import autocast_dtype

    rank = int(os.environ["RANK"])
    smoke = sizes == SMOKE
    if smoke:
        torch.set_num_threads(1)
    device = torch.device("cpu") if smoke else torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    if device.type == "cuda":
        torch.cuda.set_device(device)
    shape, name = (TINY_LLAMA, "tiny random Llama") if smoke else (LLAMA_1B, "random Llama-3.2-1B-shaped")
    loaded = _random_llama(device, name, shape)
    parameters = _parameters(loaded.model)
    steps, micro = sizes.sharded_steps, sizes.sharded_micro_batch
    config = CausalLMConfig(
        sharding="fsdp",
        effective_batch_size=micro * 2,
        micro_batch_size=micro,
        max_length=sizes.sharded_seq_len + 64,
        max_steps=steps,
        checkpoint_every=max(1, steps // 2),
        gradient_checkpointing=not smoke,
        warmup_ratio=0.0,
    )
    pairs = _pairs(loaded.tokenizer, steps * micro * 2, sizes.sharded_seq_len, 0)
    checkpoints = []

    def on_progress(event):  # rank 0 only
        if event.message == "checkpoint saved":
            checkpoints.append(event.step)

    with _peak_memory(device) as peak:
        result = train_causal_lm(loaded, pairs, config, output_dir=out / "run", on_progress=on_progress)
    report = dict(peak)
    if rank == 0:
        from transformers import AutoModelForCausalLM

        folder = AutoModelForCausalLM.from_pretrained(result.final_dir)
        plan = estimate(
            ModelShape.from_config(loaded.model.config.to_dict(), name=name),
            PlanSettings(
                sharding="fsdp",
                gpus=2,
                seq_len=config.max_length,
                micro_batch=micro,
                checkpointing=config.gradient_checkpointing,
                precision="bf16" if autocast_dtype(config.precision, device) else "fp32",
            ),
        )
        report.update(
            model=name,
            parameters=parameters,
            processes=dist.get_world_size() if dist.is_initialized() else 2,
            steps=result.steps,
            tokens_per_s=round(result.tokens / max(result.seconds, 1e-9), 1),
            final_loss=result.final_loss,
            weights_changed=result.weights_changed,
            checkpoints_saved_at=checkpoints,
            final_folder_loads=_parameters(folder) == parameters,
            planned_gb_per_gpu=round(plan.total / 1e9, 2),
        )
        report["pass"] = bool(result.weights_changed and checkpoints and report["final_folder_loads"])
    (out / f"rank-{rank}.json").write_text(json.dumps(report))
    from ml.training.sharding import leave_group

    leave_group()  # rank 1 waits for rank 0's checks: the ranks end together
    return 0


def _features(sizes: Sizes, model_dir, smoke: bool) -> dict:
    import torch

    from benchmarks import features
    from ml.models import DEFAULT_MODEL, load_model

    device = torch.device("cpu" if smoke else "cuda")
    loaded = (
        _random_llama(device, "tiny random Llama", TINY_LLAMA)
        if smoke
        else load_model(DEFAULT_MODEL, model_dir=model_dir, device=device)
    )  # inference dtype
    with _peak_memory(device) as peak:
        result = features.run(
            sizes.feature_notes,
            sizes.feature_tasks,
            sizes.feature_note_tokens,
            batch_size=sizes.feature_batch,
            loaded=loaded,
        )
    return {
        "dtype": str(loaded.dtype).removeprefix("torch."),
        **result,
        "items_per_s": result["shared_prefix_items_per_s"],
        **peak,
    }


# ------------------------------------------------------------------ helpers
def _random_llama(device, name: str, shape: dict, tokenizer=None):
    from benchmarks.training import random_llama

    return random_llama(tokenizer, device=device, name=name, **shape)


def _in_dtype(loaded, dtype):
    """The same weights in another dtype (a copy; `loaded` is kept as it is)."""
    import copy

    if loaded.dtype == dtype:
        return loaded
    return dataclasses.replace(loaded, model=copy.deepcopy(loaded.model).to(dtype), dtype=dtype)


def _default_batch(loaded) -> int:
    """compute_relevance's batch when none is given (see its docstring)."""
    return 16 if loaded.device.type == "cuda" else 1


def _parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


@contextlib.contextmanager
def _peak_memory(device):
    """Yields a dict that gets the peak GPU memory of the block (CUDA), or null and the reason."""
    import torch

    result: dict = {}
    if device.type != "cuda":
        yield result
        result.update(peak_gpu_mem_mb=None, peak_gpu_mem_reason=NOT_CUDA)
        return
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    yield result
    torch.cuda.synchronize(device)
    result["peak_gpu_mem_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def _release(device) -> None:
    import gc

    import torch

    gc.collect()
    if getattr(device, "type", device) == "cuda":
        torch.cuda.empty_cache()


def _part(fn, *args) -> dict:
    """fn(*args), or {"error": ...}: one part failing never hides the others."""
    started = time.perf_counter()
    try:
        result = fn(*args)
    except Exception as exc:  # noqa: BLE001 - reported in the JSON
        result = {"error": _error(exc)}
    seconds = round(time.perf_counter() - started, 1)
    print(
        f"gpu_check: {fn.__name__.strip('_')} {'failed' if result.get('error') else 'done'} in {seconds} s",
        file=sys.stderr,
        flush=True,
    )  # progress; stdout holds only the JSON
    return {**result, "part_seconds": seconds}


def _save(path: Path | None, report: dict) -> None:
    """Write the report so far (atomically: a reader never sees half a file)."""
    if path is None:
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(report, indent=2))
    os.replace(tmp, path)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def _all_passed(report: dict) -> bool:
    """No part failed and every check that ran passed (exit status 0)."""
    parts = [v for v in report.values() if isinstance(v, dict)]
    if any(part.get("error") for part in parts):
        return False
    oom = report.get("oom_backoff", {})
    if report.get("sharded_training", {}).get("pass") is False:
        return False
    return report.get("maps_match_cpu", {}).get("pass") is not False and (
        oom.get("forced") is None or (oom["forced"] and oom["recovered"] and oom["maps_equal_uncapped"])
    )


if __name__ == "__main__":
    sys.exit(main())
