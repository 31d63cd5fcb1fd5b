"""Fixtures for the corpus tests: a corpus, two tasks, file writers and a database snapshot."""

import json

import pytest
from django.db import connection

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note, Task

postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL triggers")


@pytest.fixture
def corpus(db):
    return Corpus.objects.create(project=default_project(), name="ward", language="en")


@pytest.fixture
def tasks(db):
    return {
        "heart": Task.objects.create(
            slug="heart-rate",
            description="heart rate",
            options=["bradycardic", "normocardic", "tachycardic", "unknown"],
            group="vital signs",
            aliases=["pulse"],
        ),
        "pacemaker": Task.objects.create(
            slug="presence-of-pacemaker", description="presence of pacemaker", options=["y", "n", "unknown"]
        ),
    }


@pytest.fixture
def snapshot(db):
    """snapshot() -> row counts of everything an import may write (a refused import's own audit
    entry aside: it records the refusal, not the data)."""

    def take():
        counts = {model.__name__: model.objects.count() for model in (Corpus, Note, Annotation, Task)}
        counts["AuditEvent"] = AuditEvent.objects.exclude(action="import_refused").count()
        return counts

    return take


def write_jsonl(path, rows, *, bom=False):
    """Write rows (dicts, or str lines written verbatim) as JSON lines; return the path."""
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


def notes(n, prefix="n"):
    """n small distinct notes (with a few non-ASCII characters, as in Italian notes)."""
    return [
        {"id": f"{prefix}{i}", "text": f"Paziente {i}: FC 80 bpm, perché afebbrile.", "metadata": {"ward": "A"}}
        for i in range(1, n + 1)
    ]
