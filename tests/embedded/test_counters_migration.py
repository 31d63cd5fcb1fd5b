"""Corpus migration 0016 on SQLite: corpora stored before it get counters equal to their notes and
annotations, and its triggers keep them equal afterwards."""

import pytest

from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest
from webapp.corpus.models import text_hash

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def test_corpora_stored_before_the_migration_are_counted_and_stay_counted():
    old = migrate([("corpus", "0015_catalog_changes_to_their_projects")])
    try:
        Note, Task, Annotation = (old.get_model("corpus", n) for n in ("Note", "Task", "Annotation"))
        task = Task.objects.create(slug="fever", description="fever", options=["yes", "no"])
        sizes = {"ward-a": (3, 2), "ward-b": (1, 0), "ward-c": (0, 0)}  # corpus: notes, annotated notes
        for name, (notes, annotated) in sizes.items():
            corpus = make_corpus(old, name=name, language="en")
            for i in range(notes):
                text = f"{name} note {i}"
                note = Note.objects.create(corpus=corpus, external_id=f"n{i}", text=text, content_hash=text_hash(text))
                if i < annotated:
                    Annotation.objects.create(note=note, task=task, label="yes", annotator_name="ann")
    finally:
        migrate_to_latest()
    from webapp.corpus.models import Annotation as Current
    from webapp.corpus.models import Corpus

    assert {c.name: (c.note_count, c.annotation_count) for c in Corpus.objects.all()} == sizes
    Current.objects.filter(note__corpus__name="ward-a").delete()
    assert (Corpus.objects.get(name="ward-a").note_count, Corpus.objects.get(name="ward-a").annotation_count) == (3, 0)
