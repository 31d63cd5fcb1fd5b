"""The "real notes" run: CodiEsp background notes (English machine translation) -> relevance
maps on the default SmolLM2 model -> a DSM dataset; times each stage and prints JSON.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dsm_codiesp \
        .venv/bin/python scripts/run_codiesp_pipeline.py --notes 200

Stages (each timed):
1. migrate the database (a no-op when it is up to date) and `manage.py load_task_catalog`;
2. import the first N notes of background.jsonl that have `text_en_mt` into the corpus
   `codiesp-background-en` through the importer (`webapp.corpus.importing.import_notes`);
   importing the same notes again changes nothing;
3. plan a relevance job on the default model version: those N notes x 9 catalog tasks
   sampled per note (the paper's k-of-N, seeded), AttnLRP, the English template;
4. load the model once (webapp.pipeline.modelcache), then run every chunk in THIS process
   through the worker's own task function (`workers.relevance.run_chunk`), or, with
   --worker, enqueue the chunks and wait for the workers of the relevance queue;
5. build a DSM dataset from the job's maps with the default peak profile through
   `webapp.datasets.building.build` (skipped, and said so, if that module is absent).

Prompts already stored (same note, task, model, method, template) are not computed again, so a
second run measures nothing new: use a fresh database, or --corpus with another name and a
different --seed. AttnLRP patches this process (lxt); it is a script, it does not train.

On a CPU shared with other work, set OMP_NUM_THREADS=1: measured on this project's 2-core
machine at load ~7, one SmolLM2 AttnLRP prompt took 2.4 s with one torch thread and 10 s with
two (oversubscribed threads spin). A dedicated worker machine keeps torch's default.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from codiesp import Timer, write_notes  # noqa: E402  (scripts/, beside this file)

from ml.relevance import METHODS  # noqa: E402
from ml.relevance.methods import DEFAULT as DEFAULT_METHOD  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

SOURCE = Path("/work/shared/data/codiesp/background.jsonl")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=200, help="how many notes to import and run (default 200)")
    parser.add_argument("--source", type=Path, default=SOURCE, help="CodiEsp background.jsonl")
    parser.add_argument("--corpus", default="codiesp-background-en")
    parser.add_argument("--k", type=int, default=9, help="catalog tasks sampled per note (default 9)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS)
    parser.add_argument("--chunk-size", type=int, default=64)
    parser.add_argument(
        "--worker",
        action="store_true",
        help="enqueue the chunks for the relevance workers instead of running them here",
    )
    parser.add_argument("--no-dataset", action="store_true", help="stop after the relevance maps")
    return parser.parse_args()


def run_inline(job) -> None:
    from workers.relevance import run_chunk

    for chunk_id in job.chunks.order_by("index").values_list("pk", flat=True):
        run_chunk(chunk_id)


def wait_for_workers(job) -> None:
    from webapp.pipeline.jobs import enqueue_chunks
    from webapp.pipeline.models import RelevanceJob

    enqueue_chunks(job.pk)
    while RelevanceJob.objects.get(pk=job.pk).is_active:
        time.sleep(2)


def build_dataset(job, timer) -> dict:
    try:
        from webapp.datasets import building
    except ImportError:  # the dataset stage is added by webapp.datasets.building
        return {"skipped": "webapp.datasets.building is not available"}
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline.models import PeakProfile

    name = f"{job.corpus.name}-job{job.pk}"
    dataset = DatasetVersion.objects.create(
        name=name,
        version=DatasetVersion.next_version(name),
        corpus=job.corpus,
        model_version=job.model_version,
        method=job.method,
        template=job.template,
        profile=PeakProfile.objects.get(is_default=True),
    )
    dataset.jobs.set([job])
    with timer("dataset_build"):
        dataset = building.claim(dataset.pk)
        stats = building.build(dataset)
    return {"dataset": dataset.pk, "examples": stats.get("examples"), "stats": stats}


def main():
    args = parse_args()
    if not args.source.is_file():
        sys.exit(f"{args.source} is not there: this run needs the CodiEsp background notes")

    import django

    django.setup()
    from django.core.management import call_command
    from django.db.models import Avg, Count, Sum
    from django.db.models.functions import Length

    from webapp.corpus.importing import import_notes
    from webapp.corpus.models import Corpus
    from webapp.pipeline import jobs, planning
    from webapp.pipeline.modelcache import loaded_model
    from webapp.pipeline.models import ModelVersion, NoteTokens, RelevanceJob, RelevanceMap
    from webapp.pipeline.progress import job_progress

    timer = Timer()
    with timer("migrate"):
        call_command("migrate", verbosity=0)
    with timer("load_task_catalog"):
        call_command("load_task_catalog", stdout=open(os.devnull, "w"))

    with tempfile.TemporaryDirectory() as tmp, timer("import_notes"):
        path = Path(tmp) / "codiesp-background-en.jsonl"
        ids = write_notes(args.source, args.notes, path)
        report = import_notes(path, args.corpus, language="en", create=True, actor="run_codiesp_pipeline")
    if not report.ok:
        sys.exit("import failed:\n" + "\n".join(report.problem_lines()))

    model_version = ModelVersion.objects.get(is_default=True)
    spec = jobs.JobSpec(
        corpus=Corpus.objects.get(name=args.corpus),
        model_version=model_version,
        method=args.method,
        template="en",
        task_selection=RelevanceJob.TaskSelection.SAMPLE,
        sample_k=args.k,
        seed=args.seed,
        note_filter={"external_ids": ids},
        chunk_size=args.chunk_size,
    )
    with timer("plan_job"):
        job = jobs.launch(spec, actor="run_codiesp_pipeline", enqueue=False)
        planning.plan_now(job)

    if args.worker:
        with timer("relevance"):
            wait_for_workers(job)
    else:
        with timer("load_model"):
            loaded = loaded_model(model_version)
        with timer("relevance"):
            run_inline(job)
    job.refresh_from_db()
    progress = job_progress(job)
    computed = RelevanceMap.objects.filter(job=job)
    maps = RelevanceMap.objects.filter(
        note__corpus=job.corpus,
        note__external_id__in=ids,
        model_version=model_version,
        config__method=job.method,
        config__template=job.template,
    )
    # a map's bytes: its float16 scores, plus the note's offsets stored once for all its maps
    sizes = maps.aggregate(maps=Count("pk"), tokens=Avg("n_tokens"), score_bytes=Sum(Length("data")))
    offset_bytes = (
        NoteTokens.objects.filter(pk__in=maps.values("tokens_id")).aggregate(b=Sum(Length("offsets")))["b"] or 0
    )
    sizes["total_bytes"] = (sizes["score_bytes"] or 0) + offset_bytes
    sizes["bytes"] = sizes["total_bytes"] / sizes["maps"] if sizes["maps"] else 0
    result = {
        "notes": len(ids),
        "imported": {"created": report.created, "unchanged": report.unchanged},
        "job": job.pk,
        "status": job.status,
        "prompts": job.total,
        "chunks": job.chunks.count(),
        "maps_total": maps.count(),
        "maps_computed_by_this_job": computed.count(),
        "prompts_per_second": round(computed.count() / timer.stages["relevance"], 3) if computed.exists() else None,
        "prompts_per_second_per_worker": round(progress.prompts_per_second, 3) if progress.prompts_per_second else None,
        "storage_bytes_per_map": round(sizes["bytes"] or 0, 1),
        "storage_bytes_total": sizes["total_bytes"] or 0,
        "tokens_per_map": round(sizes["tokens"] or 0, 1),
        "errors": progress.errors,
    }
    if not args.worker:
        result["model"] = {"name": model_version.name, "device": str(loaded.device), "dtype": str(loaded.dtype)}
    if not args.no_dataset and job.status == "done":
        result["dataset"] = build_dataset(job, timer)
    result["seconds"] = timer.stages
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
