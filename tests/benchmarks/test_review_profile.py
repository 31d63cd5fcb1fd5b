"""The review-profile benchmark: it builds its own database, runs one reviewer's queue -> note ->
decision loop in process under production settings, prints each answer's CPU, queries and
cProfile entries as one JSON object, and drops its database."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

from benchmarks.database import TEMPLATE_ENV, database_exists

pytestmark = pytest.mark.slow  # a benchmark subprocess with a database of its own

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_run_measures_every_answer_and_drops_its_database(migrated_template):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres") or not os.environ.get("REDIS_URL"):
        pytest.skip("the benchmark needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL)")
    parsed = urlparse(url)
    bench_url = urlunparse(parsed._replace(path=f"/{parsed.path.lstrip('/')}_bench_review_profile"))
    args = ["--maps", "90", "--loops", "3", "--warmup", "1", "--profile-loops", "2", "--top", "5"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "review-profile", *args, "--database-url", bench_url],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", TEMPLATE_ENV: migrated_template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    for step in ("queue", "note", "decide"):
        figures = result["steps"][step]
        assert figures["cpu"]["n"] == 3 and figures["cpu"]["median_ms"] > 0
        assert figures["queries_median"] >= 1
        assert len(result["profile"][step]["by_own_time"]) == 5
    assert result["cpu_ms_per_request"] > 0 and len(result["load_average_1_5_15_at_end"]) == 3
    assert not database_exists(bench_url)
