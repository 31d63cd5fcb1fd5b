"""Progress figures of a job (webapp.pipeline.progress)."""
from datetime import timedelta

from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob
from webapp.pipeline.progress import job_progress

Chunk = RelevanceChunk.Status


def test_a_new_job_has_counts_but_no_rate_yet(launched):
    progress = job_progress(launched())
    assert (progress.done, progress.total, progress.percent) == (0, 24, 0)
    assert progress.chunks[Chunk.PENDING] == 6 and progress.chunk_total == 6
    assert progress.prompts_per_second is None and progress.eta is None
    assert not progress.ended and progress.cancellable and not progress.resumable


def test_throughput_is_measured_over_finished_chunks_and_the_eta_over_running_workers(launched):
    job = launched()
    job.chunks.filter(index__in=[0, 1]).update(status=Chunk.DONE, seconds=4.0)  # 8 prompts in 8 s
    job.chunks.filter(index__in=[2, 3]).update(status=Chunk.RUNNING)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, done=8)
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.prompts_per_second == 1.0
    assert progress.eta == timedelta(seconds=8)  # 16 prompts left, 2 workers at 1 prompt/s
    assert progress.percent == 33


def test_errors_are_listed_with_their_chunk(launched):
    job = launched()
    job.chunks.filter(index=2).update(status=Chunk.FAILED, error="Could not compute relevance (ValueError): x")
    job.chunks.filter(index=4).update(status=Chunk.DONE, error="Note 1 x task 2 skipped (invalid input).")
    progress = job_progress(job)
    assert progress.errors == ["Chunk 3: Could not compute relevance (ValueError): x",
                               "Chunk 5: Note 1 x task 2 skipped (invalid input)."]
    assert progress.failed_chunks == 1


def test_an_ended_job_says_so(launched):
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    job.refresh_from_db()
    progress = job_progress(job)
    assert progress.ended and progress.resumable and not progress.cancellable and progress.eta is None
