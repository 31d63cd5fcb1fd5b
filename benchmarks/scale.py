"""Benchmark the app at corpus scale on PostgreSQL: a corpus of N notes with M stored relevance
maps, and the import, storage, pages, planning and dataset build over it; prints one JSON object.

    .venv/bin/python -m benchmarks scale                                     # 200,000 notes, 100,000 maps
    .venv/bin/python -m benchmarks scale --notes 50000 --maps 20000          # a first look
    .venv/bin/python -m benchmarks scale --notes 1900000 --maps 1000000 --reuse --redis-url redis://127.0.0.1:6379/15

The last line gives README's figures. On the 2-core development machine the quick run takes about
3.5 minutes and a 1.4 GB database; README's run, extrapolated from it, about 30 minutes (COPY of
the notes ~15, storing the maps ~6, the dataset build ~4, the pages ~3: the rare-word search
grows with the corpus) and about 14 GB of disk (notes with their search index ~9 GB, the dataset's
examples ~3 GB, maps ~1 GB). With --reuse the built database is kept, and a second run with the
same sizes only measures (about 10 minutes there).

Runs in a DEDICATED database (default `dsm_bench_scale` on 127.0.0.1, or --database-url): it is
created and migrated, filled, measured and dropped at the end (--keep to keep it). --reuse keeps
it too, and measures a database kept by an earlier --reuse run of the same sizes without building
it again (its jobs and datasets from that run are deleted first).

The build (timed, but not the subject):
- notes: ml.synthetic notes (English, --seed), generated in --workers processes and written with
  COPY into one corpus; the note triggers (integrity, search vector, counters) and indexes do
  their work as on any insert;
- the task catalog (load_task_catalog) and the default model version of the migrations;
- maps: 9 per note for the first M / 9 notes (the planner's per-note sample of the non-held-out
  tasks, so a job over these notes asks for exactly these pairs), tokens of words and punctuation,
  peaky scores (benchmarks.review_pages). They are stored ONLY through
  `RelevanceMap.objects.store`, in batches of --store-batch (a job chunk's worth by default), as a
  relevance worker stores them, whatever the map tables are underneath;
- VACUUM ANALYZE of the database, as autovacuum would have done before anyone opens a page.

Measured, each figure with the load average (1, 5, 15 min) at that moment:
1. import rate: the importer (webapp.corpus.importing.import_notes, what `manage.py import_notes`
   and the Import page run) on a slice of --import-notes further notes, into a corpus of their
   own deleted afterwards; the bulk COPY rate of the build is printed beside it, labelled;
2. map storage: every pipeline_* table by pg_total_relation_size (heap, TOAST and indexes), the
   map tables among them (all but jobs, chunks, model versions and profiles) summed and divided
   by the tokens stored, "all-in";
3. a relevance job of --prompts prompts (default 1M; 9 sampled tasks a note over the first notes,
   more tasks a note when the corpus is too small): `jobs.launch(enqueue=False)` and the planner
   in this process, as benchmarks/lifecycle.py does; with --redis-url (a Redis database of its
   own) also the sending of its chunk messages, which are purged from that database afterwards;
4. a DSM dataset build from every stored map (webapp.datasets.building): maps/s and peak RSS;
5. pages: server time through Django's test Client in this process (middleware, session, view,
   template; no network) for logged-in users of the role that uses the page, --warmup requests,
   then --requests timed: p50 and p95. Pages whose p95 is over 100 ms are listed in `slow_pages`.
Memory: this process's RSS sampled every 50 ms in each phase (benchmarks.database.PeakRss); the
generating workers are processes of their own and not counted.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing
import os
import re
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.database import (  # noqa: E402
    PeakRss,
    database_exists,
    database_for,
    drop_database,
    serve_pages_as_the_tests_do,
    use_database,
    use_new_database,
)
from benchmarks.machine import describe  # noqa: E402
from benchmarks.projects import default_project, member  # noqa: E402
from benchmarks.review_pages import offsets_of, peaky_scores  # noqa: E402

CORPUS = "bench-scale"
IMPORT_CORPUS = "bench-scale-import"
TASKS_PER_NOTE = 9
METHOD, TEMPLATE = "attnlrp", "en"
NOTES_PER_BLOCK = 2_000  # notes a worker generates for one COPY
MAP_NOTES_PER_BLOCK = 200  # notes a worker makes maps for (x 9 maps)
SLOW_MS = 100.0
# pipeline_* tables that are not map storage; every other pipeline_* table counts as maps.
NOT_MAP_TABLES = {
    "pipeline_modelversion",
    "pipeline_peakprofile",
    "pipeline_relevancejob",
    "pipeline_relevancejob_tasks",
    "pipeline_relevancechunk",
}
WORD = re.compile(r"[a-z]{5,}")


@dataclass(slots=True)
class StoredResult:
    """What `RelevanceMap.objects.store` reads of a relevance result (the fields of
    ml.relevance.RelevanceResult it uses), without importing the model code."""

    offsets: object  # int32 (n, 2)
    scores: object  # float32 (n,)
    target_token: str


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- worker processes


def _copy_text(value: str) -> str:
    """A value in COPY's text format."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


