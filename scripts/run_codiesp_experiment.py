"""The end-to-end DecSelfMask experiment on real notes (CodiEsp, English machine translation):
base + CH vs DSM + CH vs CPT + CH vs random mask + CH, Macro F1 with 95% CIs, wall time per stage.

    createdb -h 127.0.0.1 -U postgres dsm_codiesp_exp
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dsm_codiesp_exp HF_HUB_OFFLINE=1 \\
        .venv/bin/python scripts/run_codiesp_experiment.py > codiesp.json

Measured on this project's 2-core CPU (2 torch threads, shared with other work at times):
relevance ~4 s a prompt; a DSM / CPT optimizer step of 8 examples x <=384 tokens 26-45 s; CH
features ~4 items/s at 1024 tokens with the note's prefix shared across its 20 tasks (about 12
minutes per model for 150 notes). `--background-notes 100 --labeled-notes 150 --dsm-steps 15`
took about 2 h 20 min in all. Scale with --background-notes, --labeled-notes, --dsm-steps,
--max-length.

Stages (each timed; JSON and a markdown table are printed at the end):
 1. setup: migrate; the 20 most frequent diagnosis codes of train + dev (by number of notes)
    become binary tasks (options "present" / "absent"), their English titles
    (diagnosis_titles_en.json) the task descriptions s_T; every 5th of them by frequency (ranks
    5, 10, 15, 20) is HELD OUT: never used for relevance / DSM, evaluated separately;
 2. import: the labeled corpus (train + dev notes, `text_en_mt`, one gold label per note x
    task) and the unlabeled corpus (the first N background notes), through the importer;
 3. relevance: AttnLRP maps on the default model for each background note x k sampled
    non-held-out tasks (webapp.pipeline.jobs; computed in a CHILD process, because lxt's
    patches are process-global and this process trains afterwards);
 4. datasets: a DSM dataset and a random-mask dataset from those maps (webapp.datasets.building);
 5. training: DSM, CPT (the DSM dataset's notes, unmasked) and random-mask models, each capped
    at --dsm-steps optimizer steps (webapp.training, the worker's own code path, in-process);
    each is registered as a ModelVersion;
 6. evaluation: a classification head (CH, the paper's settings) on base, DSM, CPT and random,
    all on the same stored 85/15 split of the labeled corpus (optionally LoRA SFT too).
    `--all-rows` adds every other row of the paper's Tables 2-4 on that split: base + SFT and
    DSM + SFT, 0-shot and 2-shot prompting (base), self-learning (an SFT teacher labels
    background notes, the base model learns gold + synthetic labels), and the one-peak ablation
    (a dataset of maps with exactly one peak, trained like DSM, + CH). The tables end with each
    row's paired difference against base + CH on the same test items (`--out DIR` writes
    results.json, table4.csv, paired.csv, results.md).

Everything lands in the database as the pages show it (Training page: select the runs, Compare).
Re-running with the same database reuses the imported notes, stored relevance maps (not
recomputed), the split and the tasks; it trains and evaluates again. Use a fresh database for
clean timings. Expected duration on 2 CPU cores: see the measured figures above and --help.
"""

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from codiesp import Timer, english_rows, note_line, read_jsonl, write_notes  # noqa: E402  (scripts/)

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

