"""`make demo`'s preparation on the embedded default: SQLite and the filesystem broker, no server."""

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from webapp.home import demo
from webapp.home.management.commands import rundemo

ROOT = Path(__file__).resolve().parents[3]


def test_the_demo_prepares_sqlite_users_catalog_corpus_and_queues_a_first_job(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update({"DEBUG": "1", "DATA_DIR": str(tmp_path)})
    result = subprocess.run(
        [sys.executable, "manage.py", "rundemo", "--no-serve", "--notes", "25"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "Database ready (sqlite3)" in out
    assert "Notes imported into 'demo-ed': 25 created" in out
    for role in ("clinician", "researcher", "admin"):
        assert f"  {role}" in out  # each demo user is printed with a password
    # sized to finish in under 2 minutes on 2 cores (rundemo's docstring), 2 prompts a chunk
    assert "Job 1: 30 prompts in 15 chunks, queued (configuration attnlrp-next-" in out
    db = sqlite3.connect(tmp_path / "db.sqlite3")
    assert db.execute("select count(*) from corpus_task").fetchone()[0] == 134
    assert db.execute("select status, total from pipeline_relevancejob").fetchall() == [("queued", 30)]
    # the chunks wait in the embedded broker's folder for the relevance worker
    assert len(list((tmp_path / "broker" / "queue").iterdir())) == 15

    again = subprocess.run(
        [sys.executable, "manage.py", "rundemo", "--no-serve", "--notes", "25"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "25 unchanged" in again.stdout and "Job " not in again.stdout  # idempotent


def test_the_first_job_is_small_enough_for_two_minutes_and_shows_maps_chunk_by_chunk():
    prompts = demo.DEMO_JOB_NOTES * len(demo.DEMO_TASKS)
    assert prompts <= 30 and len(demo.DEMO_TASKS) >= 5  # at most 3 s a prompt measured on a busy 2-core machine
    assert demo.DEMO_CHUNK_SIZE <= 2


def test_training_has_a_worker_of_its_own_so_imports_never_wait_behind_a_run():
    queues = {
        cmd[cmd.index("--hostname") + 1].split("@")[0]: cmd[cmd.index("--queues") + 1]
        for cmd, _ in rundemo.worker_processes("python", cores=2)
    }
    assert queues == {"relevance": "relevance", "training": "training", "default": "default"}


def test_the_torch_workers_split_the_cores_between_them():
    for cores, relevance, training in ((1, 1, 1), (2, 1, 1), (3, 2, 1), (8, 4, 4)):
        processes = rundemo.worker_processes("python", cores=cores)
        threads = {
            cmd[cmd.index("--hostname") + 1].split("@")[0]: int(env["WORKER_TORCH_THREADS"]) for cmd, env in processes
        }
        # the default worker does database work only; the two torch workers never oversubscribe
        assert threads == {"relevance": relevance, "training": training, "default": 1}
        assert cores == 1 or threads["relevance"] + threads["training"] <= cores


def _demo_env(tmp_path) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update({"DEBUG": "1", "DATA_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"})
    return env


@pytest.mark.slow
def test_the_url_is_printed_only_once_the_server_answers(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo_process = subprocess.Popen(
        [sys.executable, "manage.py", "rundemo", "--no-job", "--notes", "5", "--port", str(port)],
        cwd=ROOT,
        env=_demo_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        for line in demo_process.stdout:
            if "is running at" in line:
                break
        else:
            raise AssertionError("the demo ended without printing its URL")
        # A browser opened the moment the URL appears: the server must already answer.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=30) as response:
            assert response.status == 200
    finally:
        os.killpg(demo_process.pid, signal.SIGTERM)
        demo_process.wait(timeout=60)