def _note_rows(spec) -> tuple[int, bytes]:
    """COPY rows (text format) of notes start .. start+n-1 of the synthetic corpus."""
    import hashlib

    from ml.synthetic import generate_notes

    corpus_id, start, n, seed, created = spec
    lines = []
    for note in generate_notes(n, seed=seed, language="en", start=start):
        digest = hashlib.sha256(note.text.encode("utf-8")).hexdigest()
        metadata = _copy_text(json.dumps(note.metadata, ensure_ascii=False))
        lines.append(f"{corpus_id}\t{_copy_text(note.id)}\t{_copy_text(note.text)}\t{digest}\t{metadata}\t{created}\n")
    return n, "".join(lines).encode("utf-8")


def _note_maps(spec) -> list:
    """[(external id, offsets, [(task slug, scores)])] of notes start .. start+n-1: the planner's
    sample of tasks for each note (as many as are left of the M maps), peaky scores."""
    import numpy as np

    from ml.masking import sample_tasks
    from ml.synthetic import make_note

    start, n, seed, slugs, total_maps = spec
    rng = np.random.default_rng([seed, start])
    out = []
    for i in range(start, start + n):
        note = make_note(i, seed=seed, language="en")
        offsets = offsets_of(note.text)
        slugs_here = sample_tasks(note.id, slugs, k=TASKS_PER_NOTE, seed=seed)[: total_maps - i * TASKS_PER_NOTE]
        out.append((note.id, offsets, [(slug, peaky_scores(rng, len(offsets))) for slug in slugs_here]))
    return out


def _ordered(pool, fn, specs, ahead: int):
    """fn over specs in the pool, results in order, at most `ahead` in flight (flat memory)."""
    pending = deque()
    for spec in specs:
        pending.append(pool.submit(fn, spec))
        if len(pending) >= ahead:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


# ---------------------------------------------------------------- the build


def build(args, pool) -> dict:
    """Catalog, corpus, notes (COPY) and maps (store), then VACUUM ANALYZE; returns the timings."""
    from django.core.management import call_command
    from django.db import connection

    from webapp.corpus.models import Corpus, Task

    out = {}
    if not Task.objects.exists():
        call_command("load_task_catalog", stdout=io.StringIO())
    corpus = Corpus.objects.create(project=default_project(), name=CORPUS, language="en", source="benchmarks/scale.py")
    out["notes"] = copy_notes(corpus, args.notes, args.seed, pool, args.workers)
    out["maps"] = store_maps(corpus, args, pool)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    out["vacuum_analyze_s"] = round(time.perf_counter() - started, 1)
    # The marker a --reuse run checks: the sizes built, and the tokens stored (for bytes a token).
    corpus.description = json.dumps(
        {"notes": args.notes, "maps": args.maps, "seed": args.seed, "tokens": out["maps"]["tokens"]}
    )
    corpus.save(update_fields=["description"])
    return out