DATA = Path("/work/shared/data/codiesp")
ACTOR = "run_codiesp_experiment"
OPTIONS = ["present", "absent"]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DATA, help="folder with the CodiEsp JSONL files")
    parser.add_argument("--background-notes", type=int, default=40, help="unlabeled notes for relevance / DSM")
    parser.add_argument(
        "--tasks-per-note",
        type=int,
        default=3,
        help="tasks sampled per background note for relevance (paper: ~15%% of the tasks)",
    )
    parser.add_argument("--tasks", type=int, default=20, help="most frequent diagnosis codes used as tasks")
    parser.add_argument(
        "--held-out-every", type=int, default=5, help="every n-th task by frequency is held out (0: none)"
    )
    parser.add_argument("--labeled-notes", type=int, default=25, help="train + dev notes used as labeled items")
    parser.add_argument("--dsm-steps", type=int, default=10, help="optimizer steps of each DSM / CPT / random run")
    parser.add_argument("--effective-batch", type=int, default=8, help="effective batch size (paper: 128)")
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=384, help="tokens per DSM / CPT / random training example")
    parser.add_argument(
        "--ch-max-length",
        type=int,
        default=1024,
        help="tokens per CH / SFT prompt (long enough for most notes, so the note's prefix is "
        "computed once for all its tasks)",
    )
    parser.add_argument("--ch-epochs", type=int, default=20, help="classification head epochs (paper: 20)")
    parser.add_argument("--feature-batch", type=int, default=8)
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples of the CIs")
    parser.add_argument("--with-sft", action="store_true", help="also base + SFT and DSM + SFT (slow on a CPU)")
    parser.add_argument("--sft-steps", type=int, default=15)
    parser.add_argument("--with-prompting", action="store_true", help="also the 0-shot and 2-shot rows (base model)")
    parser.add_argument("--prompt-variants", type=int, default=3, help="system prompts / example draws (paper: 3)")
    parser.add_argument(
        "--with-self-learning",
        action="store_true",
        help="also self-learning: an SFT teacher labels background notes, the base model learns gold + synthetic",
    )
    parser.add_argument("--unlabeled-notes", type=int, default=20, help="background notes the teacher labels")
    parser.add_argument("--unlabeled-tasks-per-note", type=int, default=3)
    parser.add_argument("--with-one-peak", action="store_true", help="also the one-peak ablation (+ CH)")
    parser.add_argument("--without-cpt-random", action="store_true", help="skip the CPT and random-mask models")
    parser.add_argument(
        "--all-rows",
        action="store_true",
        help="every row the product can produce: --with-sft --with-prompting --with-self-learning --with-one-peak",
    )
    parser.add_argument("--out", type=Path, help="folder for results.json, table4.csv and paired.csv")
    parser.add_argument(
        "--report",
        metavar="RUN_IDS",
        help="run nothing: print (and with --out write) the tables of these stored evaluation runs, "
        "comma-separated (e.g. after re-running one row with manage.py run_experiment)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=2, help="torch threads of this process and of the relevance child"
    )
    parser.add_argument("--prefix", default="codiesp", help="prefix of corpus, task and dataset names")
    args = parser.parse_args(argv)
    if args.all_rows:
        args.with_sft = args.with_prompting = args.with_self_learning = args.with_one_peak = True
    return args


# ------------------------------------------------------------------------------------ data


def top_codes(data: Path, n: int) -> list[tuple[str, int]]:
    """The n diagnosis codes present in the most train + dev notes (ties: by code)."""
    counts = Counter()
    for name in ("train.jsonl", "dev.jsonl"):
        for row in read_jsonl(data / name):
            counts.update(set(row.get("diagnosis_codes") or ()))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def task_slug(prefix: str, code: str) -> str:
    return f"{prefix}-{code.replace('.', '-')}"


def ensure_tasks(args, codes) -> list:
    from webapp.corpus.models import Task

    titles = json.loads((args.data / "diagnosis_titles_en.json").read_text(encoding="utf-8"))
    tasks = []
    for rank, (code, _) in enumerate(codes, 1):
        held = bool(args.held_out_every) and rank % args.held_out_every == 0
        title = titles.get(code) or code
        task, _ = Task.objects.update_or_create(
            slug=task_slug(args.prefix, code),
            defaults={"description": title, "options": OPTIONS, "group": "CodiEsp diagnosis", "held_out": held},
        )
        tasks.append(task)
    return tasks


