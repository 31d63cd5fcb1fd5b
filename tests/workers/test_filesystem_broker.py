"""The `make demo` path end to end, on the embedded default: no PostgreSQL, no Redis.

Every step is a separate process with a clean environment (no DATABASE_URL, REDIS_URL or
CELERY_BROKER_URL; DATA_DIR a temporary folder), so settings fall back to a SQLite file at
DATA_DIR/db.sqlite3 and kombu's filesystem broker under DATA_DIR/broker, as `make demo` does:
`manage.py migrate`, `load_task_catalog`, `load_demo_corpus`, `launch_relevance_job` (2 notes x
heart rate on the default SmolLM2 model, chunks of 1, so two messages), then a real
`celery -A workers worker --queues relevance --pool solo` consumes the two messages from the
broker folder and computes AttnLRP relevance. The test reads the SQLite file directly.

Recovery on the same setup: a relevance worker SIGKILLed while it holds a chunk (a tiny random
Llama registered with `manage.py register_model`, 6 notes x 2 tasks in chunks of 2) loses its
message with it (the filesystem transport deletes a message's file on delivery), so only the
recovery sweeper of the next worker, reading heartbeats from the SQLite file, can queue the chunk
again (webapp.lifecycle.recovery); the job completes with one map per pair, without Resume.

`migrate` and `load_task_catalog` run once for the module (migrating an empty file is most of a
test's setup); each test starts from a copy of the SQLite file they leave.
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.workers.conftest import WorkerProcess

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

NOTES_IN_CORPUS = 5
JOB_NOTES = 2
TASK = "heart-rate"
TIMEOUT = 300
# What the environment may pass on to the embedded processes; nothing names a server.
KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "VIRTUAL_ENV")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A folder holding the converted default model ($MODEL_DIR or var/models, else converted)."""
    from tests.ml.conftest import real_model_dir

    return real_model_dir(tmp_path_factory.mktemp("models"))


@pytest.fixture
def embedded_env(tmp_path, model_dir):
    return clean_env(tmp_path, model_dir)


@pytest.fixture(scope="module")
def catalog_db(tmp_path_factory) -> Path:
    """The SQLite file `manage.py migrate` and `load_task_catalog` leave, run as `make demo` runs
    them: separate processes in a clean environment (neither reads the models)."""
    tmp_path = tmp_path_factory.mktemp("catalog")
    env = clean_env(tmp_path, tmp_path / "models")
    db = Path(env["DATA_DIR"]) / "db.sqlite3"
    manage(env, "migrate", "--no-input", "-v", "0")
    assert db.is_file()
    assert "created" in manage(env, "load_task_catalog")
    return db


def start_from(catalog_db: Path, env: dict) -> Path:
    """A copy of catalog_db as env's database, through SQLite's backup (whole and consistent, a
    write-ahead log included)."""
    db = Path(env["DATA_DIR"]) / "db.sqlite3"
    source, target = sqlite3.connect(f"file:{catalog_db}?mode=ro", uri=True), sqlite3.connect(db)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    return db


