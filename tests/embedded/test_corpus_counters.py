"""The corpus counters on SQLite (issue 38, item 5): the embedded default's triggers (corpus
migration 0016) keep a corpus's notes and annotations as PostgreSQL's do, so the API and the
corpus list answer the same figures on both databases; `/api/corpora` answered 0 and 0 for the
demo's corpus of 48 notes and 87 labels."""

from io import StringIO

import pytest
from django.db import connection, transaction

from tests.projects import default_project
from webapp.accounts.membership import add_member
from webapp.api import tokens
from webapp.corpus.models import Annotation, Corpus, Note, text_hash
from webapp.home.demo import DEMO_CORPUS, seed
from webapp.projects.roles import Role

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

TRIGGERS = {
    "corpus_note_count_insert",
    "corpus_note_count_delete",
    "corpus_annotation_count_insert",
    "corpus_annotation_count_delete",
}


def counted(corpus) -> tuple[int, int]:
    corpus.refresh_from_db()
    return corpus.note_count, corpus.annotation_count


def truth(corpus) -> tuple[int, int]:
    return Note.objects.filter(corpus=corpus).count(), Annotation.objects.filter(note__corpus=corpus).count()


def test_every_counter_trigger_outlives_the_later_migrations():
    """A migration that rebuilds corpus_note or corpus_annotation on SQLite drops their triggers:
    it must make them again (0016's docstring)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        present = {name for (name,) in cursor.fetchall()}
    assert TRIGGERS <= present, TRIGGERS - present


def test_the_api_answers_the_demo_corpus_counts(client, researcher):
    seed(notes=48, stdout=StringIO(), first_job=False)
    corpus = Corpus.objects.get(name=DEMO_CORPUS)
    notes, labels = truth(corpus)
    assert notes == 48 and labels > 0
    add_member(corpus.project, researcher, Role.RESEARCHER)
    _, secret = tokens.create(researcher, name="t", projects=[corpus.project], ceiling="roles", days=1)
    answer = client.get(f"/api/corpora/{corpus.pk}", headers={"Authorization": f"Bearer {secret}"})
    assert (answer.json()["note_count"], answer.json()["annotation_count"]) == (notes, labels)
    (listed,) = [c for c in client.get("/api/corpora", headers={"Authorization": f"Bearer {secret}"}).json()["items"]]
    assert (listed["note_count"], listed["annotation_count"]) == (notes, labels)


def test_inserts_bulk_inserts_and_deletes_in_either_order_keep_the_counts(tasks):
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    other = Corpus.objects.create(project=corpus.project, name="clinic", language="en")
    notes = Note.objects.bulk_create(
        Note(corpus=corpus, external_id=f"n{i}", text=f"Note {i}.", content_hash=text_hash(f"Note {i}."))
        for i in range(5)
    )
    Note.objects.create(corpus=other, external_id="c1", text="Other.")
    Annotation.objects.bulk_create(
        Annotation(note=note, task=task, label="y", evidence=[], annotator_name="gold")
        for note in notes
        for task in (tasks["heart"], tasks["pacemaker"])
    )
    assert counted(corpus) == truth(corpus) == (5, 10) and counted(other) == (1, 0)

    notes[0].delete()  # the ORM deletes its annotations first
    Annotation.objects.filter(note=notes[1], task=tasks["heart"]).delete()
    assert counted(corpus) == truth(corpus) == (4, 7)

    with transaction.atomic():  # the note first, its annotations after (foreign keys checked at commit)
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM corpus_note WHERE id = %s", [notes[2].pk])
            cursor.execute("DELETE FROM corpus_annotation WHERE note_id = %s", [notes[2].pk])
    assert counted(corpus) == truth(corpus) == (3, 5) and counted(other) == (1, 0)

    Note.objects.filter(corpus=corpus).delete()
    assert counted(corpus) == (0, 0) and counted(other) == (1, 0)
