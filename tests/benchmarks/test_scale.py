"""The scale benchmark runs end to end at a tiny size in a database of its own, and prints every
figure README quotes: import rate, map storage per token, page times, planning, build rate."""

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
    """A database named after the test run's own (so concurrent runs never share it), dropped
    before and after."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the scale benchmark needs PostgreSQL (DATABASE_URL)")
    import psycopg

    parsed = urlparse(url)
    name = f"{parsed.path.lstrip('/')}_bench_scale"
    admin = urlunparse(parsed._replace(path="/postgres"))

    def drop():
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    drop()
    yield urlunparse(parsed._replace(path=f"/{name}")), drop
    drop()


def run_scale(url: str, template: str, *args: str) -> dict:
    tiny = ["--notes", "300", "--maps", "90", "--prompts", "2000", "--import-notes", "40"]
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "scale", *tiny, "--requests", "3", "--warmup", "1", "--workers", "1"]
        + ["--database-url", url, *args],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", TEMPLATE_ENV: template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)


def database_exists(url: str) -> bool:
    import psycopg

    parsed = urlparse(url)
    with psycopg.connect(urlunparse(parsed._replace(path="/postgres")), autocommit=True) as conn:
        return bool(conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [parsed.path.lstrip("/")]).fetchone())


PAGES = {
    "home_clinician",
    "home_researcher",
    "corpus_list",
    "corpus_notes_first_page",
    "corpus_notes_deep_page",
    "corpus_search_common_word",
    "corpus_search_rare_word",
    "review_note",
    "review_queue",
    "relevance_job",
    "dataset_statistics",
}


def test_the_scale_benchmark_prints_every_figure_and_drops_its_database(bench_database_url, migrated_template):
    url, _ = bench_database_url
    result = run_scale(url, migrated_template)

    assert not database_exists(url)
    assert result["reused"] is False
    assert result["build"]["notes"]["notes"] == 300 and result["build"]["maps"]["maps"] == 90
    assert result["import"]["notes"] == 40 and result["import_rate_notes_per_s"] > 0
    storage = result["map_storage"]
    assert storage["tokens"] == result["build"]["maps"]["tokens"] > 90
    assert "pipeline_relevancechunk" not in storage["map_tables"] and storage["bytes_per_token_all_in"] > 0
    assert result["job"]["prompts_planned"] >= 2000 and result["job"]["enqueue"]["measured"] is False
    assert result["dataset_build"]["maps"] == 90 and result["dataset_build_maps_per_s"] > 0
    assert result["peak_rss_mb_process"] > 0 and len(result["load_1_5_15_end"]) == 3
    assert set(result["pages"]) == PAGES
    for name, page in result["pages"].items():
        assert page["status"] == ([302] if name == "review_queue" else [200]), (name, page["status"])
        assert page["requests"] == 3 and 0 < page["p50_ms"] <= page["p95_ms"]
        assert len(page["load_1_5_15"]) == 3
        assert (name in result["slow_pages"]) == (page["p95_ms"] > 100)


def test_a_reused_database_is_measured_again_without_building_it(bench_database_url, migrated_template):
    url, _ = bench_database_url
    first = run_scale(url, migrated_template, "--reuse")
    assert first["reused"] is False and database_exists(url)

    again = run_scale(url, migrated_template, "--reuse")

    assert again["reused"] is True and "build" not in again
    assert again["map_storage"]["tokens"] == first["build"]["maps"]["tokens"]
    assert again["dataset_build"]["maps"] == 90  # the first run's dataset and job were deleted first
    assert set(again["pages"]) == PAGES and database_exists(url)
