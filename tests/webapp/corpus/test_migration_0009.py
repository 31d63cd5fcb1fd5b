"""Migration 0009: tasks stored before it are kept, as catalog tasks in use, with no guideline."""

import pytest

from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds


@pytest.mark.django_db(transaction=True)
def test_existing_tasks_and_their_annotations_are_kept():
    from webapp.corpus.models import text_hash

    old = migrate([("corpus", "0008_note_search_sqlite")])
    Corpus, Note, Task, Annotation = (old.get_model("corpus", n) for n in ("Corpus", "Note", "Task", "Annotation"))
    task = Task.objects.create(slug="fever", description="fever", options=["yes", "no"], held_out=True, group="v")
    note = Note.objects.create(
        corpus=make_corpus(old, name="w", language="en"), external_id="n1", text="t", content_hash=text_hash("t")
    )
    Annotation.objects.create(note=note, task=task, label="yes", annotator_name="gold")

    migrate_to_latest()
    from webapp.corpus.models import Task as Current

    kept = Current.objects.get(slug="fever")
    assert (kept.description, kept.options, kept.held_out, kept.group) == ("fever", ["yes", "no"], True, "v")
    assert (kept.origin, kept.retired, kept.guideline) == ("catalog", False, "")
    assert kept.annotations.get().label == "yes"
    assert list(Current.objects.active()) == [kept]