def clean_env(tmp_path: Path, model_dir) -> dict:
    """The environment of an embedded process: DATA_DIR under tmp_path, nothing naming a server."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()  # as `manage.py rundemo` does before migrating
    env = {k: os.environ[k] for k in KEEP if k in os.environ}
    env.update(
        {
            "DATA_DIR": str(data_dir),
            "MODEL_DIR": str(model_dir),
            "DEBUG": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "TOKENIZERS_PARALLELISM": "false",
            # Unreachable on purpose: a process that still found a server would fail, not pass quietly.
            "PGHOST": "/nonexistent",
            "PGPORT": "1",
        }
    )
    assert not {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"} & set(env)
    return env


def manage(env, *args) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def query(db: Path, sql: str, *params):
    # Each read opens and closes its own connection: no lock outlives the read.
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        for attempt in range(50):
            try:
                return conn.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:  # "database is locked" past the timeout: read again
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.1)
    finally:
        conn.close()


def queued_messages(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "broker" / "queue").glob("*.relevance.msg"))


def test_a_relevance_job_runs_on_sqlite_and_the_filesystem_broker_in_real_processes(embedded_env, catalog_db, tmp_path):
    data_dir = Path(embedded_env["DATA_DIR"])
    db = start_from(catalog_db, embedded_env)
    manage(embedded_env, "load_demo_corpus", "--corpus", "demo-ed", "--notes", str(NOTES_IN_CORPUS))
    assert query(
        db, "SELECT count(*) FROM corpus_note n JOIN corpus_corpus c ON c.id = n.corpus_id WHERE c.name = 'demo-ed'"
    ) == [(NOTES_IN_CORPUS,)]
    out = manage(
        embedded_env,
        "launch_relevance_job",
        "demo-ed",
        "--tasks",
        "list",
        "--task",
        TASK,
        "--limit",
        str(JOB_NOTES),
        "--chunk-size",
        "1",
    )
    assert f"{JOB_NOTES} prompts in {JOB_NOTES} chunks, queued" in out, out
    [(job_id, status, total, model)] = query(
        db,
        "SELECT j.id, j.status, j.total, m.name FROM pipeline_relevancejob j "
        "JOIN pipeline_modelversion m ON m.id = j.model_version_id",
    )
    assert (status, total, model) == ("queued", JOB_NOTES, "smollm2-135m-instruct")
    # The messages wait as files in the broker folder under DATA_DIR, one a chunk.
    assert len(queued_messages(data_dir)) == JOB_NOTES

    worker = WorkerProcess("relevance", embedded_env, tmp_path / "worker.log").start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            [(status,)] = query(db, "SELECT status FROM pipeline_relevancejob WHERE id = ?", job_id)
            if status in ("done", "failed", "cancelled") or worker.process.poll() is not None:
                break
            time.sleep(1)
        # Every message consumed (none kept: store_processed is off). An extra message (a
        # recovery sweep's) would find nothing to do; give the worker a moment to drain it.
        drained = time.monotonic() + 30
        while queued_messages(data_dir) and worker.process.poll() is None and time.monotonic() < drained:
            time.sleep(0.5)
        log = worker.log_path.read_text(errors="replace")
    finally:
        worker.stop()
    assert "transport:   filesystem://" in log, log[-3000:]
    [(status, done, error)] = query(db, "SELECT status, done, error FROM pipeline_relevancejob WHERE id = ?", job_id)
    chunks = query(db, "SELECT status, attempts, error FROM pipeline_relevancechunk WHERE job_id = ?", job_id)
    assert (status, done, error) == ("done", JOB_NOTES, ""), (
        f"job {status} {done} {error!r} chunks {chunks}\n{log[-5000:]}"
    )
    assert chunks == [("done", 1, "")] * JOB_NOTES
    # Each chunk's message was received from the folder and run to 'done' by the worker.
    assert log.count("Task workers.relevance.run_chunk[") >= 2 * JOB_NOTES  # received + succeeded each
    assert len(re.findall(r"run_chunk\[[0-9a-f-]+\] succeeded in [0-9.]+s: 'done'", log)) == JOB_NOTES, log[-5000:]
    assert not queued_messages(data_dir)

    from ml.codec import decode_arrays

    maps = query(
        db,
        "SELECT n.text, t.slug, c.method, r.n_tokens, r.data, k.offsets, r.target_token FROM pipeline_relevancemap r "
        "JOIN corpus_note n ON n.id = r.note_id JOIN corpus_task t ON t.id = r.task_id "
        "JOIN pipeline_mapconfiguration c ON c.id = r.config_id JOIN pipeline_notetokens k ON k.id = r.tokens_id "
        "WHERE r.job_id = ?",
        job_id,
    )
    assert len(maps) == JOB_NOTES
    for text, slug, method, n_tokens, data, offsets, target in maps:
        assert (slug, method) == (TASK, "attnlrp") and target
        offsets, scores = decode_arrays(bytes(offsets), bytes(data))
        assert len(scores) == n_tokens > 10
        assert "".join(text[a:b] for a, b in offsets) == text  # the tokens tile the note
        assert scores.min() >= 0 and scores.max() == pytest.approx(1.0, abs=1e-3)


# ---------------------------------------------------------------- recovery after SIGKILL, embedded

TINY_MODEL = "tiny-llama"
KILL_NOTES, KILL_TASKS, KILL_CHUNK = 6, ("heart-rate", "blood-pressure"), 2
KILL_TIMEOUT = 180
# The lifecycle of tests/workers/conftest.py's workers: beat every second, lost after 4 s, swept
# every second, a queued unit whose message is gone sent again after 3 s.
FAST_LIFECYCLE = {
    "WORK_HEARTBEAT_SECONDS": "1",
    "WORK_STALL_SECONDS": "4",
    "WORK_SWEEP_SECONDS": "1",
    "WORK_REQUEUE_GRACE_SECONDS": "3",
    "OMP_NUM_THREADS": "1",
}


def test_a_worker_killed_mid_job_on_sqlite_and_the_filesystem_broker_is_recovered_by_the_sweeper(
    tiny_model_dir, catalog_db, tmp_path
):
    """`make demo`'s setup, a relevance worker SIGKILLed while it holds a chunk: the filesystem
    transport removed the message's file when it delivered it, so no broker redelivers it. Only
    the recovery sweeper of the next worker (heartbeats in the SQLite file) can queue the chunk
    again; the job then completes with one map per planned pair, without Resume."""
    env = clean_env(tmp_path, tmp_path / "models")
    data_dir = Path(env["DATA_DIR"])
    db = start_from(catalog_db, env)
    manage(env, "load_demo_corpus", "--corpus", "demo-ed", "--notes", str(KILL_NOTES))
    assert f"model version {TINY_MODEL} (llama)" in manage(env, "register_model", TINY_MODEL, str(tiny_model_dir))
    total, chunk_count = KILL_NOTES * len(KILL_TASKS), KILL_NOTES * len(KILL_TASKS) // KILL_CHUNK
    out = manage(
        env,
        "launch_relevance_job",
        "demo-ed",
        "--model",
        TINY_MODEL,
        "--method",
        "attnlrp",
        "--tasks",
        "list",
        *[arg for task in KILL_TASKS for arg in ("--task", task)],
        "--limit",
        str(KILL_NOTES),
        "--chunk-size",
        str(KILL_CHUNK),
    )
    assert f"{total} prompts in {chunk_count} chunks, queued" in out, out
    [(job_id, model_version_id, config_key)] = query(
        db, "SELECT id, model_version_id, config_key FROM pipeline_relevancejob"
    )
    assert len(queued_messages(data_dir)) == chunk_count

    worker_env = {**env, **FAST_LIFECYCLE}
    first = WorkerProcess("relevance", worker_env, tmp_path / "worker-a.log").start()
    try:
        deadline = time.monotonic() + KILL_TIMEOUT
        while time.monotonic() < deadline and first.process.poll() is None:
            # the job too: a chunk is claimed first and its job marked running just after
            # (webapp.pipeline.chunks.claim), so a kill in between would leave the job queued
            if query(
                db,
                "SELECT 1 FROM pipeline_relevancechunk c JOIN pipeline_relevancejob j ON j.id = c.job_id"
                " WHERE c.job_id = ? AND c.status = 'running' AND j.status = 'running'",
                job_id,
            ):
                break
            time.sleep(0.02)
        else:
            raise AssertionError(f"no chunk started running:\n{first.log()}")
        first.kill()
    finally:
        first.stop()
    killed_at = time.monotonic()
    orphans = query(
        db, "SELECT id, attempts, worker FROM pipeline_relevancechunk WHERE job_id = ? AND status = 'running'", job_id
    )
    assert orphans, "the killed worker's chunk ended before the kill: nothing was left to recover"
    assert all(attempts == 1 and worker.split("@")[0] in first.name for _, attempts, worker in orphans), orphans
    [(status, done)] = query(db, "SELECT status, done FROM pipeline_relevancejob WHERE id = ?", job_id)
    assert status == "running" and done < total
    # The killed worker's message is gone with it: the broker folder holds only the chunks not yet delivered.
    assert len(queued_messages(data_dir)) < chunk_count

    second = WorkerProcess("relevance", worker_env, tmp_path / "worker-b.log").start()
    try:
        deadline = time.monotonic() + KILL_TIMEOUT
        while time.monotonic() < deadline and second.process.poll() is None:
            [(status,)] = query(db, "SELECT status FROM pipeline_relevancejob WHERE id = ?", job_id)
            if status in ("done", "failed", "cancelled"):
                break
            time.sleep(0.5)
        recovery_seconds = time.monotonic() - killed_at
        log = second.log_path.read_text(errors="replace")
    finally:
        second.stop()
    chunks = query(
        db,
        "SELECT id, status, attempts, worker, error, pairs FROM pipeline_relevancechunk WHERE job_id = ? ORDER BY id",
        job_id,
    )
    [(status, done, error)] = query(db, "SELECT status, done, error FROM pipeline_relevancejob WHERE id = ?", job_id)
    explain = (
        f"job {status} {done}/{total} {error!r}\nchunks {[c[:5] for c in chunks]}\n--- worker B ---\n{log[-6000:]}"
    )
    assert (status, done, error) == ("done", total, ""), explain
    assert {c[1] for c in chunks} == {"done"}, explain

    # Exactly one map per planned pair: none missing, none twice.
    planned = [tuple(pair) for *_, pairs in chunks for pair in json.loads(pairs)]
    assert len(planned) == len(set(planned)) == total
    maps = query(
        db,
        "SELECT r.note_id, r.task_id, count(*) FROM pipeline_relevancemap r "
        "JOIN pipeline_mapconfiguration c ON c.id = r.config_id "
        "WHERE r.model_version_id = ? AND c.config_key = ? GROUP BY r.note_id, r.task_id",
        model_version_id,
        config_key,
    )
    assert {(note, task) for note, task, _ in maps} == set(planned), explain
    assert {n for *_, n in maps} == {1}, explain
    assert query(db, "SELECT count(*) FROM pipeline_relevancemap") == [(total,)]

    # The killed chunk was queued again by worker B's sweeper and claimed again: no Resume.
    by_id = {c[0]: c for c in chunks}
    for chunk_id, _, _ in orphans:
        _, status, attempts, worker, _, _ = by_id[chunk_id]
        assert status == "done" and attempts >= 2 and worker.split("@")[0] in second.name, explain
    requeued = re.findall(r"relevance chunk: \d+ units queued again after their worker was lost: \[([\d, ]+)\]", log)
    assert {int(pk) for ids in requeued for pk in ids.split(",")} >= {pk for pk, _, _ in orphans}, explain
    assert "transport:   filesystem://" in log
    # SQLite held up: no beat, sweep or claim of worker B failed on a locked database.
    assert not re.findall(r".*(?:heartbeat failed|recovery sweep failed|database is locked|Retry in).*", log), explain
    assert recovery_seconds < KILL_TIMEOUT
