"""Each worker process sets torch's thread count from settings.WORKER_TORCH_THREADS when it starts,
before any model is loaded, without importing torch for it (workers/celery_app.py)."""

import os
import subprocess
import sys
from pathlib import Path

import torch

from workers.celery_app import set_torch_threads

ROOT = Path(__file__).resolve().parents[2]

WORKER_START = """
import os, sys
import django
django.setup()
from celery import signals
import workers.celery_app
signals.{signal}.send(sender=None)
print("torch imported at start:", "torch" in sys.modules)
import torch
print("threads:", torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS"))
"""


def _start(signal, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    environ.update(DJANGO_SETTINGS_MODULE="webapp.settings", **env)
    result = subprocess.run(
        [sys.executable, "-c", WORKER_START.format(signal=signal)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_a_prefork_child_sets_torch_threads_from_the_setting_without_importing_torch():
    out = _start("worker_process_init", WORKER_TORCH_THREADS="1")
    assert "torch imported at start: False" in out
    assert "threads: 1 1" in out


def test_a_solo_worker_sets_them_in_worker_init_too():
    # worker_init only: the visibility check it also runs passes on the filesystem broker
    out = _start("worker_init", WORKER_TORCH_THREADS="1", CELERY_BROKER_URL="filesystem://")
    assert "threads: 1 1" in out


def test_zero_leaves_the_threads_as_they_are():
    out = _start("worker_process_init", WORKER_TORCH_THREADS="0")
    assert out.rstrip().endswith(" None")  # no OMP_NUM_THREADS: torch keeps its default


def test_an_already_imported_torch_is_set_directly(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    try:
        set_torch_threads(1)
        assert torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1" == os.environ["MKL_NUM_THREADS"]
    finally:
        torch.set_num_threads(before)


def test_a_negative_setting_is_refused():
    environ = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "WORKER_TORCH_THREADS": "-2"}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "WORKER_TORCH_THREADS=-2" in result.stderr
