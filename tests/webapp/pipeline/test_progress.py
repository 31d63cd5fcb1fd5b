"""Progress figures of a job (webapp.pipeline.progress)."""

from datetime import timedelta

from django.utils import timezone

from tests.webapp.pipeline.factories import spec
from webapp.pipeline import chunks, jobs
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob
from webapp.pipeline.progress import job_progress

Chunk = RelevanceChunk.Status


def test_a_new_job_has_counts_but_no_rate_yet(launched):
    progress = job_progress(launched())
    assert (progress.done, progress.total, progress.percent) == (0, 24, 0)
    assert progress.chunks["waiting"] == 6 and progress.chunk_total == 6
    assert progress.prompts_per_second is None and progress.eta is None
    assert not progress.ended and progress.cancellable and not progress.resumable


def test_a_job_being_planned_shows_the_notes_read(corpus, tasks, model_version):
    job = jobs.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)
    RelevanceJob.objects.filter(pk=job.pk).update(notes_total=6, notes_planned=3)
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.planning and progress.percent == 50 and progress.cancellable and progress.eta is None


def test_throughput_is_measured_over_finished_chunks_and_the_eta_over_live_workers(launched):
    job = launched()
    for index in (0, 1):  # 8 prompts in 8 s
        chunks.finish(chunks.claim(job.chunks.get(index=index).pk, "w"), 4.0, chunks.Outcome())
    chunks.claim(job.chunks.get(index=2).pk, "w1")
    chunks.claim(job.chunks.get(index=3).pk, "w2")
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.prompts_per_second == 1.0
    assert progress.eta == timedelta(seconds=8)  # 16 prompts left, 2 workers at 1 prompt/s
    assert progress.percent == 33 and progress.chunks["running"] == 2 and progress.chunks["waiting"] == 2


def test_a_lost_worker_shows_stalled_and_no_live_eta(launched):
    job = launched()
    chunks.finish(chunks.claim(job.chunks.get(index=0).pk, "w"), 4.0, chunks.Outcome())
    chunks.claim(job.chunks.get(index=1).pk, "w")
    lost_at = timezone.now() - timedelta(seconds=300)
    job.chunks.filter(index=1).update(heartbeat=lost_at)
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.status_label == f"stalled: worker lost at {timezone.localtime(lost_at):%H:%M}"
    assert progress.eta is None and progress.resumable and progress.stalled_since == lost_at


def test_the_poll_costs_the_same_queries_for_many_chunks(launched, django_assert_max_num_queries):
    small = launched()
    big = launched(chunk_size=1)  # 24 chunks
    for job in (small, big):
        with django_assert_max_num_queries(4):
            job_progress(job)


def test_errors_are_listed_with_their_chunk(launched):
    job = launched()
    chunks.fail(chunks.claim(job.chunks.get(index=2).pk, "w"), "Could not compute relevance (ValueError): x")
    chunks.finish(
        chunks.claim(job.chunks.get(index=4).pk, "w"),
        1.0,
        chunks.Outcome(problems=["Note 1 x task 2 skipped (invalid input)."]),
    )
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.errors == [
        "Chunk 3: Could not compute relevance (ValueError): x",
        "Chunk 5: Note 1 x task 2 skipped (invalid input).",
    ]
    assert progress.failed_chunks == 1


def test_an_ended_job_says_so(launched):
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.ended and progress.resumable and not progress.cancellable and progress.eta is None
