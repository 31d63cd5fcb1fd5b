"""The review-report benchmark runs small in a database of its own: it stores the figures once,
serves the page and the CSV from them, measures the old way in the same process, and drops its
database."""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

from benchmarks.database import TEMPLATE_ENV

pytestmark = pytest.mark.slow  # a benchmark subprocess with a database of its own

ROOT = Path(__file__).resolve().parents[2]


def test_the_review_report_benchmark_serves_stored_figures_and_measures_the_old_way(migrated_template):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the benchmark needs PostgreSQL (DATABASE_URL)")
    parsed = urlparse(url)
    bench_url = urlunparse(parsed._replace(path=f"/{parsed.path.lstrip('/')}_bench_review_report"))
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "review-report", "--peaks", "200", "--reviewers", "3"]
        + ["--requests", "3", "--baseline-requests", "1", "--database-url", bench_url],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", TEMPLATE_ENV: migrated_template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["data"]["decisions"] == 600 and result["data"]["reviewers"] == 3
    assert result["first_computation_s"] > 0 and result["recomputation_s"] > 0
    for name in ("page", "csv", "stale_page", "page_looking_every_load"):
        assert result[name]["n"] == 3 and result[name]["p95_ms"] > 0
    assert result["csv"]["bytes"] > 100 and result["baseline"]["csv"]["n"] == 1
    assert result["report_stamp_seconds"] >= 0 and len(result["load_average_1_5_15"]) == 3
    assert "avx2" in result["machine"]["cpu_flags"]
