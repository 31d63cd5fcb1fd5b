"""Relevance throughput on the default model: ours vs a naive lxt-README baseline.

Both run in the same (child) process on the same prompts (~`note_tokens`-token synthetic
English clinical notes, `tasks_per_note` task descriptions each, note by note as a relevance
chunk holds them; `python -m benchmarks relevance`: 2 notes x 9 tasks, as the paper samples):
  * baseline: written like lxt's README: fp32 model, parameters frozen, one prompt at a
    time, full logits for every position, backward from the top logit at the last one;
  * ours: `ml.relevance.compute_relevance(method="attnlrp")` with its defaults
    (relevance dtype, logits_to_keep=1, length-bucketed batches); with several tasks per
    note, both with a note's prompts sharing their prefix ("shared_prefix") and without
    ("product"), the headline figures being the device's default of the two ("default_path":
    shared on the CPU, not on CUDA; ml.relevance.shares_prefix_by_default).
The paths run interleaved, A B C C B A, `--rounds` times (default 2), so load that comes and goes
falls on every path alike; "paths" holds each one's best and median (prompts/s, seconds) and
its ratios to the baseline's best and median, "load_average" the 1-minute load before and
after, and "machine" the CPU's flags (ours runs in bf16 only where the CPU has native bf16,
avx512_bf16 or amx_bf16; elsewhere in fp32, so the ratio depends on the hardware).
Agreement is reported as the mean Pearson correlation of the two relevance vectors.

`--variants`: instead, each `explain` variant of ml.relevance on the same notes x tasks (every
task on every note): seconds per (note, task) pair and the mean Pearson correlation between the
normalised maps of two different tasks on one note (1.0: the map does not depend on the task).

AttnLRP patches the process that runs it, so by default `run()` works in a spawned child
and the caller (e.g. benchmarks/ml_core.py) stays unpatched. `python -m benchmarks relevance`.
"""

from __future__ import annotations

import json
import multiprocessing
import random
import statistics
import sys
import time

from benchmarks.machine import describe

SENTENCES = [
    "The patient is a {age}-year-old {sex} admitted through the emergency department with {complaint}.",
    "Past medical history includes {history} and {history2}.",
    "Home medications: {drug} {dose} mg daily and {drug2} {dose2} mg twice daily.",
    "On arrival heart rate was {hr} bpm, blood pressure {sbp}/{dbp} mmHg, temperature {temp} C and "
    "oxygen saturation {sat}% on room air.",
    "Physical examination revealed {finding} without {negative}.",
    "Laboratory tests showed hemoglobin {hb} g/dL, white cell count {wbc} x10^9/L and creatinine {cr} mg/dL.",
    "The electrocardiogram showed {ecg}.",
    "A chest radiograph demonstrated {cxr}.",
    "She was started on {drug} and monitored on the ward; the family was informed.",
    "The patient denies {negative} and reports {complaint} for the last {days} days.",
]
FILL = {
    "sex": ["man", "woman"],
    "complaint": [
        "shortness of breath",
        "chest pain",
        "fever and productive cough",
        "abdominal pain",
        "syncope",
        "palpitations",
    ],
    "history": [
        "hypertension",
        "type 2 diabetes mellitus",
        "chronic kidney disease",
        "atrial fibrillation",
        "COPD",
        "heart failure",
    ],
    "history2": [
        "hyperlipidemia",
        "hypothyroidism",
        "a prior stroke",
        "obesity",
        "osteoarthritis",
        "a permanent pacemaker",
    ],
    "drug": ["amlodipine", "metformin", "bisoprolol", "furosemide", "apixaban", "atorvastatin", "ceftriaxone"],
    "drug2": ["ramipril", "levothyroxine", "pantoprazole", "insulin glargine", "digoxin"],
    "finding": [
        "bibasilar crackles",
        "a systolic murmur",
        "bilateral leg edema",
        "a distended abdomen",
        "jugular venous distension",
    ],
    "negative": ["chest pain", "focal neurological deficits", "peritoneal signs", "calf tenderness", "rash"],
    "ecg": [
        "sinus tachycardia",
        "atrial fibrillation with rapid ventricular response",
        "normal sinus rhythm",
        "left bundle branch block",
    ],
    "cxr": [
        "right lower lobe consolidation",
        "no acute abnormality",
        "cardiomegaly with pulmonary congestion",
        "a small left pleural effusion",
    ],
}
TASKS = [
    "heart rate",
    "blood pressure",
    "body temperature",
    "presence of pacemaker",
    "oxygen saturation",
    "atrial fibrillation",
    "diabetes",
    "pneumonia",
    "heart failure",
    "renal function",
]


