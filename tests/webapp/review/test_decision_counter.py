"""The task row's decision counter (review migration 0004) equals a COUNT after every kind of write."""

import importlib

import pytest
from django.db import connection
from django.db.models import ProtectedError

from ml.relevance import default_config_key
from tests.projects import default_project
from webapp.corpus.models import Corpus, Note, Task
from webapp.corpus.stats import task_summaries
from webapp.review import decisions
from webapp.review.decisions import PeakContext
from webapp.review.models import PeakDecision

from .fabricate import TEXT

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL triggers")

SPANS = [(0, 2), (3, 5), (6, 10), (11, 17)]


@pytest.fixture
def carl(django_user_model):
    return django_user_model.objects.create_user("carl", password="x" * 12)


def _counts() -> dict[str, tuple[int, int]]:
    """{task slug: (counter, COUNT of its decisions)}."""
    return {t.slug: (t.decision_count, PeakDecision.objects.filter(task=t).count()) for t in Task.objects.all()}


def _assert_counts(expected: dict[str, int]) -> None:
    counts = _counts()
    assert {slug: counter for slug, (counter, _) in counts.items()} == expected
    assert all(counter == counted for counter, counted in counts.values()), counts


def _rows(note, task, model, reviewer, spans) -> list[PeakDecision]:
    return [
        PeakDecision(
            note=note,
            task=task,
            model_version=model,
            method="attnlrp",
            template="en",
            config_key=default_config_key("attnlrp", "en"),
            start=start,
            end=end,
            decision="accept",
            reviewer=reviewer,
        )
        for start, end in spans
    ]


def test_the_counter_follows_decisions_made_changed_and_undone(note, tasks, base, clinician, carl):
    heart = PeakContext(note, tasks["heart"], base, "attnlrp", "en")
    for start, end in SPANS[:3]:
        decisions.decide(heart, clinician, start=start, end=end, decision="accept", expected_version=0)
    decisions.decide(heart, carl, start=0, end=2, decision="reject", expected_version=0)
    pacemaker = PeakContext(note, tasks["pacemaker"], base, "attnlrp", "en")
    decisions.decide(pacemaker, clinician, start=0, end=2, decision="reject", expected_version=0)
    _assert_counts({"heart-rate": 4, "presence-of-pacemaker": 1})

    # a change and its undo rewrite the row: still one decision each
    decisions.decide(heart, carl, start=0, end=2, decision="accept", expected_version=1)
    assert decisions.undo_last(carl, note)[0] == "undo-update"
    _assert_counts({"heart-rate": 4, "presence-of-pacemaker": 1})

    # undoing a new decision deletes it
    assert decisions.undo_last(clinician, note)[0] == "undo-create"
    _assert_counts({"heart-rate": 4, "presence-of-pacemaker": 0})


def test_a_bulk_insert_counts_every_row_of_every_task(note, tasks, base, clinician, carl):
    PeakDecision.objects.bulk_create(
        _rows(note, tasks["heart"], base, clinician, SPANS)
        + _rows(note, tasks["heart"], base, carl, SPANS[:3])
        + _rows(note, tasks["pacemaker"], base, carl, SPANS[:2])
    )
    _assert_counts({"heart-rate": 7, "presence-of-pacemaker": 2})


def test_an_update_moving_decisions_to_another_task_moves_the_count(note, tasks, base, clinician):
    PeakDecision.objects.bulk_create(_rows(note, tasks["heart"], base, clinician, SPANS))
    PeakDecision.objects.filter(start__lt=5).update(task=tasks["pacemaker"])
    _assert_counts({"heart-rate": 2, "presence-of-pacemaker": 2})
    PeakDecision.objects.update(comment="seen")  # no task changes
    _assert_counts({"heart-rate": 2, "presence-of-pacemaker": 2})


def test_deleting_notes_and_corpora_takes_their_decisions_off_the_count(note, tasks, base, clinician):
    other_note = Note.objects.create(corpus=note.corpus, external_id="n2", text=TEXT)
    elsewhere = Corpus.objects.create(project=default_project(), name="clinic", language="en")
    far_note = Note.objects.create(corpus=elsewhere, external_id="n1", text=TEXT)
    PeakDecision.objects.bulk_create(
        _rows(note, tasks["heart"], base, clinician, SPANS)
        + _rows(other_note, tasks["heart"], base, clinician, SPANS[:2])
        + _rows(other_note, tasks["pacemaker"], base, clinician, SPANS[:1])
        + _rows(far_note, tasks["pacemaker"], base, clinician, SPANS[:3])
    )
    _assert_counts({"heart-rate": 6, "presence-of-pacemaker": 4})
    other_note.delete()
    _assert_counts({"heart-rate": 4, "presence-of-pacemaker": 3})
    note.corpus.delete()
    _assert_counts({"heart-rate": 0, "presence-of-pacemaker": 3})


def test_a_task_with_decisions_cannot_be_deleted_and_keeps_its_count(note, tasks, base, clinician):
    PeakDecision.objects.bulk_create(_rows(note, tasks["heart"], base, clinician, SPANS[:2]))
    with pytest.raises(ProtectedError):
        tasks["heart"].delete()
    tasks["pacemaker"].delete()
    _assert_counts({"heart-rate": 2})


def test_saving_a_task_read_before_new_decisions_keeps_them_counted(note, tasks, base, clinician):
    task = Task.objects.get(slug="heart-rate")
    PeakDecision.objects.bulk_create(_rows(note, tasks["heart"], base, clinician, SPANS))
    task.description = "heart rate (bpm)"
    task.save()  # e.g. the admin's change form, read before the decisions were made
    task.refresh_from_db()
    assert (task.description, task.decision_count) == ("heart rate (bpm)", 4)


def test_truncate_sets_every_counter_to_zero(note, tasks, base, clinician):
    PeakDecision.objects.bulk_create(_rows(note, tasks["heart"], base, clinician, SPANS))
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE refuses pending (deferred) FK checks
        cursor.execute("TRUNCATE review_peakdecision")
    _assert_counts({"heart-rate": 0, "presence-of-pacemaker": 0})


def test_the_migration_counts_the_decisions_already_stored(note, tasks, base, clinician, carl):
    migration = importlib.import_module("webapp.review.migrations.0004_task_decision_count")
    with connection.cursor() as cursor:
        cursor.execute(migration.BACKWARD)  # as before the migration: nothing counts
        PeakDecision.objects.bulk_create(
            _rows(note, tasks["heart"], base, clinician, SPANS) + _rows(note, tasks["pacemaker"], base, carl, SPANS)
        )
        PeakDecision.objects.filter(reviewer=carl, start=0).delete()
        assert _counts()["heart-rate"] == (0, 4)
        cursor.execute(migration.FORWARD)
    _assert_counts({"heart-rate": 4, "presence-of-pacemaker": 3})


def test_the_summary_reads_the_counters(note, tasks, base, clinician, django_assert_num_queries, site_admin):
    PeakDecision.objects.bulk_create(_rows(note, tasks["pacemaker"], base, clinician, SPANS[:3]))
    with django_assert_num_queries(1) as captured:
        read = [(s.task.slug, s.decisions) for s in task_summaries(site_admin)]
    assert "review_peakdecision" not in captured.captured_queries[0]["sql"]
    assert read == [("heart-rate", 0), ("presence-of-pacemaker", 3)]
