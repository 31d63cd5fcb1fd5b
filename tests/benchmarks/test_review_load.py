"""The review-load benchmark (--smoke, with every map's peaks stored first): it builds its own
database, serves the app under gunicorn with production settings, runs simulated reviewers
through queue -> note -> decide, prints one JSON object, and leaves nothing running: no server,
no database."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import pytest

from benchmarks.database import TEMPLATE_ENV

pytestmark = pytest.mark.slow  # a benchmark subprocess with a database and a server of its own

ROOT = Path(__file__).resolve().parents[2]


def test_the_smoke_run_reviews_without_errors_and_stops_everything_it_started(migrated_template):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the benchmark needs PostgreSQL (DATABASE_URL)")
    parsed = urlparse(url)
    bench_url = urlunparse(parsed._replace(path=f"/{parsed.path.lstrip('/')}_bench_review_load"))
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "review-load", "--smoke", "--stored-peaks", "--database-url", bench_url],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", TEMPLATE_ENV: migrated_template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    assert result["data"]["stored_peak_maps"] == result["data"]["maps"] == 90  # every map's peaks, before the runs
    for name, reviewers in (("baseline", 1), ("load", 2)):
        figures = result[name]
        assert figures["reviewers"] == reviewers and figures["errors"] == 0, figures["errors_by_kind"]
        assert figures["decisions_per_s"] > 0
        assert {step: figures["steps"][step]["n"] > 0 for step in ("queue", "note", "decide")} == dict.fromkeys(
            ("queue", "note", "decide"), True
        )
        p = figures["all_requests"]
        assert p["p50_ms"] <= p["p95_ms"] <= p["p99_ms"] <= p["max_ms"]
        # the database (on this machine in the tests) did work for the requests
        assert figures["database_cpu_s"] > 0 and figures["database_cpu_ms_per_request"] > 0
    assert len(result["machine"]["load_average_1_5_15"]) == 3 and "cpu_flags" in result["machine"]
    # static files by their manifest (hashed) names, cached for ever by whitenoise
    assert result["static_files"]
    for path, answer in result["static_files"].items():
        assert answer["status"] == 200 and "immutable" in answer["cache_control"], (path, answer)
    with socket.socket() as s, pytest.raises(OSError):  # the server is gone
        s.settimeout(2)
        s.connect(("127.0.0.1", result["server"]["port"]))
    import psycopg

    with psycopg.connect(urlunparse(parsed._replace(path="/postgres")), autocommit=True) as conn:
        assert not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [urlparse(bench_url).path.lstrip("/")]
        ).fetchone()