def synthetic_note(rng: random.Random, tokenizer, note_tokens: int) -> str:
    """English clinical-looking text cut (at a token boundary) to `note_tokens` tokens."""
    text = ""
    while len(tokenizer(text, add_special_tokens=False).input_ids) < note_tokens:
        values = {k: rng.choice(v) for k, v in FILL.items()}
        values.update(
            age=rng.randint(18, 95),
            hr=rng.randint(45, 150),
            sbp=rng.randint(90, 190),
            dbp=rng.randint(50, 110),
            temp=round(rng.uniform(35.5, 40.0), 1),
            sat=rng.randint(84, 100),
            hb=round(rng.uniform(7, 16), 1),
            wbc=round(rng.uniform(3, 25), 1),
            cr=round(rng.uniform(0.5, 4), 2),
            days=rng.randint(1, 14),
            dose=rng.choice([5, 10, 20, 40]),
            dose2=rng.choice([2.5, 25, 50, 100]),
        )
        text += (" " if text else "") + rng.choice(SENTENCES).format(**values)
    spans = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return text[: spans[note_tokens - 1][1]]


def naive_relevance(model, enc):
    """The baseline, written like lxt's README: one prompt, full logits for every position,
    backward from the top logit at the last one; relevance of the note's tokens (numpy)."""
    import torch

    input_ids = torch.tensor([enc.input_ids], device=model.device)
    input_embeds = model.get_input_embeddings()(input_ids)
    output_logits = model(inputs_embeds=input_embeds.requires_grad_(), use_cache=False).logits
    max_logits, _ = torch.max(output_logits[0, -1, :], dim=-1)
    max_logits.backward()
    return (input_embeds.grad * input_embeds).float().sum(-1).detach().cpu()[0].numpy()[enc.note_index]


