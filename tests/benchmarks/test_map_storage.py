"""The map-storage benchmark writes its maps through the app's writer into a database of its own,
reports bytes a token all in with every table and index listed, and drops the database."""

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


def test_the_map_storage_benchmark_stores_one_offsets_row_a_note_and_reports_every_index(migrated_template):
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        pytest.skip("the benchmark needs PostgreSQL (DATABASE_URL)")
    parsed = urlparse(url)
    bench_url = urlunparse(parsed._replace(path=f"/{parsed.path.lstrip('/')}_bench_map_storage"))
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks", "map-storage", "--notes", "30", "--database-url", bench_url],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", TEMPLATE_ENV: migrated_template},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout)
    maps, offsets = result["tables"]["pipeline_relevancemap"], result["tables"]["pipeline_notetokens"]
    assert result["maps"] == maps["rows"] == 270 and offsets["rows"] == 30  # 9 maps a note, offsets once
    assert 270 <= result["tokens_per_map"] <= 330
    assert (
        "pipeline_relevancemap_unique_config" in maps["indexes"] and "pipeline_notetokens_unique" in offsets["indexes"]
    )
    assert maps["index_bytes"] == sum(maps["indexes"].values())
    all_in = maps["total_bytes"] + offsets["total_bytes"]
    assert result["bytes_per_token_all_in"] == pytest.approx(all_in / result["tokens"], abs=1e-3)
    assert result["baseline"]["blob_bytes_per_token"] == pytest.approx(6.0, abs=0.1)
    import psycopg

    with psycopg.connect(urlunparse(parsed._replace(path="/postgres")), autocommit=True) as conn:
        assert not conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [urlparse(bench_url).path.lstrip("/")]
        ).fetchone()
