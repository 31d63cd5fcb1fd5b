"""The transitions every unit of work shares (webapp.lifecycle.units), on relevance chunks."""

from datetime import timedelta

from django.utils import timezone

from webapp.lifecycle import units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import RelevanceChunk


def first_chunk(job):
    return job.chunks.order_by("index").first()


def age(unit, seconds):
    type(unit).objects.filter(pk=unit.pk).update(heartbeat=timezone.now() - timedelta(seconds=seconds))


def test_a_claim_takes_a_queued_unit_once(job):
    chunk = first_chunk(job)
    held = units.claim(RelevanceChunk, chunk.pk, "w1")
    assert (held.status, held.attempts, held.worker) == (JobStatus.RUNNING, 1, "w1")
    assert held.heartbeat is not None and held.started is not None
    assert units.claim(RelevanceChunk, chunk.pk, "w2") is None  # held by a live worker


def test_a_unit_whose_worker_is_silent_for_the_stall_time_is_lost_and_can_be_taken_over(job, settings):
    settings.WORK_STALL_SECONDS = 60
    chunk = units.claim(RelevanceChunk, first_chunk(job).pk, "w1")
    age(chunk, 59)
    assert (
        units.claim(RelevanceChunk, chunk.pk, "w2") is None and not RelevanceChunk.objects.get(pk=chunk.pk).is_stalled
    )
    age(chunk, 61)
    stalled = RelevanceChunk.objects.get(pk=chunk.pk)
    assert stalled.is_stalled and stalled.status_text().startswith("stalled: worker lost at ")
    taken = units.claim(RelevanceChunk, chunk.pk, "w2")
    assert (taken.attempts, taken.worker) == (2, "w2")
    # The first worker wakes up: every write it tries finds nothing, the second one's work stands.
    assert units.beat(chunk) is None
    assert not units.finish(chunk) and not units.fail(chunk, "late") and not units.release(chunk)
    assert units.finish(taken)
    assert RelevanceChunk.objects.get(pk=chunk.pk).status == JobStatus.DONE


def test_a_lost_attempt_is_told_whether_its_unit_was_only_queued_again_or_taken_over(job):
    chunk = units.claim(RelevanceChunk, first_chunk(job).pk, "w1")
    RelevanceChunk.objects.filter(pk=chunk.pk).update(status=JobStatus.QUEUED)  # as the sweeper does
    assert units.beat(chunk) is None
    assert units.fate(chunk) == "queued again after its heartbeat went stale; no other worker holds it yet"
    units.claim(RelevanceChunk, chunk.pk, "w2")
    assert units.fate(chunk) == "taken over by attempt 2 (w2), now running"
    RelevanceChunk.objects.filter(pk=chunk.pk).update(status=JobStatus.CANCELLED, attempts=1)
    assert units.fate(chunk) == "ended cancelled"


def test_beat_says_when_a_cancel_was_asked_for(job):
    chunk = units.claim(RelevanceChunk, first_chunk(job).pk, "w1")
    assert units.beat(chunk) == JobStatus.RUNNING
    assert units.request_cancel(RelevanceChunk, chunk.pk) == JobStatus.CANCELLING
    assert units.beat(chunk) == JobStatus.CANCELLING
    assert units.cancelled(chunk)
    assert RelevanceChunk.objects.get(pk=chunk.pk).status == JobStatus.CANCELLED


def test_cancel_of_a_queued_unit_is_immediate_and_a_lost_cancelling_one_is_not_claimed(job):
    chunks = list(job.chunks.order_by("index"))
    assert units.request_cancel(RelevanceChunk, chunks[0].pk) == JobStatus.CANCELLED
    held = units.claim(RelevanceChunk, chunks[1].pk, "w1")
    units.request_cancel(RelevanceChunk, held.pk)
    age(held, 600)
    assert units.claim(RelevanceChunk, held.pk, "w2") is None  # left to the sweeper (and its clean-up)
    assert units.request_cancel(RelevanceChunk, held.pk) == JobStatus.CANCELLED  # or a person, at once
    assert units.request_cancel(RelevanceChunk, held.pk) is None  # nothing left to cancel


def test_requeue_takes_back_ended_and_lost_units_only(job):
    chunks = list(job.chunks.order_by("index"))
    live = units.claim(RelevanceChunk, chunks[0].pk, "w1")
    assert not units.requeue(RelevanceChunk, live.pk)
    age(live, 600)
    assert units.requeue(RelevanceChunk, live.pk)
    failed = units.claim(RelevanceChunk, chunks[1].pk, "w1")
    units.fail(failed, "boom")
    assert units.requeue(RelevanceChunk, failed.pk)
    again = RelevanceChunk.objects.get(pk=failed.pk)
    assert (again.status, again.error, again.finished) == (JobStatus.QUEUED, "", None)
    done = units.claim(RelevanceChunk, chunks[2].pk, "w1")
    units.finish(done)
    assert not units.requeue(RelevanceChunk, done.pk)