def compare(
    ours_model,
    base_model,
    n_prompts: int,
    note_tokens: int,
    *,
    batch_size: int | None = None,
    tasks_per_note: int = 1,
    rounds: int = 1,
) -> dict:
    """Ours (`ours_model` as loaded, compute_relevance's defaults) against the naive loop on
    `base_model` (the same weights in fp32) over the same synthetic prompts, in THIS process
    (it gets patched). Both models must be of the same family and tokenizer. With
    tasks_per_note > 1, ours runs with share_prefix=False ("product" in "paths") and True
    ("shared_prefix"), and the headline figures are of the device's default of the two. The paths
    run interleaved, `rounds` times A B C C B A; each path's best and median are reported, and
    the headline ratios are of the bests (the least disturbed run of each)."""
    import os

    import numpy as np
    import torch

    from ml.relevance import compute_relevance, encode_pair, shares_prefix_by_default

    device = ours_model.model.device
    rng = random.Random(0)
    tasks_per_note = max(1, tasks_per_note)
    texts = [synthetic_note(rng, ours_model.tokenizer, note_tokens) for _ in range(-(-n_prompts // tasks_per_note))]
    notes = [texts[i // tasks_per_note] for i in range(n_prompts)]
    tasks = [TASKS[i % len(TASKS)] for i in range(n_prompts)]
    kwargs = dict(chat_template_kwargs=ours_model.family.chat_template_kwargs, include_target=True)
    encoded = [encode_pair(ours_model.tokenizer, n, t, **kwargs) for n, t in zip(notes, tasks)]

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    def timed(run):
        sync()
        wall, cpu = time.perf_counter(), time.process_time()
        out = run()
        sync()
        return out, time.perf_counter() - wall, time.process_time() - cpu

    warm = 2 if tasks_per_note > 1 else 1  # two prompts of one note also warm the shared path up
    compute_relevance(ours_model, notes[:warm], tasks[:warm])  # patches the process, warms up
    if tasks_per_note > 1:  # and the other path
        compute_relevance(ours_model, notes[:warm], tasks[:warm], share_prefix=not shares_prefix_by_default(device))
    for p in base_model.model.parameters():
        p.requires_grad = False
    naive_relevance(base_model.model, encoded[0])

    runs = {"naive_lxt_loop": lambda: [naive_relevance(base_model.model, enc) for enc in encoded]}
    if tasks_per_note > 1:
        runs["product"] = lambda: compute_relevance(ours_model, notes, tasks, batch_size=batch_size, share_prefix=False)
        runs["shared_prefix"] = lambda: compute_relevance(
            ours_model, notes, tasks, batch_size=batch_size, share_prefix=True
        )
        ours_name = "shared_prefix" if shares_prefix_by_default(device) else "product"
    else:
        ours_name = "ours"
        runs[ours_name] = lambda: compute_relevance(ours_model, notes, tasks, batch_size=batch_size)

    load_before = os.getloadavg()[0]
    times, outputs = interleaved(runs, rounds, timed)
    load_after = os.getloadavg()[0]
    reference, ours = outputs["naive_lxt_loop"], outputs[ours_name]
    best = {name: min(wall for wall, _ in runs_) for name, runs_ in times.items()}
    median = {name: statistics.median(wall for wall, _ in runs_) for name, runs_ in times.items()}
    cpu_median = {name: statistics.median(cpu for _, cpu in runs_) for name, runs_ in times.items()}
    base_s, ours_s = best["naive_lxt_loop"], best[ours_name]

    agreement = float(np.mean([np.corrcoef(r.raw_scores, b)[0, 1] for r, b in zip(ours, reference)]))
    return {
        "paths": {
            name: {
                "prompts_per_s": round(n_prompts / best[name], 3),
                "prompts_per_s_median": round(n_prompts / median[name], 3),
                "seconds": round(best[name], 2),
                "seconds_median": round(median[name], 2),
                "seconds_each": [round(wall, 2) for wall, _ in runs_],
                "cpu_seconds": round(cpu_median[name], 2),
                "vs_naive": round(base_s / best[name], 2),
                "vs_naive_median": round(median["naive_lxt_loop"] / median[name], 2),
                # CPU seconds move less than wall time with other processes on the cores
                "vs_naive_cpu": round(cpu_median["naive_lxt_loop"] / cpu_median[name], 2),
            }
            for name, runs_ in times.items()
        },
        "order_of_a_round": order(list(runs), 1),
        "rounds": rounds,
        "load_average": {"before": round(load_before, 2), "after": round(load_after, 2), "cores": os.cpu_count()},
        **({"shared_vs_product": round(best["product"] / best["shared_prefix"], 2)} if "product" in best else {}),
        "default_path": ours_name,  # what compute_relevance does on this device when not told
        "tasks_per_note": tasks_per_note,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "n_prompts": n_prompts,
        "note_tokens": note_tokens,
        "mean_prompt_tokens": round(float(np.mean([len(e.input_ids) for e in encoded])), 1),
        "ours_dtype": str(ours_model.dtype).removeprefix("torch."),
        "prompts_per_s": round(n_prompts / ours_s, 3),
        "baseline_prompts_per_s": round(n_prompts / base_s, 3),
        "speedup": round(base_s / ours_s, 2),
        "ours_seconds": round(ours_s, 2),
        "baseline_seconds": round(base_s, 2),
        "agreement_pearson": round(agreement, 4),
        "machine": describe(),
    }


def order(names: list[str], rounds: int) -> list[str]:
    """Each round runs the paths forwards then backwards (A B C C B A), so a burst of load that
    lands on one part of the run is shared by every path instead of falling on one."""
    return (names + names[::-1]) * max(1, rounds)


def interleaved(runs: dict, rounds: int, timed) -> tuple[dict, dict]:
    """Time each of `runs` (name -> callable) in `order`; -> ({name: [(wall, cpu), ...]},
    {name: the output of its first run})."""
    times, outputs = {name: [] for name in runs}, {}
    for name in order(list(runs), rounds):
        out, wall, cpu = timed(runs[name])
        times[name].append((wall, cpu))
        outputs.setdefault(name, out)
    return times, outputs


def _measure(n_prompts: int, note_tokens: int, model_dir, device, tasks_per_note: int = 1, rounds: int = 1) -> dict:
    from ml.models import DEFAULT_MODEL, load_model, pick_device, preferred_dtype

    device = pick_device(device)
    ours_model = load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype=preferred_dtype(device))
    base_model = load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype="float32")
    return {
        "model": DEFAULT_MODEL,
        **compare(ours_model, base_model, n_prompts, note_tokens, tasks_per_note=tasks_per_note, rounds=rounds),
    }


def _variants(n_notes: int, n_tasks: int, note_tokens: int, model_dir, device) -> dict:
    import itertools

    import numpy as np

    from ml.models import DEFAULT_MODEL, load_model, pick_device, preferred_dtype
    from ml.relevance import EXPLAIN, compute_relevance

    device = pick_device(device)
    loaded = load_model(DEFAULT_MODEL, model_dir=model_dir, device=device, dtype=preferred_dtype(device))
    rng = random.Random(0)
    notes = [synthetic_note(rng, loaded.tokenizer, note_tokens) for _ in range(n_notes)]
    tasks = TASKS[:n_tasks]
    pair_notes, pair_tasks = [n for n in notes for _ in tasks], [t for _ in notes for t in tasks]
    compute_relevance(loaded, notes[:1], tasks[:1])  # patches the process, warms up
    out = {
        "model": DEFAULT_MODEL,
        "device": str(device),
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "notes": n_notes,
        "tasks": n_tasks,
        "note_tokens": note_tokens,
        "machine": describe(),
        "variants": {},
    }
    for explain in EXPLAIN:
        started = time.perf_counter()
        results = compute_relevance(loaded, pair_notes, pair_tasks, explain=explain)
        seconds = time.perf_counter() - started
        by_note = [results[i * n_tasks : (i + 1) * n_tasks] for i in range(n_notes)]
        r = [
            float(np.corrcoef(a.scores, b.scores)[0, 1]) for maps in by_note for a, b in itertools.combinations(maps, 2)
        ]
        out["variants"][explain] = {
            "seconds_per_pair": round(seconds / len(results), 3),
            "cross_task_pearson_mean": round(float(np.nanmean(r)), 3),
            "cross_task_pearson_min": round(float(np.nanmin(r)), 3),
            "cross_task_pearson_max": round(float(np.nanmax(r)), 3),
        }
    return out


def variants(n_notes: int = 4, n_tasks: int = 5, note_tokens: int = 300, *, model_dir=None, device=None) -> dict:
    """The explain variants' cost and task dependence -> JSON-able dict (in a spawned child)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_variants, (n_notes, n_tasks, note_tokens, model_dir, device))


def run(
    n_prompts: int = 18,
    note_tokens: int = 300,
    *,
    tasks_per_note: int = 9,
    rounds: int = 2,
    quick: bool = False,
    model_dir=None,
    device=None,
    isolate: bool = True,
) -> dict:
    """Measure relevance prompts/s (baseline, product path, shared prefix) -> JSON-able dict.

    quick: 3 prompts of one note instead of n_prompts, one round. isolate=True runs the measurement in a
    spawned child so this process stays free of lxt's process-global patches."""
    if quick:
        n_prompts, rounds = min(n_prompts, 3), 1
    args = (n_prompts, note_tokens, model_dir, device, tasks_per_note, rounds)
    if not isolate:
        return _measure(*args)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure, args)


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-prompts", type=int, default=18)
    parser.add_argument("--tasks-per-note", type=int, default=9, help="prompts of one note, note by note")
    parser.add_argument("--note-tokens", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of A B C C B A (default 2)")
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--variants", action="store_true", help="compare the explain variants instead")
    parser.add_argument("--notes", type=int, default=4, help="--variants: notes (every task on each)")
    parser.add_argument("--tasks", type=int, default=5, help=f"--variants: tasks, at most {len(TASKS)}")
    a = parser.parse_args(argv)
    if a.variants:
        print(json.dumps(variants(a.notes, a.tasks, a.note_tokens, model_dir=a.model_dir, device=a.device), indent=2))
    else:
        print(
            json.dumps(
                run(
                    a.n_prompts,
                    a.note_tokens,
                    tasks_per_note=a.tasks_per_note,
                    rounds=a.rounds,
                    model_dir=a.model_dir,
                    device=a.device,
                ),
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
