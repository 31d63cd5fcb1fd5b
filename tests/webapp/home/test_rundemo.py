"""`make demo`'s preparation on the embedded default: SQLite and the filesystem broker, no server."""

import os
import re
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


@pytest.mark.slow
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
    # sized from the rate measured here, and the figure says which hardware it comes from
    measured = re.search(r"Measured here: ([\d.]+) s a prompt \((.+)\)\. First job: (\d+) notes? x 5 tasks", out)
    assert measured, out
    assert "cores" in measured[2] and "bf16" in measured[2] and "load average" in measured[2]
    size = demo.first_job_size(float(measured[1]))
    assert int(measured[3]) == size.notes
    chunks = -(-size.prompts // size.chunk_size)
    assert f"Job 1: {size.prompts} prompts in {chunks} chunks, queued (configuration attnlrp-next-" in out
    db = sqlite3.connect(tmp_path / "db.sqlite3")
    assert db.execute("select count(*) from corpus_task").fetchone()[0] == 134
    assert db.execute("select status, total from pipeline_relevancejob").fetchall() == [("queued", size.prompts)]
    # the chunks wait in the embedded broker's folder for the relevance worker
    assert len(list((tmp_path / "broker" / "queue").iterdir())) == chunks

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


def test_on_a_cpu_without_native_bf16_the_first_job_still_ends_within_a_minute():
    # 63 s for the 30 prompts, measured on such a CPU: 2.1 s a prompt
    size = demo.first_job_size(2.1)
    assert size.seconds <= demo.DEMO_JOB_SECONDS < 60
    assert 1 <= size.notes < demo.DEMO_JOB_NOTES and size.prompts == size.notes * len(demo.DEMO_TASKS)


def test_a_faster_machine_gets_the_whole_job_and_a_very_slow_one_a_single_note():
    assert demo.first_job_size(1.07).notes == demo.DEMO_JOB_NOTES  # 32 s for 30 prompts
    assert demo.first_job_size(15.0).notes == 1


def test_chunks_take_a_few_seconds_at_the_measured_rate():
    for seconds_per_prompt in (0.05, 1.07, 2.1, 15.0):
        size = demo.first_job_size(seconds_per_prompt)
        assert size.chunk_size >= 1
        assert size.chunk_size == 1 or size.chunk_size * seconds_per_prompt <= 1.5 * demo.DEMO_CHUNK_SECONDS


def test_unmeasured_the_first_job_has_the_default_size():
    size = demo.first_job_size(None)
    assert (size.notes, size.chunk_size, size.seconds) == (demo.DEMO_JOB_NOTES, demo.DEMO_CHUNK_SIZE, None)


@pytest.mark.slow  # a child process that imports torch
def test_a_failed_measurement_says_why(tmp_path):
    probe = subprocess.Popen(
        [sys.executable, "-m", "ml", "rate", "--model-dir", str(tmp_path), "--task", "heart rate"],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    measured, problem = rundemo.read_rate_probe(probe)
    assert measured is None and problem.startswith("the measurement failed: ")
    assert "smollm2-135m-instruct" in problem  # the model it could not find


def test_a_figure_names_its_hardware():
    measured = {
        "model": "smollm2-135m-instruct",
        "dtype": "float32",
        "torch_threads": 1,
        "cpu": "AMD EPYC",
        "cores": 2,
        "native_bf16": False,
        "load_average": 0.4,
    }
    assert rundemo.hardware(measured) == (
        "smollm2-135m-instruct, float32, 1 torch thread(s) on AMD EPYC (2 cores, no native bf16), load average 0.4"
    )


def test_training_has_a_worker_of_its_own_so_imports_never_wait_behind_a_run():
    queues = {
        cmd[cmd.index("--hostname") + 1].split("@")[0]: cmd[cmd.index("--queues") + 1]
        for cmd, _ in rundemo.worker_processes("python", cores=2)
    }
    assert queues == {"relevance": "relevance", "training": "training", "default": "default", "webhooks": "webhooks"}


def test_one_worker_runs_celery_beat_for_the_periodic_rounds():
    beats = [cmd for cmd, _ in rundemo.worker_processes("python", cores=2) if "--beat" in cmd]
    assert len(beats) == 1 and "default@%h" in beats[0]


def test_webhook_deliveries_wait_on_threads_of_their_own():
    (deliveries,) = [cmd for cmd, _ in rundemo.worker_processes("python", cores=2) if "webhooks@%h" in cmd]
    assert deliveries[deliveries.index("--pool") + 1] == "threads"


def test_the_torch_workers_split_the_cores_between_them():
    for cores, relevance, training in ((1, 1, 1), (2, 1, 1), (3, 2, 1), (8, 4, 4)):
        processes = rundemo.worker_processes("python", cores=cores)
        threads = {
            cmd[cmd.index("--hostname") + 1].split("@")[0]: int(env["WORKER_TORCH_THREADS"]) for cmd, env in processes
        }
        # the default worker does database work only; the two torch workers never oversubscribe
        assert threads == {"relevance": relevance, "training": training, "default": 1, "webhooks": 1}
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