def write_labeled(args, codes, notes_path: Path, labels_path: Path) -> int:
    wanted = [code for code, _ in codes]
    n = 0
    with notes_path.open("w", encoding="utf-8") as notes, labels_path.open("w", encoding="utf-8") as labels:
        for name in ("train.jsonl", "dev.jsonl"):
            for row, text in english_rows(args.data / name):
                notes.write(note_line(row, text, f"CodiEsp {name[:-6]}"))
                present = set(row.get("diagnosis_codes") or ())
                for code in wanted:
                    labels.write(
                        json.dumps(
                            {
                                "note_id": row["id"],
                                "task": task_slug(args.prefix, code),
                                "label": "present" if code in present else "absent",
                                "evidence": [],
                            }
                        )
                        + "\n"
                    )
                n += 1
                if n == args.labeled_notes:
                    return n
    return n


def import_corpus(kind: str, notes_path: Path, name: str, labels_path: Path | None = None) -> dict:
    from webapp.corpus.importing import import_annotations, import_notes

    report = import_notes(notes_path, name, language="en", create=True, actor=ACTOR)
    if not report.ok:
        sys.exit(f"{kind} notes: import failed:\n" + "\n".join(report.problem_lines()))
    result = {"notes_created": report.created, "notes_unchanged": report.unchanged}
    if labels_path is not None:
        labels = import_annotations(labels_path, name, annotator="import:codiesp-gold", actor=ACTOR)
        if not labels.ok:
            sys.exit(f"{kind} labels: import failed:\n" + "\n".join(labels.problem_lines()))
        result.update(labels_created=labels.created, labels_unchanged=labels.unchanged)
    return result


# ------------------------------------------------------------------------------------ relevance (child process)


def _relevance_child(job_id: int, threads: int) -> None:
    """Runs in a spawned process: computing AttnLRP patches that process, never this one."""
    import django
    import torch

    torch.set_num_threads(threads)

    django.setup()
    from webapp.pipeline.models import RelevanceChunk
    from workers.relevance import run_chunk

    for chunk_id in RelevanceChunk.objects.filter(job_id=job_id).order_by("index").values_list("pk", flat=True):
        run_chunk(chunk_id)


def relevance(args, corpus, tasks, ids) -> tuple[dict, object]:
    from django.db import connections

    from webapp.pipeline import jobs, planning
    from webapp.pipeline.models import ModelVersion, RelevanceJob
    from webapp.pipeline.progress import job_progress

    spec = jobs.JobSpec(
        corpus=corpus,
        model_version=ModelVersion.objects.get(is_default=True),
        template="en",
        task_selection=RelevanceJob.TaskSelection.SAMPLE,
        tasks=[t for t in tasks if not t.held_out],
        sample_k=args.tasks_per_note,
        seed=args.seed,
        note_filter={"external_ids": ids},
        chunk_size=32,
    )
    job = jobs.launch(spec, actor=ACTOR, enqueue=False)
    planning.plan_now(job)  # in this process: the chunks run in the child below
    connections.close_all()
    child = multiprocessing.get_context("spawn").Process(target=_relevance_child, args=(job.pk, args.threads))
    child.start()
    child.join()
    if child.exitcode != 0:
        sys.exit(f"the relevance process exited with code {child.exitcode}")
    job.refresh_from_db()
    progress = job_progress(job)
    return {
        "job": job.pk,
        "status": job.status,
        "prompts": job.total,
        "done": progress.done,
        "prompts_per_second": progress.prompts_per_second,
        "errors": progress.errors,
    }, job


def build_dataset(job, mode: str) -> tuple:
    """From every stored map of the job's notes and tasks (a re-run's job finds its maps stored
    by an earlier job, so the dataset selects by notes and tasks, not by job)."""
    from webapp.corpus.models import Note
    from webapp.datasets import building
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline.models import PeakProfile

    notes = sorted(
        Note.objects.filter(corpus=job.corpus, external_id__in=job.note_filter["external_ids"]).values_list(
            "pk", flat=True
        )
    )
    name = f"{job.corpus.name}-{mode}"
    dataset = DatasetVersion.objects.create(
        name=name,
        version=DatasetVersion.next_version(name),
        corpus=job.corpus,
        model_version=job.model_version,
        method=job.method,
        template=job.template,
        profile=PeakProfile.objects.get(is_default=True),
        mode=mode,
        filters={"notes": notes, "tasks": sorted(job.tasks.values_list("pk", flat=True)), "exclude_held_out": True},
    )
    claimed = building.claim(dataset.pk)
    stats = building.build(claimed)
    claimed.refresh_from_db()
    return claimed, {
        "dataset": claimed.pk,
        "mode": mode,
        "examples": stats.get("examples"),
        "notes": stats.get("notes_used"),
    }


