"""The recovery sweeper (webapp.lifecycle.recovery): lost workers and lost messages."""
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.lifecycle import queue, recovery, units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import RelevanceChunk, RelevanceJob


@pytest.fixture
def sent(monkeypatch):
    messages = []
    monkeypatch.setattr(queue, "send", lambda name, *ids: messages.extend((name, pk) for pk in ids) or len(ids))
    return messages


@pytest.fixture
def queue_size(monkeypatch):
    sizes = {"relevance": 0, "default": 0, "training": 0}
    monkeypatch.setattr(queue, "waiting_messages", lambda name: sizes[name])
    return sizes


def chunk_kind():
    return next(kind for kind in recovery.KINDS if kind.name == "relevance chunk")


def test_every_kind_of_work_is_registered_with_a_routed_task():
    names = {kind.name for kind in recovery.KINDS}
    assert {"relevance plan", "relevance chunk", "dataset build", "export", "training run", "evaluation",
            "import"} <= names
    assert chunk_kind().queue == "relevance"


def test_a_unit_whose_worker_was_lost_is_queued_and_sent_again(job, sent, queue_size):
    chunk = units.claim(RelevanceChunk, job.chunks.first().pk, "w1@host")
    assert recovery.requeue_lost_workers(chunk_kind()) == []
    RelevanceChunk.objects.filter(pk=chunk.pk).update(heartbeat=timezone.now() - timedelta(seconds=600))
    assert recovery.requeue_lost_workers(chunk_kind()) == [chunk.pk]
    chunk.refresh_from_db()
    assert chunk.status == JobStatus.QUEUED and "w1@host was lost" in chunk.error
    assert sent == [("workers.relevance.run_chunk", chunk.pk)]
    assert recovery.requeue_lost_workers(chunk_kind()) == []  # once only


def test_units_waiting_with_an_empty_queue_lost_their_message_and_are_sent_again(job, sent, queue_size, settings):
    settings.WORK_REQUEUE_GRACE_SECONDS = 60
    waiting = sorted(job.chunks.values_list("pk", flat=True))
    assert recovery.resend_lost_messages(chunk_kind()) == []  # sent a moment ago: within the grace period
    job.chunks.update(heartbeat=timezone.now() - timedelta(seconds=120))
    queue_size["relevance"] = 5
    assert recovery.resend_lost_messages(chunk_kind()) == []  # messages wait: theirs are among them
    queue_size["relevance"] = 0
    assert sorted(recovery.resend_lost_messages(chunk_kind())) == waiting
    assert sorted(pk for _, pk in sent) == waiting
    assert recovery.resend_lost_messages(chunk_kind()) == []  # the grace period starts again


def test_a_lost_planner_is_replaced_and_a_planning_job_without_message_is_sent_again(db, sent, queue_size):
    from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
    from webapp.pipeline import jobs, planning

    job = jobs.launch(spec(make_corpus(2), make_model_version(), make_tasks(1)), enqueue=False)
    plan_kind = next(kind for kind in recovery.KINDS if kind.name == "relevance plan")
    planning.claim(job.pk, "planner@host")
    RelevanceJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(seconds=600))
    assert recovery.sweep() == {"relevance plan": {"lost_workers": [job.pk], "lost_messages": []}}
    assert sent == [("workers.relevance.plan_job", job.pk)] and RelevanceJob.objects.get(pk=job.pk).worker == ""
    RelevanceJob.objects.filter(pk=job.pk).update(heartbeat=timezone.now() - timedelta(seconds=600))
    assert planning.sweep(plan_kind) == ([], [job.pk])
    assert planning.claim(job.pk, "second") is not None


def test_the_sweeper_never_touches_a_running_job_row(job, sent, queue_size):
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING,
                                                  heartbeat=timezone.now() - timedelta(days=1))
    assert recovery.sweep() == {}
    assert RelevanceJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
