"""Benchmark the job lifecycle at scale on PostgreSQL; prints one JSON object.

    .venv/bin/python benchmarks/lifecycle.py --notes 111112        # 1M prompts (9 tasks a note)

Makes its own database (--database-url, created here and dropped at the end unless --keep), fills
a corpus with short notes by one INSERT ... SELECT, then measures:
* launch: `jobs.launch()` of a job of notes x 9 sampled tasks, the work the web request does
  (checks and one row); baseline, in the same process: planning that job into chunks, which the
  launch request did before planning moved to a worker;
* planning: the planner's rate (prompts a second) writing those chunks;
* settle: claim + finish of one chunk (its counters and the end check) on a job of 1,000 chunks
  and on one of 100,000, against the former settle (a SUM over the job's chunks) on the same rows;
* poll: the job page's progress on both jobs, against the former aggregate over the chunks.
Every figure is a median over repeated runs; the machine's load average is printed beside them.
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import drop_database, use_new_database  # noqa: E402
from benchmarks.machine import describe  # noqa: E402
from benchmarks.projects import default_project  # noqa: E402


def _timed(fn, repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return seconds


def _ms(seconds: list[float]) -> float:
    return round(1000 * statistics.median(seconds), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=111_112, help="notes in the corpus (x 9 tasks = prompts)")
    parser.add_argument("--settles", type=int, default=200, help="chunks claimed and finished per job")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_lifecycle",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()
    use_new_database(args.database_url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    from django.db.models import Count, Exists, OuterRef, Subquery, Sum
    from django.db.models.functions import Coalesce

    from webapp.corpus.models import Corpus, Task
    from webapp.lifecycle.heartbeat import Heartbeat
    from webapp.pipeline import chunks, jobs, planning
    from webapp.pipeline.models import ModelVersion, RelevanceChunk, RelevanceJob
    from webapp.pipeline.progress import job_progress

    load_before = os.getloadavg()
    corpus = Corpus.objects.create(project=default_project(), name="bench", language="en")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO corpus_note (corpus_id, external_id, text, content_hash, metadata, created) "
            "SELECT %s, 'n' || i, 'Heart rate ' || i || ' bpm.', "
            "encode(sha256(convert_to('Heart rate ' || i || ' bpm.', 'UTF8')), 'hex'), '{}', now() "
            "FROM generate_series(1, %s) AS i",
            [corpus.pk, args.notes],
        )
        cursor.execute("ANALYZE corpus_note")
    if not Task.objects.exists():
        call_command("load_task_catalog", verbosity=0)
    model = ModelVersion.objects.get_or_create(name="bench-model", defaults={"family": "llama", "path": "x"})[0]
    tasks = list(Task.objects.filter(held_out=False))

    def spec(chunk_size):
        return jobs.JobSpec(corpus=corpus, model_version=model, tasks=tasks, sample_k=9, chunk_size=chunk_size)

    def plan(job):
        claimed = planning.claim(job.pk, "bench")
        with Heartbeat(claimed, held=planning.PLANNING, every=3600) as heart:
            return planning.plan(claimed, heart, enqueue=False)

    result = {"notes": args.notes, "prompts": args.notes * 9}
    launches = _timed(lambda: jobs.launch(spec(64), enqueue=False), 5)
    result["launch_ms"] = _ms(launches)
    job = RelevanceJob.objects.order_by("-pk").first()
    started = time.perf_counter()
    planned = plan(job)
    plan_seconds = time.perf_counter() - started
    result.update(
        planning_seconds=round(plan_seconds, 2),
        planning_prompts_per_s=round(planned / plan_seconds),
        baseline_launch_that_plans_ms=round(1000 * plan_seconds + result["launch_ms"], 1),
        launch_speedup=round((1000 * plan_seconds + result["launch_ms"]) / result["launch_ms"]),
    )
    RelevanceJob.objects.filter(status="planning").delete()

    def old_settle_sum(job_id):  # the former per-chunk settle: SUM over the job's chunks
        done = (
            RelevanceChunk.objects.filter(job=OuterRef("pk"), status="done")
            .values("job")
            .annotate(s=Sum("size"))
            .values("s")
        )
        RelevanceJob.objects.filter(pk=job_id).update(done=Coalesce(Subquery(done), 0))
        RelevanceJob.objects.filter(pk=job_id).exclude(
            Exists(RelevanceChunk.objects.filter(job=OuterRef("pk"), status__in=("queued", "running")))
        ).exists()

    def old_progress(job):  # the former page poll: an aggregate over the job's chunks
        list(job.chunks.values("status").annotate(n=Count("pk"), size=Sum("size"), seconds=Sum("seconds")))

    for label, chunk_size in (
        ("1k_chunks", -(-args.notes * 9 // 1000)),
        ("100k_chunks", max(1, args.notes * 9 // 100_000)),
    ):
        job = jobs.launch(spec(chunk_size), enqueue=False)
        plan(job)
        job.refresh_from_db()
        ids = list(job.chunks.order_by("index").values_list("pk", flat=True)[: args.settles])
        # half of them done first, so the old SUM has rows to add up
        settle = []
        for chunk_id in ids:
            chunk = chunks.claim(chunk_id, "bench")
            started = time.perf_counter()
            chunks.finish(chunk, 0.1, chunks.Outcome())
            settle.append(time.perf_counter() - started)
        job.refresh_from_db()
        old = _timed(lambda job=job: old_settle_sum(job.pk), args.settles)
        poll = _timed(lambda job=job: job_progress(job), 50)
        old_poll = _timed(lambda job=job: old_progress(job), 50)
        result[label] = {
            "chunks": job.chunk_count,
            "settle_ms": _ms(settle),
            "baseline_sum_settle_ms": _ms(old),
            "poll_ms": _ms(poll),
            "baseline_aggregate_poll_ms": _ms(old_poll),
        }
    result["loadavg_before"] = [round(x, 2) for x in load_before]
    result["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    result["machine"] = describe()
    print(json.dumps(result, indent=2))
    if not args.keep:
        drop_database(args.database_url)


if __name__ == "__main__":
    main()
