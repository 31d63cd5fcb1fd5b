"""The review queue serves the next (note, task) pair with a peak the reviewer has not decided."""

import pytest

from webapp.corpus.models import Note
from webapp.review import decisions, queue
from webapp.review.decisions import PeakContext
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map, word_span


@pytest.fixture
def sel(base, sharp):
    return Selection(None, base, "attnlrp", "en", sharp, sharp.params)


@pytest.fixture
def notes(corpus, tasks, base):
    """Three notes: n1 with peaks for both tasks, n2 with none, n3 with a peak for heart rate."""
    made = [Note.objects.create(corpus=corpus, external_id=f"q{i}", text=TEXT) for i in range(3)]
    add_map(made[0], tasks["heart"], base, {"130": 0.9})
    add_map(made[0], tasks["pacemaker"], base, {"Pacemaker": 0.9})
    add_map(made[1], tasks["heart"], base, {})
    add_map(made[2], tasks["heart"], base, {"tachycardic": 0.9})
    return made


def accept_all(note, task, model, user, words):
    ctx = PeakContext(note, task, model, "attnlrp", "en")
    for word in words:
        a, b = word_span(TEXT, word)
        decisions.decide(ctx, user, start=a, end=b, decision="accept", expected_version=0)


def test_the_queue_goes_by_note_then_task(corpus, sel, notes, tasks, clinician):
    first = queue.next_pair(corpus, sel, clinician)
    assert first.pair == (notes[0].pk, tasks["heart"].pk)
    second = queue.next_pair(corpus, sel, clinician, after=first.pair)
    assert second.pair == (notes[0].pk, tasks["pacemaker"].pk)


def test_pairs_without_peaks_are_skipped(corpus, sel, notes, tasks, clinician):
    result = queue.next_pair(corpus, sel, clinician, after=(notes[0].pk, tasks["pacemaker"].pk))
    assert result.pair == (notes[2].pk, tasks["heart"].pk)


def test_a_pair_the_reviewer_finished_is_skipped_but_not_for_another_reviewer(
    corpus, sel, notes, tasks, base, clinician, admin_user
):
    accept_all(notes[0], tasks["heart"], base, clinician, ["130"])
    assert queue.next_pair(corpus, sel, clinician).pair == (notes[0].pk, tasks["pacemaker"].pk)
    assert queue.next_pair(corpus, sel, admin_user).pair == (notes[0].pk, tasks["heart"].pk)


def test_when_everything_is_decided_the_queue_says_it_is_finished(corpus, sel, notes, tasks, base, clinician):
    accept_all(notes[0], tasks["heart"], base, clinician, ["130"])
    accept_all(notes[0], tasks["pacemaker"], base, clinician, ["Pacemaker"])
    accept_all(notes[2], tasks["heart"], base, clinician, ["tachycardic"])
    result = queue.next_pair(corpus, sel, clinician)
    assert result.pair is None and result.finished and result.scanned == 4


def test_a_request_looks_at_no_more_than_its_window(corpus, sel, notes, tasks, clinician):
    result = queue.next_pair(corpus, sel, clinician, after=(notes[0].pk, tasks["pacemaker"].pk), scan=1, batch=1)
    assert result.pair is None and not result.finished
    assert result.cursor == (notes[1].pk, tasks["heart"].pk)
    assert queue.next_pair(corpus, sel, clinician, after=result.cursor).pair == (notes[2].pk, tasks["heart"].pk)


def test_a_chosen_task_limits_the_queue(corpus, sel, notes, tasks, clinician):
    sel.task = tasks["pacemaker"]
    assert queue.next_pair(corpus, sel, clinician).pair == (notes[0].pk, tasks["pacemaker"].pk)
    assert queue.next_pair(corpus, sel, clinician, after=(notes[0].pk, tasks["pacemaker"].pk)).pair is None


def test_a_retired_tasks_pairs_are_left_out_of_the_queue(corpus, sel, notes, tasks, clinician):
    tasks["heart"].retired = True
    tasks["heart"].save()
    first = queue.next_pair(corpus, sel, clinician)
    assert first.pair == (notes[0].pk, tasks["pacemaker"].pk)
    assert queue.next_pair(corpus, sel, clinician, after=first.pair).pair is None
