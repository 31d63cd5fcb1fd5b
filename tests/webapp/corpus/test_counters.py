"""The corpus row's note and annotation counters equal a COUNT after every kind of write."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from tests.projects import default_project
from webapp.corpus.models import Annotation, Corpus, Note, text_hash
from webapp.corpus.stats import corpus_summaries

pytestmark = pytest.mark.django_db


def _counted(corpus):
    corpus.refresh_from_db()
    return (corpus.note_count, corpus.annotation_count), (
        Note.objects.filter(corpus=corpus).count(),
        Annotation.objects.filter(note__corpus=corpus).count(),
    )


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_counters_follow_imports_deletes_and_reimports(tmp_path, tasks):
    notes = _write(tmp_path / "notes.jsonl", [{"id": f"n{i}", "text": f"Heart rate {60 + i} bpm."} for i in range(12)])
    call_command("import_notes", notes, "--corpus", "counted", "--language", "en", "--create", stdout=StringIO())
    corpus = Corpus.objects.get(name="counted")
    counters, counts = _counted(corpus)
    assert counters == counts == (12, 0)

    annotations = _write(
        tmp_path / "ann.jsonl",
        [{"note_id": f"n{i}", "task": "heart-rate", "label": "normocardic", "evidence": [[0, 10]]} for i in range(5)],
    )
    call_command("import_annotations", annotations, "--corpus", "counted", "--annotator", "gold", stdout=StringIO())
    counters, counts = _counted(corpus)
    assert counters == counts == (12, 5)

    call_command(
        "import_annotations", annotations, "--corpus", "counted", "--annotator", "gold", stdout=StringIO()
    )  # again
    Note.objects.filter(corpus=corpus, external_id__in=["n0", "n1", "n11"]).delete()  # cascades to 2 annotations
    counters, counts = _counted(corpus)
    assert counters == counts == (9, 3)

    more = _write(tmp_path / "more.jsonl", [{"id": f"n{i}", "text": f"Heart rate {60 + i} bpm."} for i in range(15)])
    call_command("import_notes", more, "--corpus", "counted", stdout=StringIO())
    counters, counts = _counted(corpus)
    assert counters == counts == (15, 3)


def test_other_corpora_keep_their_counts_and_the_summary_reads_the_counters(django_assert_max_num_queries, site_admin):
    first, second = (
        Corpus.objects.create(project=default_project(), name="a", language="en"),
        Corpus.objects.create(project=default_project(), name="b", language="en"),
    )
    Note.objects.bulk_create(
        [
            Note(corpus=c, external_id=f"{c.name}{i}", text="x", content_hash=text_hash("x"))
            for c in (first, second)
            for i in range(3 if c is first else 7)
        ]
    )
    Note.objects.filter(corpus=second, external_id="b0").delete()
    assert [_counted(c)[0] for c in (first, second)] == [(3, 0), (6, 0)]
    with django_assert_max_num_queries(1):
        summaries = {s.corpus.name: s.notes for s in corpus_summaries(site_admin)}
    assert summaries == {"a": 3, "b": 6}
    assert connection.vendor == "postgresql"


def test_saving_a_corpus_read_before_an_import_keeps_the_counts(tmp_path):
    """The admin's change form reads the corpus, an import runs meanwhile, then the form saves:
    the edit lands and the counters stay the triggers' (webapp.corpus.models.TriggerCounters)."""
    corpus = Corpus.objects.create(project=default_project(), name="edited", language="en")
    stale = Corpus.objects.get(pk=corpus.pk)
    notes = _write(tmp_path / "notes.jsonl", [{"id": f"n{i}", "text": f"Heart rate {60 + i} bpm."} for i in range(4)])
    call_command("import_notes", notes, "--corpus", "edited", stdout=StringIO())
    stale.description = "ED notes, 2026 export"
    stale.save()
    counters, counts = _counted(corpus)
    assert counters == counts == (4, 0)
    assert corpus.description == "ED notes, 2026 export"
