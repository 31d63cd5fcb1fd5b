"""The embedded default (SQLite and the filesystem broker, what `make demo` runs) tested in
process on real SQLite. `make test` runs these after the PostgreSQL run, with no DATABASE_URL,
REDIS_URL or CELERY_BROKER_URL and a fresh DATA_DIR, so settings fall back to exactly the demo's
database and broker; on PostgreSQL they skip. Modules here carry the `embedded` marker.

The dataset fixtures are those of tests/webapp/datasets (hand-made maps, no model)."""

import pytest
from django.db import connection

from tests.webapp.datasets.conftest import built, corpus, make_dataset, maps, model, note, sharp, tasks  # noqa: F401


@pytest.fixture(autouse=True)
def on_sqlite():
    if connection.vendor != "sqlite":
        pytest.skip("the embedded default's tests: make test runs them on SQLite (no DATABASE_URL)")
