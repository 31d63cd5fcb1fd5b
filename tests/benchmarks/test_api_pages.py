"""The api-pages benchmark runs end to end at a tiny size in a database of its own: it walks every
page by cursor through the API, compares the old offset-and-count paging at each depth on the
same rows, prints the machine and load, and drops its database."""

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


@pytest.fixture
def bench_database_url():
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the api-pages benchmark needs PostgreSQL (DATABASE_URL)")
    import psycopg

    parsed = urlparse(url)
    name = f"{parsed.path.lstrip('/')}_bench_api_pages"
    admin = urlunparse(parsed._replace(path="/postgres"))

    def drop():
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def exists() -> bool:
        with psycopg.connect(admin, autocommit=True) as conn:
            return bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone())

    drop()
    yield urlunparse(parsed._replace(path=f"/{name}")), exists
    drop()


def test_the_benchmark_walks_every_page_compares_the_old_paging_and_drops_its_database(
    bench_database_url, migrated_template
):
    url, exists = bench_database_url
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "api-pages", "--notes", "450", "--requests", "1"]
        + ["--depths", "0,1", "--database-url", url],
        cwd=ROOT,
        env={**os.environ, TEMPLATE_ENV: migrated_template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    walked = result["cursor_every_page_by_api"]
    assert (walked["pages"], walked["notes_seen"]) == (3, 450)
    assert walked["all_pages"]["n"] == 3 and walked["all_pages"]["p95_ms"] > 0
    first, last = result["at_depths_function_only"]
    assert (first["page"], first["offset"], last["page"], last["offset"]) == (1, 0, 3, 400)
    assert first["offset_and_count"]["n"] == first["cursor"]["n"] == 1
    assert result["build"]["notes"] == 450 and set(result["target"]) == {"p95_ms_every_page", "met"}
    assert len(result["machine"]["load_average_1_5_15"]) == 3 and "cpu_flags" in result["machine"]
    assert not exists()