# ------------------------------------------------------------------------------------ training runs


def run_in_process(spec) -> object:
    from webapp.training import execution, runs

    # CodiEsp is a public corpus of case reports, published de-identified: the command line
    # confirms its release past the gate (webapp.deid.gate), audited as any confirmation is
    run = runs.launch(spec, actor=ACTOR, enqueue=False, confirm_identifiable=True)
    claimed = runs.claim(run.pk, worker=ACTOR)
    outcome = execution.execute(claimed)
    run.refresh_from_db()
    if outcome != "done":
        print(f"run {run.pk} ({spec.preset}) ended {outcome}: {run.error}", file=sys.stderr)
    return run


def train(args, preset: str, dataset, base):
    from webapp.training.presets import PRESETS
    from webapp.training.runs import RunSpec

    train_config = {
        "max_steps": args.dsm_steps,
        "effective_batch_size": args.effective_batch,
        "micro_batch_size": args.micro_batch,
        "max_length": args.max_length,
        "checkpoint_every": max(5, args.dsm_steps // 3),
        "seed": args.seed,
    }
    overrides = {**PRESETS[preset].overrides.get("train", {}), **train_config}
    kind = PRESETS[preset].kind
    return run_in_process(
        RunSpec(
            kind=kind,
            preset=preset,
            model_version=base,
            dataset=dataset,
            config={"train": overrides},
            name=f"{args.prefix} {preset}",
        )
    )


def evaluate(args, preset: str, model, split, label: str):
    from webapp.training.runs import RunSpec

    config = {"evaluation": {"n_resamples": args.n_resamples, "seed": args.seed}}
    if preset == "ch":
        config.update(
            heads={"epochs": args.ch_epochs, "max_length": args.ch_max_length, "seed": args.seed},
            features={"batch_size": args.feature_batch},
        )
    elif preset in ("0-shot", "2-shot"):
        config.update(
            prompting={
                "shots": 0 if preset == "0-shot" else 2,
                "variants": args.prompt_variants,
                "max_length": args.ch_max_length,
                "seed": args.seed,
            }
        )
    else:  # sft, self-learning
        config.update(
            train={
                "max_steps": args.sft_steps,
                "effective_batch_size": args.effective_batch,
                "micro_batch_size": args.micro_batch,
                "max_length": args.ch_max_length,
                "seed": args.seed,
            }
        )
        if preset == "self-learning":
            config.update(
                unlabeled={
                    "corpus": f"{args.prefix}-background-en",
                    "notes": args.unlabeled_notes,
                    "tasks_per_note": args.unlabeled_tasks_per_note,
                    "seed": args.seed,
                }
            )
    from webapp.training.presets import PRESETS

    return run_in_process(
        RunSpec(
            kind=PRESETS[preset].kind,
            preset=preset,
            model_version=model,
            split=split,
            config=config,
            name=f"{args.prefix} {label}",
        )
    )


# ------------------------------------------------------------------------------------ main


def main(argv=None):
    args = parse_args(argv)
    for name in ("train.jsonl", "dev.jsonl", "background.jsonl", "diagnosis_titles_en.json"):
        if not args.report and not (args.data / name).is_file():  # --report reads the database only
            sys.exit(f"{args.data / name} is missing")

    import django
    import torch

    torch.set_num_threads(args.threads)
    django.setup()
    from django.core.management import call_command

    from webapp.corpus.models import Corpus
    from webapp.pipeline.models import ModelVersion
    from webapp.training import splits
    from webapp.training.models import TrainingRun

    if args.report:
        ids = [int(i) for i in args.report.split(",") if i.strip()]
        runs = list(TrainingRun.objects.filter(pk__in=ids, status="done"))
        missing = sorted(set(ids) - {r.pk for r in runs})
        if missing:
            sys.exit(f"no finished run with id {', '.join(map(str, missing))}")
        report(args, runs, {"report_of_runs": ids})
        return
    timer = Timer()
    out = {"settings": vars(args) | {"data": str(args.data)}}
    with timer("setup"):
        call_command("migrate", verbosity=0)
        codes = top_codes(args.data, args.tasks)
        tasks = ensure_tasks(args, codes)
    out["tasks"] = [
        {"slug": t.slug, "s_T": t.description, "notes_with_code": n, "held_out": t.held_out}
        for t, (_, n) in zip(tasks, codes)
    ]
    labeled_name, background_name = f"{args.prefix}-labeled-en", f"{args.prefix}-background-en"
    with tempfile.TemporaryDirectory() as tmp, timer("import"):
        tmp = Path(tmp)
        n_labeled = write_labeled(args, codes, tmp / "labeled.jsonl", tmp / "labels.jsonl")
        out["import"] = {
            "labeled": import_corpus("labeled", tmp / "labeled.jsonl", labeled_name, tmp / "labels.jsonl"),
            "labeled_notes": n_labeled,
        }
        ids = write_notes(args.data / "background.jsonl", args.background_notes, tmp / "background.jsonl")
        out["import"]["background"] = import_corpus("background", tmp / "background.jsonl", background_name)
        out["import"]["background_notes"] = len(ids)
    labeled, background = Corpus.objects.get(name=labeled_name), Corpus.objects.get(name=background_name)
    with timer("split"):
        split, _ = splits.get_or_create_split(
            labeled, seed=args.seed, test_ratio=0.15, tasks=[t.slug for t in tasks], actor=ACTOR
        )
    out["split"] = {"split": split.pk, "train_items": split.train_count, "test_items": split.test_count}

    with timer("relevance"):
        out["relevance"], job = relevance(args, background, tasks, ids)
    if job.status != "done":
        sys.exit(f"relevance job {job.pk} ended {job.status}: {json.dumps(out['relevance'])}")
    with timer("dataset_dsm"):
        dsm_data, out["dataset_dsm"] = build_dataset(job, "dsm")
    trainings = [("dsm-full", dsm_data)]
    if not args.without_cpt_random:
        with timer("dataset_random"):
            random_data, out["dataset_random"] = build_dataset(job, "random")
        trainings += [("cpt", dsm_data), ("random-mask", random_data)]
    if args.with_one_peak:
        with timer("dataset_one_peak"):
            one_peak_data, out["dataset_one_peak"] = build_dataset(job, "one_peak")
        if one_peak_data.example_count:
            trainings.append(("one-peak", one_peak_data))
        else:
            print("no map had exactly one peak: the one-peak dataset is empty, no one-peak row", file=sys.stderr)
    if not out["dataset_dsm"]["examples"]:
        sys.exit("the DSM dataset has no examples (no note had two peaks): use more background notes or tasks")

    base = ModelVersion.objects.get(is_default=True)
    trained = {}
    for preset, dataset in trainings:
        with timer(f"train_{preset}"):
            trained[preset] = train(args, preset, dataset, base)
    evaluated = []
    labels = {"dsm-full": "DSM", "cpt": "CPT", "random-mask": "random mask", "one-peak": "one peak"}
    systems = [("base", base)] + [(labels[key], run.produced_model) for key, run in trained.items()]
    for label, model in systems:
        if model is None:
            print(f"no {label} model (its training failed); skipping its evaluation", file=sys.stderr)
            continue
        with timer(f"ch_{label.replace(' ', '_')}"):
            evaluated.append(evaluate(args, "ch", model, split, f"{label} + CH"))
        if args.with_sft and label in ("base", "DSM"):
            with timer(f"sft_{label}"):
                evaluated.append(evaluate(args, "sft", model, split, f"{label} + SFT"))
    extra = (["0-shot", "2-shot"] if args.with_prompting else []) + (
        ["self-learning"] if args.with_self_learning else []
    )
    for preset in extra:
        with timer(preset.replace("-", "_")):
            evaluated.append(evaluate(args, preset, base, split, preset))

    out["training"] = {
        preset: {
            "run": run.pk,
            "status": run.status,
            "error": run.error or None,
            "model": run.produced_model.name if run.produced_model_id else None,
            **(run.results.get("training") or {}),
        }
        for preset, run in trained.items()
    }
    out["seconds"] = timer.stages | {"total": round(sum(timer.stages.values()), 2)}
    report(args, evaluated, out)


def report(args, evaluated, out: dict) -> None:
    """Table 4 of the evaluated runs and each one's paired difference against base + CH; printed,
    and written under --out."""
    from webapp.pipeline.models import ModelVersion
    from webapp.training import comparison
    from webapp.training.models import TrainingRun

    base = ModelVersion.objects.get(is_default=True)
    rows = comparison.rows_of(
        TrainingRun.objects.filter(pk__in=[r.pk for r in evaluated]).select_related(
            "model_version__parent", "model_version__produced_by_run__dataset"
        )
    )
    table4 = comparison.table4(rows)
    # Every row against base + CH, item by item (the paper's reference for the CH rows).
    base_ch = next((r.pk for r in evaluated if r.kind == "heads" and r.model_version_id == base.pk), None)
    paired = comparison.paired_table(comparison.paired_rows(rows, reference_id=base_ch)) if base_ch else None
    out["results"] = [
        {
            "system": row[1],
            "macro_f1": row[2],
            "ci_low": row[3],
            "ci_high": row[4],
            "run": row[5],
            "held_out_macro_f1": _held(evaluated, row[5]),
        }
        for row in table4.rows
    ]
    out["paired_against_base_ch"] = [dict(zip(paired.columns, line)) for line in paired.rows] if paired else []
    print(json.dumps(out, indent=2, default=str))
    print(markdown(out))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
        (args.out / "table4.csv").write_text(table4.to_csv())
        if paired:
            (args.out / "paired.csv").write_text(paired.to_csv())
        (args.out / "results.md").write_text(markdown(out) + "\n")


def _held(runs, run_id):
    run = next((r for r in runs if r.pk == run_id), None)
    value = run.held_out_macro_f1 if run else None
    return None if value is None else round(100 * value, 1)


def markdown(out: dict) -> str:
    paired = {line["Run"]: line for line in out.get("paired_against_base_ch", [])}
    lines = [
        "| system | Macro F1 | 95% CI | Δ vs base + CH (paired 95% CI, p) | held-out tasks F1 | run |",
        "|---|---|---|---|---|---|",
    ]
    for row in out["results"]:
        lines.append(
            f"| {row['system']} | {row['macro_f1']} | {row['ci_low']}-{row['ci_high']} | "
            f"{_paired_cell(paired.get(row['run']), reference=row['system'] == 'base + CH')} | "
            f"{row['held_out_macro_f1'] if row['held_out_macro_f1'] is not None else '-'} | {row['run']} |"
        )
    if out.get("seconds"):
        lines += ["", "| stage | seconds |", "|---|---|"]
        lines += [f"| {stage} | {seconds} |" for stage, seconds in out["seconds"].items()]
    return "\n".join(lines)


def _paired_cell(line: dict | None, *, reference: bool) -> str:
    if line is None:
        return "reference" if reference else "-"
    if line["Δ Macro F1"] is None:
        return line["Pairing"]
    if line["Δ 95% CI low"] is None:
        return f"{line['Δ Macro F1']:+} ({line['Pairing']})"
    return f"{line['Δ Macro F1']:+} ({line['Δ 95% CI low']} to {line['Δ 95% CI high']}, p {line['p']:.3f})"


if __name__ == "__main__":
    main()
