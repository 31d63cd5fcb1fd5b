"""Migration 0005: corpora stored before it get counters equal to their notes and annotations,
and the triggers it installs keep them equal afterwards (PostgreSQL only; SQLite counts)."""

import pytest
from django.db import connection

from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("corpus", "0004_note_search")]
AFTER = [("corpus", "0005_corpus_counters")]


@pytest.mark.django_db(transaction=True)
def test_existing_corpora_are_counted_and_stay_counted():
    if connection.vendor != "postgresql":
        pytest.skip("the counters are kept by PostgreSQL triggers; SQLite counts instead")
    from webapp.corpus.models import text_hash

    old = migrate(BEFORE)
    Corpus, Note, Task, Annotation = (old.get_model("corpus", n) for n in ("Corpus", "Note", "Task", "Annotation"))
    task = Task.objects.create(slug="fever", description="fever", options=["yes", "no"])
    sizes = {"ward-a": (3, 2), "ward-b": (1, 0), "ward-c": (0, 0)}  # corpus: notes, annotated notes
    for name, (notes, annotated) in sizes.items():
        corpus = make_corpus(old, name=name, language="en")
        for i in range(notes):
            text = f"{name} note {i}"
            note = Note.objects.create(corpus=corpus, external_id=f"n{i}", text=text, content_hash=text_hash(text))
            if i < annotated:
                Annotation.objects.create(note=note, task=task, label="yes", annotator_name="ann")

    after = migrate(AFTER)
    counted = {c.name: (c.note_count, c.annotation_count) for c in after.get_model("corpus", "Corpus").objects.all()}
    assert counted == sizes

    migrate_to_latest()
    from webapp.corpus.models import Annotation as Current
    from webapp.corpus.models import Corpus as CurrentCorpus

    Current.objects.filter(note__corpus__name="ward-a").delete()
    assert CurrentCorpus.objects.get(name="ward-a").annotation_count == 0
    assert CurrentCorpus.objects.get(name="ward-a").note_count == 3
