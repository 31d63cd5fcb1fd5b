"""A real Celery worker process against the real Redis and PostgreSQL of the test run.

Tests using it need `@pytest.mark.django_db(transaction=True)` so the worker sees committed rows.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from tests.workers.redelivery import start_worker_without_redelivery  # noqa: F401 - a shared fixture

ROOT = Path(__file__).resolve().parents[2]


class WorkerProcess:
    def __init__(self, queues: str, env: dict, log_path: Path):
        self.queues = queues
        self.env = env
        self.log_path = log_path
        self.name = f"test-{uuid.uuid4().hex[:8]}@%h"
        self.process = None

    def start(self):
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "workers",
                "worker",
                "--queues",
                self.queues,
                "--pool",
                "solo",
                "--hostname",
                self.name,
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self._wait_ready()
        return self

    def _wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early:\n{self.log()}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker not ready after {timeout}s:\n{self.log()}")

    def kill(self):
        """SIGKILL: the worker dies mid-task, like a lost machine."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:]


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama and its tokenizer (tests/ml/conftest.py) saved to a folder that a
    ModelVersion can point at: no download, no converted model. Workers only read it."""
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def worker_env(tmp_path):
    """Environment for a worker that shares this test run's database, broker and folders."""
    db = connection.settings_dict
    env = {k: v for k, v in os.environ.items()}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}",
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            # Short, so a message whose worker was killed is redelivered within the test.
            "CELERY_VISIBILITY_TIMEOUT": "8",
            # Fast lifecycle (webapp.lifecycle): beats every second, lost after 4 s, swept every second.
            "WORK_HEARTBEAT_SECONDS": "1",
            "WORK_STALL_SECONDS": "4",
            "WORK_SWEEP_SECONDS": "1",
            "WORK_REQUEUE_GRACE_SECONDS": "3",
            "OMP_NUM_THREADS": "1",
            "DATA_DIR": str(settings.DATA_DIR),
            "MODEL_DIR": str(settings.MODEL_DIR),
            "HF_HUB_OFFLINE": "1",
        }
    )
    return env


@pytest.fixture
def start_worker(worker_env, tmp_path):
    """start_worker("relevance") -> a running WorkerProcess; all are stopped after the test."""
    if connection.vendor != "postgresql" or not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("worker tests need PostgreSQL and Redis (DATABASE_URL, REDIS_URL)")
    from workers.celery_app import app

    app.control.purge()
    workers = []

    def start(queues: str, **extra_env):
        env = {**worker_env, **{k: str(v) for k, v in extra_env.items()}}
        worker = WorkerProcess(queues, env, tmp_path / f"worker-{len(workers)}.log")
        workers.append(worker)
        return worker.start()

    yield start
    for worker in workers:
        worker.stop()
    app.control.purge()


def wait_for(predicate, timeout=120, interval=0.3, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message}")
