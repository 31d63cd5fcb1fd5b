"""Benchmark the review report on PostgreSQL: the page and its CSV served from the stored figures
(webapp.review.report_store), against computing them on every request as before; prints JSON.

    .venv/bin/python -m benchmarks review-report                 # 20,000 peaks x 5 reviewers
    .venv/bin/python -m benchmarks review-report --peaks 2000 --requests 10

Runs in a DEDICATED database (default `dsm_bench_review_report`; --database-url), created,
migrated and dropped at the end (--keep keeps it). Data: --peaks peaks over --peaks / 5 notes and
4 tasks, each decided by every one of --reviewers reviewers (a reviewer keeps a peak with
probability 0.85 and follows the majority 80% of the time), written with bulk_create.

Measured in this process through Django's test Client (middleware, session, view, template):
1. the first computation: what the worker does once per change (report_store.run), seconds;
2. page and CSV: --requests GETs each after the first computation; median and p95; the page looks
   at whether the decisions changed once per REPORT_STAMP_SECONDS (printed); `page_looking_every_load`
   is the page with REPORT_STAMP_SECONDS=0 (a count over the decisions on every load, the worst case);
3. stale: after one decision changes, the page still answers from the last figures with the note
   that newer ones are coming (and queues the new computation once); median and p95 of --requests
   GETs, each looking at the decisions (REPORT_STAMP_SECONDS=0);
4. baseline, in the same process on the same data: the report as it was computed on every load
   (reports.task_reports + overall_agreement + reviewer_accuracy, and the CSV), --baseline-requests
   times. The machine's load average is printed: on a shared machine times move with it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time

from benchmarks.database import database_for, drop_database, serve_pages_as_the_tests_do, use_new_database
from benchmarks.machine import describe
from benchmarks.projects import default_project, member
from benchmarks.review_pages import summary

TASKS = 4
PEAKS_PER_NOTE = 5
TEXT = " ".join(f"word{i}" for i in range(200))


def insert(n_peaks: int, n_reviewers: int, seed: int) -> dict:
    import numpy as np
    from django.contrib.auth.models import User

    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion
    from webapp.review.models import PeakDecision

    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    corpus = Corpus.objects.create(project=default_project(), name="bench-report", language="en")
    tasks = [
        Task.objects.create(slug=f"bench-report-{i}", description=f"bench task {i}", options=["y", "n"])
        for i in range(TASKS)
    ]
    model = ModelVersion.objects.create(name="bench-report-model", family="llama", path="bench-report-model")
    reviewers = [
        member(User.objects.create_user(f"bench-rev-{i}", password="bench-password-123"), "clinician")
        for i in range(n_reviewers)
    ]
    n_notes = -(-n_peaks // PEAKS_PER_NOTE)
    texts = [f"{TEXT} {i}" for i in range(n_notes)]
    notes = Note.objects.bulk_create(
        [
            Note(corpus=corpus, external_id=f"n{i}", text=text, content_hash=hashlib.sha256(text.encode()).hexdigest())
            for i, text in enumerate(texts)
        ],
        batch_size=2000,
    )
    rows = []
    for p in range(n_peaks):
        note, task = notes[p // PEAKS_PER_NOTE], tasks[p % TASKS]
        start = (p % PEAKS_PER_NOTE) * 30
        majority = rng.random() < 0.85
        for reviewer in reviewers:
            kept = majority if rng.random() < 0.8 else not majority
            rows.append(
                PeakDecision(
                    note=note, task=task, model_version=model, method="attnlrp", template="en", config_key="bench",
                    start=start, end=start + 6, decision="accept" if kept else "reject", reviewer=reviewer,
                    active_ms=int(rng.integers(1500, 9000)),
                )
            )  # fmt: skip
    PeakDecision.objects.bulk_create(rows, batch_size=5000)
    return {
        "corpus": corpus,
        "reviewers": reviewers,
        "peaks": n_peaks,
        "decisions": len(rows),
        "notes": n_notes,
        "insert_s": round(time.perf_counter() - started, 1),
    }


def compute_once() -> float:
    from webapp.lifecycle import units
    from webapp.review import report_store
    from webapp.review.models import ReportSnapshot

    snapshot = ReportSnapshot.objects.get()
    claimed = units.claim(ReportSnapshot, snapshot.pk, worker="benchmark")
    started = time.perf_counter()
    report_store.run(claimed)
    return time.perf_counter() - started


def timed_gets(client, query: dict, n: int, stream: bool = False, expect: str = "") -> dict:
    from django.urls import reverse

    url = reverse("review:report")
    times = []
    for _ in range(n):
        started = time.perf_counter()
        response = client.get(url, query)
        body = b"".join(response.streaming_content) if stream else response.content
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
        assert expect.encode() in body, f"no {expect!r} in the answer"
    return {**summary(times), "bytes": len(body)}


def baseline(user, corpus, n: int) -> dict:
    from webapp.review import reports

    page, csv = [], []
    for _ in range(n):
        started = time.perf_counter()
        rows = reports.task_reports(user, corpus)
        reports.overall_agreement(rows)
        reports.reviewer_accuracy(user, corpus)
        page.append(time.perf_counter() - started)
        started = time.perf_counter()
        rows = reports.task_reports(user, corpus)
        "".join(reports.agreement_csv(rows, reports.overall_agreement(rows)))
        csv.append(time.perf_counter() - started)
    return {
        "method": "the figures computed on every request as before (task_reports, overall_agreement, "
        "reviewer_accuracy; the CSV: task_reports, overall_agreement, agreement_csv), no page around them",
        "page_figures": summary(page),
        "csv": summary(csv),
    }


def main(argv: list[str]) -> int:
    serve_pages_as_the_tests_do()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peaks", type=int, default=20_000)
    parser.add_argument("--reviewers", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40, help="timed GETs of the page and of the CSV")
    parser.add_argument("--baseline-requests", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/dsm_bench_review_report")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args(argv)

    use_new_database(args.database_url)
    from django.core.management import call_command
    from django.test import Client

    result = {
        "database": database_for(args.database_url)[0],
        "cpu_count": os.cpu_count(),
        "load_average_start": os.getloadavg(),
    }
    try:
        call_command("migrate", verbosity=0)
        data = insert(args.peaks, args.reviewers, args.seed)
        result["data"] = {k: data[k] for k in ("peaks", "decisions", "notes", "insert_s")} | {
            "reviewers": args.reviewers
        }
        reader = data["reviewers"][0]
        client = Client()
        client.force_login(reader)
        query = {"corpus": data["corpus"].pk}
        client.get("/review/reports/", query)  # queues the first computation
        result["first_computation_s"] = round(compute_once(), 2)
        client.get("/review/reports/", query)
        result["page"] = timed_gets(client, query, args.requests, expect="Figures computed")
        result["csv"] = timed_gets(client, {**query, "format": "csv"}, args.requests, stream=True)
        from django.conf import settings

        result["report_stamp_seconds"] = settings.REPORT_STAMP_SECONDS
        stamp_seconds, settings.REPORT_STAMP_SECONDS = settings.REPORT_STAMP_SECONDS, 0
        result["page_looking_every_load"] = timed_gets(client, query, args.requests)
        from webapp.review.models import PeakDecision

        changed = PeakDecision.objects.filter(note__corpus=data["corpus"]).first()
        changed.decision = "reject" if changed.decision == "accept" else "accept"
        changed.save()
        result["stale_page"] = timed_gets(client, query, args.requests, expect="newer ones")
        settings.REPORT_STAMP_SECONDS = stamp_seconds
        result["recomputation_s"] = round(compute_once(), 2)
        result["baseline"] = baseline(reader, data["corpus"], args.baseline_requests)
        result["ratio_baseline_over_measured_page_median"] = round(
            result["baseline"]["page_figures"]["median_ms"] / result["page"]["median_ms"], 1
        )
        result["ratio_baseline_over_measured_csv_median"] = round(
            result["baseline"]["csv"]["median_ms"] / result["csv"]["median_ms"], 1
        )
        result["target_p95_ms"] = 300
        result["met"] = result["page"]["p95_ms"] < 300 and result["csv"]["p95_ms"] < 300
    finally:
        if not args.keep:
            drop_database(args.database_url)
    result["load_average_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    result["machine"] = describe()
    print(json.dumps(result, indent=2, default=str))
    return 0
