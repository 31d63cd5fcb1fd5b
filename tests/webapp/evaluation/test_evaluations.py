"""Evaluation specs, planning, launch and the status transitions (no model needed)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.projects import default_project
from tests.webapp.evaluation.factories import annotated_pairs_count, make_annotated_corpus, spec
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus
from webapp.evaluation import evaluations
from webapp.evaluation.evaluations import EvaluationError, annotated_pairs
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus, PeakProfile


def test_the_pairs_are_the_distinct_annotated_pairs_with_evidence(annotated):
    corpus, tasks = annotated
    note = corpus.notes.order_by("pk").first()
    # a second annotator of the same pair, and an annotation without evidence, add no pair
    Annotation.objects.create(
        note=note, task=tasks[0], label=tasks[0].options[1], annotator_name="second", evidence=[[0, 3]]
    )
    other = corpus.notes.order_by("pk").last()
    Annotation.objects.filter(note=other).delete()
    Annotation.objects.create(note=other, task=tasks[1], label="n", annotator_name="import:gold", evidence=[])
    pairs = annotated_pairs(corpus)
    assert pairs == sorted(set(pairs)) and len(pairs) == annotated_pairs_count(corpus)
    assert (other.pk, tasks[1].pk) not in pairs
    assert annotated_pairs(corpus, [tasks[1]]) == [p for p in pairs if p[1] == tasks[1].pk]


def test_launch_plans_pairs_and_configurations_attnlrp_last_and_audits(
    annotated, model_version, researcher, no_queue, django_capture_on_commit_callbacks
):
    corpus, _ = annotated
    with django_capture_on_commit_callbacks(execute=True):
        evaluation = evaluations.launch(
            spec(corpus, model_version, methods=["attnlrp", "grad_input", "attention"], explains=["next", "span"]),
            actor=researcher,
        )
    n = annotated_pairs_count(corpus)
    assert [(c["method"], c["explain"]) for c in evaluation.configs] == [
        ("attention", "next"),
        ("attention", "span"),
        ("grad_input", "next"),
        ("grad_input", "span"),
        ("attnlrp", "next"),
        ("attnlrp", "span"),
    ]
    assert evaluation.n_pairs == n and evaluation.total == 6 * n and evaluation.status == JobStatus.QUEUED
    assert evaluation.profile == PeakProfile.objects.get(is_default=True) and evaluation.created_by == researcher
    assert no_queue == [evaluation.pk]  # sent after the commit
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB)
    assert event.actor == researcher and event.object_id == str(evaluation.pk)
    assert event.details == {
        "what": "relevance evaluation",
        "corpus": corpus.pk,
        "model": model_version.name,
        "configurations": 6,
        "pairs": n,
        "pairs_from": "evidence",
        "faithfulness": False,
    }


def test_max_pairs_draws_a_seeded_sorted_sample(annotated, model_version, no_queue):
    corpus, _ = annotated
    first = evaluations.launch(spec(corpus, model_version, max_pairs=3, seed=1))
    again = evaluations.launch(spec(corpus, model_version, max_pairs=3, seed=1))
    assert first.pairs == again.pairs == sorted(first.pairs) and len(first.pairs) == 3
    assert first.total == 3 and set(map(tuple, first.pairs)) <= set(annotated_pairs(corpus))
    others = {
        tuple(map(tuple, evaluations.launch(spec(corpus, model_version, max_pairs=3, seed=s)).pairs))
        for s in range(2, 8)
    }
    assert len(others | {tuple(map(tuple, first.pairs))}) > 1  # the seed draws the sample


def test_the_template_auto_follows_the_corpus_language(annotated, model_version):
    corpus, _ = annotated
    assert spec(corpus, model_version, template="auto").configs()[0].template == "en"
    Corpus.objects.filter(pk=corpus.pk).update(language="it")
    corpus.refresh_from_db()
    assert spec(corpus, model_version, template="auto").configs()[0].template == "it"
    Corpus.objects.filter(pk=corpus.pk).update(language="de")
    corpus.refresh_from_db()
    assert spec(corpus, model_version, template="auto").configs()[0].template == "en"


def test_a_spec_lists_its_problems_in_plain_words(annotated, model_version, db):
    corpus, _ = annotated
    assert spec(corpus, model_version).problems() == {}
    problems = spec(corpus, model_version, methods=["lime"], explains=[]).problems()
    assert "Choose methods" in problems["methods"] and "Choose explain variants" in problems["explains"]
    custom = spec(corpus, model_version, explains=["contrastive"], template="{note} Seen: {task}").problems()
    assert "neutral description" in custom["template"]
    empty = Corpus.objects.create(project=default_project(), name="empty", language="en")
    assert "no annotation with evidence spans" in spec(empty, model_version).problems()["corpus"]
    with pytest.raises(EvaluationError, match="no annotation with evidence"):
        evaluations.launch(spec(empty, model_version))
    assert not RelevanceEvaluation.objects.exists()


def launched(corpus, model_version, **changes):
    return evaluations.launch(spec(corpus, model_version, **changes), enqueue=False)


def status_of(evaluation):
    return RelevanceEvaluation.objects.get(pk=evaluation.pk).status


def test_a_claim_takes_a_queued_evaluation_once(annotated, model_version):
    evaluation = launched(*annotated[:1], model_version)
    claimed = evaluations.claim(evaluation.pk, worker="w1")
    assert claimed.status == JobStatus.RUNNING and claimed.attempts == 1 and claimed.worker == "w1"
    assert evaluations.claim(evaluation.pk, worker="w2") is None  # a duplicate message while w1 is alive


def test_a_stalled_evaluation_says_when_its_worker_was_lost_and_gives_no_eta(annotated, model_version, settings):
    settings.WORK_STALL_SECONDS = 60
    evaluation = launched(*annotated[:1], model_version)
    claimed = evaluations.claim(evaluation.pk)
    assert evaluations.report(claimed, done=2, seconds_per_prompt=3.0)
    evaluation.refresh_from_db()
    assert evaluation.status_text() == "Running" and evaluation.eta_seconds == (evaluation.total - 2) * 3.0
    silent = timezone.now() - timedelta(seconds=61)
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(heartbeat=silent)
    evaluation.refresh_from_db()
    assert evaluation.status_text() == f"stalled: worker lost at {timezone.localtime(silent):%H:%M}"
    assert evaluation.eta_seconds is None


def test_a_redelivered_message_takes_back_an_evaluation_whose_worker_went_silent(annotated, model_version):
    evaluation = launched(*annotated[:1], model_version)
    first = evaluations.claim(evaluation.pk)
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(heartbeat=timezone.now() - timedelta(minutes=2))
    second = evaluations.claim(evaluation.pk, worker="w2")
    assert second.attempts == 2
    assert not evaluations.report(first, done=1)  # the first attempt, if it wakes up, writes nothing
    assert evaluations.report(second, done=1)


def test_cancel_a_queued_one_at_once_and_a_running_one_between_batches(annotated, model_version, researcher):
    corpus, _ = annotated
    queued = launched(corpus, model_version)
    evaluations.cancel(queued, actor=researcher)
    assert status_of(queued) == JobStatus.CANCELLED
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, object_id=str(queued.pk)).exists()

    running = launched(corpus, model_version)
    claimed = evaluations.claim(running.pk)
    evaluations.cancel(running)
    assert status_of(running) == JobStatus.CANCELLING and evaluations.cancel_requested(claimed)
    assert evaluations.cancelled(claimed) and status_of(running) == JobStatus.CANCELLED
    with pytest.raises(EvaluationError, match="Only a queued or running evaluation"):
        evaluations.cancel(running)


def test_resume_queues_a_failed_or_cancelled_or_stalled_evaluation_but_not_a_live_one(
    annotated, model_version, no_queue, django_capture_on_commit_callbacks
):
    corpus, _ = annotated
    evaluation = launched(corpus, model_version)
    claimed = evaluations.claim(evaluation.pk)
    with pytest.raises(EvaluationError, match="its worker is alive"):
        evaluations.resume(evaluation)
    assert not claimed.resumable
    evaluations.fail(claimed, "Stopped.")
    evaluation.refresh_from_db()
    assert evaluation.resumable
    with django_capture_on_commit_callbacks(execute=True):
        evaluations.resume(evaluation)
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.error) == (JobStatus.QUEUED, "") and no_queue == [evaluation.pk]

    claimed = evaluations.claim(evaluation.pk)
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(heartbeat=timezone.now() - timedelta(minutes=2))
    evaluation.refresh_from_db()
    assert evaluation.is_stalled and evaluation.resumable
    assert evaluations.resume(evaluation, enqueue=False).status_text() == "Queued"
    assert status_of(evaluation) == JobStatus.QUEUED

    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(status=JobStatus.DONE)
    evaluation.refresh_from_db()
    with pytest.raises(EvaluationError, match="nothing to resume"):
        evaluations.resume(evaluation)


def test_a_second_corpus_with_the_same_note_ids_does_not_leak_pairs(db, model_version):
    first, _ = make_annotated_corpus(name="a")
    second = Corpus.objects.create(project=default_project(), name="b", language="en")
    assert annotated_pairs(second) == [] and annotated_pairs(first)
