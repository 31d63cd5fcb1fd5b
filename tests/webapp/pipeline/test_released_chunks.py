"""A relevance worker that cannot load the job's model releases the chunk (webapp.pipeline.chunks.
release_unloadable): back to queued for another worker, its name and reason on the chunk and the
job page; never counted as a worker death; failed, with a reason, once every live worker has
released it RELEVANCE_RELEASE_LIMIT times. The real-worker version: tests/workers/test_released_chunks.py."""

from django.urls import reverse

from webapp.pipeline import chunks, jobs
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status
A, B = "relevance@host-a pid 11", "relevance@host-b pid 22"
REASON = "storage unreachable for s3://artifacts/models/m (EndpointConnectionError)"


def release_by(worker, chunk_pk):
    chunk = chunks.claim(chunk_pk, worker)
    assert chunk is not None, f"chunk {chunk_pk} could not be claimed"
    return chunks.release_unloadable(chunk, REASON)


def test_a_released_chunk_is_queued_again_with_the_worker_and_model_named(settings, launched):
    settings.RELEVANCE_RELEASE_LIMIT = 3
    job = launched()
    first = job.chunks.get(index=0)
    released = release_by(A, first.pk)
    assert not released.failed and released.delay == settings.RELEVANCE_RELEASE_DELAY_SECONDS
    first.refresh_from_db()
    assert first.status == Chunk.QUEUED and first.releases == {"relevance@host-a": 1}
    assert "Worker relevance@host-a cannot load model tiny-llama (storage unreachable" in first.error
    lacking = RelevanceJob.objects.get(pk=job.pk).lacking
    assert lacking["relevance@host-a"]["model"] == "tiny-llama" and lacking["relevance@host-a"]["releases"] == 1
    assert release_by(A, first.pk).delay == 2 * settings.RELEVANCE_RELEASE_DELAY_SECONDS  # the back-off grows


def test_a_chunk_released_by_every_worker_limit_times_fails_with_a_clear_reason(settings, launched):
    settings.RELEVANCE_RELEASE_LIMIT = 2
    job = launched()
    pk = job.chunks.get(index=0).pk
    assert not release_by(A, pk).failed
    released = release_by(A, pk)
    assert released.failed
    chunk = RelevanceChunk.objects.get(pk=pk)
    assert chunk.status == Chunk.FAILED
    assert chunk.error.startswith("No worker could load model tiny-llama: released 2 times by each of relevance@host-a")
    assert "docs/operations.md: What must be shared" in chunk.error
    assert RelevanceJob.objects.get(pk=job.pk).chunks_failed == 1
    assert chunks.claim(pk, A) is None  # ended: no further attempt, no loop


def test_a_busy_worker_that_has_not_tried_keeps_the_chunk_waiting_for_it(settings, launched):
    settings.RELEVANCE_RELEASE_LIMIT = 2
    job = launched()
    pk, other = job.chunks.get(index=0).pk, job.chunks.get(index=1).pk
    held_by_b = chunks.claim(other, B)  # B is alive and busy: it may have the model
    for _ in range(3):
        assert not release_by(A, pk).failed
    assert RelevanceChunk.objects.get(pk=pk).status == Chunk.QUEUED
    chunks.finish(held_by_b, 1.0, chunks.Outcome())  # B is idle now and never took the chunk
    assert release_by(A, pk).failed


def test_releases_do_not_count_as_worker_deaths(settings, launched):
    settings.RELEVANCE_RELEASE_LIMIT = 3 * chunks.MAX_ATTEMPTS
    job = launched()
    pk = job.chunks.get(index=0).pk
    for _ in range(chunks.MAX_ATTEMPTS + 2):
        assert not release_by(A, pk).failed
    chunk = chunks.claim(pk, B)  # would be "gave up after 5 attempts" if releases counted
    assert chunk is not None and chunk.attempts == chunks.MAX_ATTEMPTS + 3


def test_an_attempt_that_lost_the_chunk_releases_nothing(launched):
    job = launched()
    chunk = chunks.claim(job.chunks.get(index=0).pk, A)
    RelevanceChunk.objects.filter(pk=chunk.pk).update(attempts=chunk.attempts + 1, worker=B)  # taken over
    assert chunks.release_unloadable(chunk, REASON) is None
    assert RelevanceChunk.objects.get(pk=chunk.pk).releases == {}


def test_resume_gives_every_worker_its_releases_again(settings, launched, researcher):
    settings.RELEVANCE_RELEASE_LIMIT = 1
    job = launched()
    pk = job.chunks.get(index=0).pk
    for each in job.chunks.values_list("pk", flat=True):
        assert release_by(A, each).failed
    assert RelevanceJob.objects.get(pk=job.pk).status == JobStatus.FAILED
    jobs.resume(RelevanceJob.objects.get(pk=job.pk), researcher, enqueue=False)
    chunk = RelevanceChunk.objects.get(pk=pk)
    assert chunk.status == Chunk.QUEUED and chunk.releases == {}


def test_the_job_page_says_which_worker_lacks_which_model(client, clinician, settings, launched):
    settings.RELEVANCE_RELEASE_LIMIT = 3
    job = launched()
    release_by(A, job.chunks.get(index=0).pk)
    client.force_login(clinician)
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):  # the page and its poll
        html = client.get(reverse("pipeline:job_detail", args=[job.pk]), **headers).content.decode()
        assert "<strong>relevance@host-a</strong> lacks model <strong>tiny-llama</strong>" in html
        assert "storage unreachable for s3://artifacts/models/m" in html and "1 release," in html
