"""The fault drill (scripts/fault_drill.py) in its short form, so CI kills a worker in the middle of
a relevance job, restarts Redis with and without persistence, and drills webhook deliveries (Redis
restarted and their workers killed while retries are pending, an import beside a receiver that
sleeps 30 s), and fails if anything was lost, duplicated or left unfinished.

The drill's other kinds (a dataset build, an export, a training run, an import: two of its three
minutes here) are left to `make drill`: each has its own worker-kill test in this folder
(test_datasets.py, test_training.py, test_imports.py) that checks the same, nothing lost or twice.

The drill brings its own redis-server and its own database on this run's PostgreSQL server (named
after the run's database, so two runs on one host stay apart), and drops it at the end.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from benchmarks.database import TEMPLATE_ENV

ROOT = Path(__file__).resolve().parents[2]
KINDS = (
    "relevance",
    "redis_restart_persistent",
    "redis_restart_volatile",
    "webhook_redis_restart",
    "webhook_worker_kill",
    "webhook_slow_receiver",
)
STALL = 5  # WORK_STALL_SECONDS of the drill's workers


@pytest.mark.slow
def test_the_short_fault_drill_recovers_every_kind_of_work_with_nothing_lost_or_duplicated(migrated_template):
    if connection.vendor != "postgresql" or shutil.which("redis-server") is None:
        pytest.skip("the fault drill needs PostgreSQL (DATABASE_URL) and redis-server on the PATH")
    db = connection.settings_dict
    server = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/postgres"
    database = f"{db['NAME']}_drill"[-63:]
    drill = subprocess.run(
        [sys.executable, "scripts/fault_drill.py", "--short", "--kinds", ",".join(KINDS)]
        + ["--postgres", server, "--database", database],
        cwd=ROOT,
        env={**os.environ, TEMPLATE_ENV: migrated_template},  # its database a copy of a migrated one
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = drill.stdout.strip().splitlines()
    assert drill.returncode == 0 and lines, f"{drill.stdout[-3000:]}\n{drill.stderr[-6000:]}"
    result = json.loads(lines[-1])
    assert result["ok"] is True
    for kind in KINDS:
        figures = result[kind]
        assert figures["killed"] == figures["recovered"] == 1, (kind, figures)
        assert figures["lost"] == figures["duplicated"] == 0, (kind, figures)
        # claimed again within the stall time (a delivery's claim, 14 s), a sweep and a worker's
        # pick-up (slack for a loaded host); for the slow receiver, the import's whole time
        assert figures["max_recovery_s"] < STALL + 25, (kind, figures)