def copy_notes(corpus, n: int, seed: int, pool, workers: int) -> dict:
    from django.db import connection
    from django.utils import timezone

    created = timezone.now().isoformat()
    connection.ensure_connection()
    raw = connection.connection  # psycopg 3, autocommit: each block commits
    specs = [(corpus.pk, s, min(NOTES_PER_BLOCK, n - s), seed, created) for s in range(0, n, NOTES_PER_BLOCK)]
    copy_s = 0.0
    started = time.perf_counter()
    with PeakRss() as rss:
        for _, block in _ordered(pool, _note_rows, specs, 2 * workers):
            t = time.perf_counter()
            with (
                raw.cursor() as cur,
                cur.copy(
                    "COPY corpus_note (corpus_id, external_id, text, content_hash, metadata, created) FROM STDIN"
                ) as copy,
            ):
                copy.write(block)
            copy_s += time.perf_counter() - t
    seconds = time.perf_counter() - started
    return {
        "notes": n,
        "seconds": round(seconds, 1),
        "notes_per_s": round(n / seconds) if seconds else None,
        "copy_s": round(copy_s, 1),
        "rss_mb_peak": round(rss.peak, 1),
        "load_1_5_15": load(),
    }


def store_maps(corpus, args, pool) -> dict:
    from ml.relevance import default_config_key
    from webapp.corpus.models import Note, Task
    from webapp.pipeline.models import RelevanceMap

    model = default_model()
    tasks = {t.slug: t for t in Task.objects.filter(held_out=False)}
    slugs = sorted(tasks)
    targets = {slug: _middle_word(t.description) for slug, t in tasks.items()}
    key = default_config_key(METHOD, TEMPLATE)
    n_notes = -(-args.maps // TASKS_PER_NOTE)
    specs = [
        (s, min(MAP_NOTES_PER_BLOCK, n_notes - s), args.seed, slugs, args.maps)
        for s in range(0, n_notes, MAP_NOTES_PER_BLOCK)
    ]
    stored = tokens = 0
    store_s = 0.0
    batch: list = []

    def flush():
        nonlocal stored, store_s, batch
        t = time.perf_counter()
        stored += RelevanceMap.objects.store(
            batch, model_version_id=model.pk, method=METHOD, template=TEMPLATE, config_key=key, job_id=None
        )
        store_s += time.perf_counter() - t
        batch = []

    started = time.perf_counter()
    with PeakRss() as rss:
        for notes in _ordered(pool, _note_maps, specs, 2 * args.workers):
            ids = dict(
                Note.objects.filter(corpus=corpus, external_id__in=[n[0] for n in notes]).values_list(
                    "external_id", "pk"
                )
            )
            for external_id, offsets, maps in notes:
                for slug, scores in maps:
                    batch.append(((ids[external_id], tasks[slug].pk), StoredResult(offsets, scores, targets[slug])))
                    tokens += len(scores)
                    if len(batch) == args.store_batch:
                        flush()
        if batch:
            flush()
    seconds = time.perf_counter() - started
    return {
        "maps": stored,
        "notes_with_maps": n_notes,
        "tokens": tokens,
        "mean_tokens_per_map": round(tokens / stored, 1) if stored else None,
        "model_version": model.name,
        "store_batch": args.store_batch,
        "seconds": round(seconds, 1),
        "store_s": round(store_s, 1),
        "store_maps_per_s": round(stored / store_s) if store_s else None,
        "rss_mb_peak": round(rss.peak, 1),
        "load_1_5_15": load(),
    }


def _middle_word(text: str) -> str:
    words = text.split()
    return words[len(words) // 2] if words else text


def default_model():
    from webapp.pipeline.models import ModelVersion

    return ModelVersion.objects.filter(is_default=True).first() or ModelVersion.objects.create(
        name="bench-scale-model", family="llama", path="bench-scale-model", is_default=True
    )


# ---------------------------------------------------------------- measurements


def import_slice(n: int, start: int, seed: int) -> dict:
    """The importer on n further synthetic notes, into a corpus of its own, deleted afterwards."""
    from benchmarks.import_notes import delete_corpus
    from ml.synthetic import generate_notes
    from webapp.corpus.importing import import_notes
    from webapp.corpus.models import Corpus

    corpus = Corpus.objects.create(project=default_project(), name=IMPORT_CORPUS, language="en")
    try:
        with tempfile.TemporaryDirectory(prefix="dsm-bench-scale-") as tmp:
            path = Path(tmp) / "slice.jsonl"
            with open(path, "w", encoding="utf-8") as out:
                for note in generate_notes(n, seed=seed, language="en", start=start):
                    out.write(json.dumps({"id": note.id, "text": note.text, "metadata": note.metadata}) + "\n")
            started = time.perf_counter()
            with PeakRss() as rss:
                report = import_notes(path, IMPORT_CORPUS)
            seconds = time.perf_counter() - started
        if not report.ok:
            raise SystemExit("the import slice failed:\n" + "\n".join(report.problem_lines()))
        return {
            "notes": report.created,
            "seconds": round(seconds, 2),
            "notes_per_s": round(report.created / seconds),
            "rss_mb_peak": round(rss.peak, 1),
            "load_1_5_15": load(),
        }
    finally:
        delete_corpus(corpus.pk)


def storage(tokens: int, maps: int) -> dict:
    """Every pipeline_* table's size, largest first; the map tables' total per token and per map."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid), pg_relation_size(c.oid), pg_indexes_size(c.oid), "
            "c.reltuples::bigint FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() AND c.relname LIKE 'pipeline\\_%%' "
            "ORDER BY 2 DESC, 1"
        )
        rows = cur.fetchall()
    tables = [
        {"table": name, "total_bytes": total, "heap_bytes": heap, "index_bytes": index, "rows_estimate": max(rows_, 0)}
        for name, total, heap, index, rows_ in rows
    ]
    map_tables = [t for t in tables if t["table"] not in NOT_MAP_TABLES]
    total = sum(t["total_bytes"] for t in map_tables)
    return {
        "bytes_per_token_all_in": round(total / tokens, 2) if tokens else None,
        "bytes_per_map_all_in": round(total / maps, 1) if maps else None,
        "map_tables_total_mb": round(total / 2**20, 1),
        "map_tables": [t["table"] for t in map_tables],
        "tokens": tokens,
        "maps": maps,
        "pipeline_tables": tables,
        "load_1_5_15": load(),
    }


def plan_job(corpus, model, prompts: int, redis_url: str | None):
    """Launch (enqueue=False) and plan a job of about `prompts` prompts; with a Redis URL, send
    its chunk messages (timed) and purge them. Returns (figures, job)."""
    from webapp.corpus.models import Task
    from webapp.lifecycle.heartbeat import Heartbeat
    from webapp.pipeline import jobs, planning
    from webapp.pipeline.models import RelevanceJob

    pool = list(Task.objects.filter(held_out=False))
    corpus.refresh_from_db()
    if corpus.note_count * TASKS_PER_NOTE >= prompts:
        k, note_filter = TASKS_PER_NOTE, {"limit": -(-prompts // TASKS_PER_NOTE)}
    else:  # a small corpus: more tasks a note, up to the whole pool
        k, note_filter = min(len(pool), -(-prompts // max(corpus.note_count, 1))), {}
    spec = jobs.JobSpec(corpus=corpus, model_version=model, tasks=pool, sample_k=k, note_filter=note_filter)
    launches = []
    for _ in range(3):
        started = time.perf_counter()
        job = jobs.launch(spec, enqueue=False)
        launches.append(time.perf_counter() - started)
    RelevanceJob.objects.filter(corpus=corpus, status="planning").exclude(pk=job.pk).delete()
    started = time.perf_counter()
    with PeakRss() as rss:
        claimed = planning.claim(job.pk, "bench-scale")
        with Heartbeat(claimed, held=planning.PLANNING, every=3600) as heart:
            planned = planning.plan(claimed, heart, enqueue=False)
    plan_s = time.perf_counter() - started
    job.refresh_from_db()
    out = {
        "prompts_asked": prompts,
        "prompts_planned": planned,
        "tasks_per_note": k,
        "notes": job.notes_planned,
        "chunks": job.chunk_count,
        "chunk_size": job.chunk_size,
        "launch_ms_median_of_3": round(1000 * statistics.median(launches), 1),
        "planning_s": round(plan_s, 2),
        "planning_prompts_per_s": round(planned / plan_s) if plan_s else None,
        "planning_rss_mb_peak": round(rss.peak, 1),
        "load_1_5_15": load(),
        "enqueue": enqueue(job) if redis_url else {"measured": False, "why": "no --redis-url"},
    }
    return out, job


def enqueue(job) -> dict:
    """Send the job's chunk messages to the benchmark's Redis database, timed, then purge them."""
    from webapp.lifecycle.queue import queue_of, waiting_messages
    from webapp.pipeline import jobs
    from webapp.taskqueue import app

    name = queue_of(jobs.RUN_CHUNK)
    waiting = waiting_messages(name)
    if waiting is None:
        return {"measured": False, "why": "the Redis database could not be reached"}
    if waiting:
        return {"measured": False, "why": f"queue {name!r} already holds {waiting} messages: use a Redis db of its own"}
    started = time.perf_counter()
    sent = jobs.enqueue_chunks(job.pk)
    seconds = time.perf_counter() - started
    with app.connection_for_write() as conn:
        purged = conn.default_channel.queue_purge(name)
    return {
        "measured": True,
        "queue": name,
        "messages": sent,
        "seconds": round(seconds, 2),
        "messages_per_s": round(sent / seconds) if seconds else None,
        "purged_afterwards": purged,
        "load_1_5_15": load(),
    }


def build_dataset(corpus, model):
    """A DSM dataset of every stored map with the default peak profile; (figures, dataset)."""
    from webapp.datasets import building
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline.models import PeakProfile

    profile = PeakProfile.objects.filter(is_default=True).first() or PeakProfile.objects.create(
        name="bench-scale-paper", is_default=True
    )
    dataset = DatasetVersion.objects.create(
        name=f"bench-scale-{int(time.time())}", corpus=corpus, model_version=model, profile=profile
    )
    dataset = building.claim(dataset.pk)
    started = time.perf_counter()
    with PeakRss() as rss:
        stats = building.build(dataset)
    seconds = time.perf_counter() - started
    return {
        "maps": stats["maps"],
        "examples": stats["examples"],
        "seconds": round(seconds, 1),
        "maps_per_s": round(stats["maps"] / seconds) if seconds else None,
        "rss_mb_peak": round(rss.peak, 1),
        "rss_anon_mb_peak": round(rss.peak_anon, 1),
        "load_1_5_15": load(),
    }, dataset


def search_words(corpus, sample: int = 2_000) -> tuple[str, str]:
    """A common word (in the most notes of the first `sample`) and a rare one (in the fewest, but
    in three at least: a word in one or two is mostly a typo of the generator's)."""
    from webapp.corpus.models import Note

    df: Counter = Counter()
    for text in Note.objects.filter(corpus=corpus).order_by("id").values_list("text", flat=True)[:sample]:
        df.update(set(WORD.findall(text.lower())))
    common = df.most_common(1)[0][0]
    rare = min((c, -len(w), w) for w, c in df.items() if c >= 3 or len(df) < 50)[2]
    return common, rare


def user(name: str, role: str):
    from django.contrib.auth.models import User

    account, _ = User.objects.get_or_create(username=name)
    return member(account, role)


def page_cases(corpus, job, dataset, args) -> list[tuple[str, str, str, dict, str]]:
    """(name, role, url, query, what) of every page timed."""
    from django.urls import reverse

    from webapp.corpus import search
    from webapp.corpus.models import Note

    notes = Note.objects.filter(corpus=corpus)
    deep_after = notes.order_by("id").values_list("id", flat=True)[max(0, int(corpus.note_count * 0.9) - 1)]
    common, rare = search_words(corpus)
    matches = {q: search.matching(notes, q, language=corpus.language).count() for q in (common, rare)}
    with_maps = -(-args.maps // TASKS_PER_NOTE)
    reviewed = notes.get(external_id=f"syn-{args.seed}-{with_maps // 2:07d}")
    browse = reverse("corpus:detail", args=[corpus.pk])
    return [
        ("home_clinician", "clinician", reverse("home"), {}, "home page of a clinician (notes waiting for review)"),
        ("home_researcher", "researcher", reverse("home"), {}, "home page of a researcher"),
        ("corpus_list", "researcher", reverse("corpus:list"), {}, "the corpora"),
        ("corpus_notes_first_page", "researcher", browse, {}, "note browser, first page"),
        ("corpus_notes_deep_page", "researcher", browse, {"after": deep_after}, "note browser at 90% (?after=)"),
        ("corpus_search_common_word", "researcher", browse, {"q": common}, f"?q={common} ({matches[common]} notes)"),
        ("corpus_search_rare_word", "researcher", browse, {"q": rare}, f"?q={rare} ({matches[rare]} notes)"),
        (
            "review_note",
            "clinician",
            reverse("review:note", args=[corpus.pk, reviewed.pk]),
            {},
            "review page of a note with 9 maps, default selection",
        ),
        (
            "review_queue",
            "clinician",
            reverse("review:queue", args=[corpus.pk]),
            {},
            "review queue: finds the next pair and redirects to it (302)",
        ),
        ("relevance_job", "researcher", reverse("pipeline:job_detail", args=[job.pk]), {}, "the planned job's page"),
        (
            "dataset_statistics",
            "researcher",
            reverse("datasets:detail", args=[dataset.pk]),
            {},
            "the built dataset's page with its statistics",
        ),
    ]


def time_pages(cases, requests: int, warmup: int) -> dict:
    from django.test import Client

    clients = {}
    out = {}
    for name, role, url, query, what in cases:
        if role not in clients:
            clients[role] = Client()
            clients[role].force_login(user(f"bench-{role}", role))
        client = clients[role]
        statuses, times = set(), []
        for k in range(warmup + requests):
            started = time.perf_counter()
            response = client.get(url, query)
            elapsed = time.perf_counter() - started
            statuses.add(response.status_code)
            if k >= warmup:
                times.append(elapsed)
        ms = sorted(1000 * s for s in times)
        p95 = ms[min(len(ms) - 1, math.ceil(0.95 * len(ms)) - 1)]
        out[name] = {
            "p50_ms": round(statistics.median(ms), 1),
            "p95_ms": round(p95, 1),
            "max_ms": round(ms[-1], 1),
            "requests": len(ms),
            "status": sorted(statuses),
            "role": role,
            "what": what,
            "over_100ms_p95": p95 > SLOW_MS,
            "load_1_5_15": load(),
        }
    return out


# ---------------------------------------------------------------- the run


def database_mb() -> float:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT pg_database_size(current_database())")
        return round(cur.fetchone()[0] / 2**20, 1)


def open_database(args) -> dict | None:
    """Create and migrate the database, or (--reuse) open a kept one: its build's marker, else None."""
    from django.core.management import call_command

    reuse = args.reuse and database_exists(args.database_url)
    (use_database if reuse else use_new_database)(args.database_url)
    call_command("migrate", verbosity=0)
    if not reuse:
        return None
    from webapp.corpus.models import Corpus

    corpus = Corpus.objects.filter(name=CORPUS).first()
    name = database_for(args.database_url)[0]
    try:
        marker = json.loads(corpus.description) if corpus else None
    except ValueError:
        marker = None
    if not marker:
        raise SystemExit(f"database {name} holds no finished build: drop it (DROP DATABASE {name}) and run again")
    wanted = {"notes": args.notes, "maps": args.maps, "seed": args.seed}
    if {k: marker.get(k) for k in wanted} != wanted:
        raise SystemExit(
            f"database {name} was built with {marker}, not {wanted}: drop it (DROP DATABASE {name}) "
            "or pass another --database-url"
        )
    return marker


def forget_earlier_runs(corpus) -> None:
    """A reused database: the jobs and datasets an earlier run made go, so this run measures the same."""
    from benchmarks.import_notes import delete_corpus
    from webapp.corpus.models import Corpus
    from webapp.datasets.models import DatasetVersion
    from webapp.pipeline.models import RelevanceJob

    DatasetVersion.objects.filter(corpus=corpus).delete()
    RelevanceJob.objects.filter(corpus=corpus).delete()
    for leftover in Corpus.objects.filter(name=IMPORT_CORPUS):
        delete_corpus(leftover.pk)


def main(argv: list[str] | None = None) -> None:
    serve_pages_as_the_tests_do()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=200_000, help="notes in the corpus (default 200000)")
    parser.add_argument("--maps", type=int, default=100_000, help="relevance maps, 9 a note (default 100000)")
    parser.add_argument("--prompts", type=int, default=1_000_000, help="prompts of the planned job (default 1M)")
    parser.add_argument("--import-notes", type=int, default=5_000, help="notes of the importer's slice")
    parser.add_argument("--store-batch", type=int, default=64, help="maps a store() call (default: a job chunk)")
    parser.add_argument("--requests", type=int, default=20, help="timed requests a page (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests a page first (default 3)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="processes generating data")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/dsm_bench_scale",
        help="a database this script creates and drops",
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    parser.add_argument("--reuse", action="store_true", help="keep the database, and measure a kept one again")
    parser.add_argument("--redis-url", help="a Redis database of its own, to time sending the job's messages")
    args = parser.parse_args(argv)
    if args.notes < 1 or not 0 < args.maps <= args.notes * TASKS_PER_NOTE:
        parser.error("need --notes >= 1 and 0 < --maps <= 9 x --notes")
    # No message of this run may reach a broker that is not the benchmark's own.
    os.environ["CELERY_BROKER_URL"] = args.redis_url or "memory://"

    started = time.perf_counter()
    marker = open_database(args)
    result = {
        "notes": args.notes,
        "maps": args.maps,
        "database": database_for(args.database_url)[0],
        "cpu_count": os.cpu_count(),
        "reused": marker is not None,
        "load_1_5_15_start": load(),
    }
    try:
        from webapp.corpus.models import Corpus

        if marker is None:
            with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                result["build"] = build(args, pool)
            tokens = result["build"]["maps"]["tokens"]
        else:
            tokens = marker["tokens"]
        corpus = Corpus.objects.get(name=CORPUS)
        model = default_model()
        if marker is not None:
            forget_earlier_runs(corpus)
        result["map_storage"] = storage(tokens, args.maps)
        result["import"] = import_slice(args.import_notes, args.notes, args.seed)
        result["import_rate_notes_per_s"] = result["import"]["notes_per_s"]
        result["import_rate_source"] = (
            f"the importer (webapp.corpus.importing.import_notes) on {args.import_notes} notes beside the corpus"
        )
        if "build" in result:
            result["copy_rate_notes_per_s"] = result["build"]["notes"]["notes_per_s"]
        result["job"], job = plan_job(corpus, model, args.prompts, args.redis_url)
        result["dataset_build"], dataset = build_dataset(corpus, model)
        result["dataset_build_maps_per_s"] = result["dataset_build"]["maps_per_s"]
        pages = time_pages(page_cases(corpus, job, dataset, args), args.requests, args.warmup)
        result["pages"] = pages
        result["slow_pages"] = [name for name, page in pages.items() if page["over_100ms_p95"]]
        result["peak_rss_mb_process"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        result["database_mb_end"] = database_mb()
        result["load_1_5_15_end"] = load()
        result["total_s"] = round(time.perf_counter() - started, 1)
    finally:
        if not (args.keep or args.reuse):
            drop_database(args.database_url)
    result["machine"] = describe()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
