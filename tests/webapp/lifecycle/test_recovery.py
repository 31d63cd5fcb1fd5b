"""The recovery sweeper (webapp.lifecycle.recovery): lost workers and lost messages."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.projects import default_project
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
    assert {
        "relevance plan",
        "relevance chunk",
        "dataset build",
        "export",
        "training run",
        "evaluation",
        "import",
    } <= names
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
    RelevanceJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, heartbeat=timezone.now() - timedelta(days=1)
    )
    assert recovery.sweep() == {}
    assert RelevanceJob.objects.get(pk=job.pk).status == JobStatus.RUNNING


def test_a_unit_lost_while_cancelling_ends_cancelled_with_its_kinds_clean_up(db, sent, queue_size):
    from webapp.corpus.models import Corpus, Note
    from webapp.datasets.models import DatasetVersion, MaskedExample
    from webapp.pipeline.models import ModelVersion, PeakProfile

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text="HR 120.")
    dataset = DatasetVersion.objects.create(
        name="d",
        corpus=corpus,
        model_version=ModelVersion.objects.create(name="m", family="llama", path="m"),
        profile=PeakProfile.objects.create(name="p"),
    )
    held = units.claim(DatasetVersion, dataset.pk, "w1")
    MaskedExample.objects.create(
        dataset=dataset, note=note, tasks=[], masked_text="HR <mask>.", label="120", char_start=3, char_end=6
    )  # written before the cancel
    assert units.request_cancel(DatasetVersion, held.pk) == JobStatus.CANCELLING
    DatasetVersion.objects.filter(pk=held.pk).update(heartbeat=timezone.now() - timedelta(seconds=600))
    build_kind = next(kind for kind in recovery.KINDS if kind.name == "dataset build")
    assert recovery.requeue_lost_workers(build_kind) == [] and sent == []  # not queued again
    assert DatasetVersion.objects.get(pk=held.pk).status == JobStatus.CANCELLED
    assert not MaskedExample.objects.filter(dataset=dataset).exists()  # a cancelled build keeps no examples


def test_a_lost_chunk_of_a_cancelling_job_ends_cancelled_and_the_job_ends(job, sent, queue_size):
    from webapp.pipeline import chunks, jobs

    held = chunks.claim(job.chunks.order_by("index").first().pk, "w1")
    jobs.cancel(job)
    RelevanceChunk.objects.filter(pk=held.pk).update(heartbeat=timezone.now() - timedelta(seconds=600))
    recovery.sweep()
    job.refresh_from_db()
    assert (job.status, job.chunks_cancelled, job.chunk_count) == (JobStatus.CANCELLED, 3, 3)
    assert sent == []


def test_a_job_whose_last_chunk_ended_without_settling_is_settled_by_the_sweeper(job, sent, queue_size):
    from webapp.pipeline import chunks

    for chunk in job.chunks.all():
        chunks.finish(chunks.claim(chunk.pk, "w"), 1.0, chunks.Outcome())
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, finished=None)  # killed before settling
    recovery.sweep()
    assert RelevanceJob.objects.get(pk=job.pk).status == JobStatus.DONE


def test_chunks_written_while_planning_are_neither_sent_again_nor_claimed(db, sent, queue_size):
    from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
    from webapp.pipeline import chunks, jobs, planning

    corpus, tasks = make_corpus(1), make_tasks(1)
    job = jobs.launch(spec(corpus, make_model_version(), tasks), enqueue=False)
    planner = planning.claim(job.pk, "planner")
    assert planning._write(planner, [planning._chunk(planner, 0, [[corpus.notes.get().pk, tasks[0].pk]])])
    chunk = job.chunks.get()
    assert chunk.status == JobStatus.QUEUED and chunk.heartbeat is None
    assert recovery.resend_lost_messages(chunk_kind(), now=timezone.now() + timedelta(days=1)) == []
    assert chunks.claim(chunk.pk, "w") is None  # its job is still being planned
    jobs.cancel(job)
    assert not job.chunks.exists()  # a cancelled plan leaves nothing behind
