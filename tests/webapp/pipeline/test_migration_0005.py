"""Migration 0005: chunks take the lifecycle's statuses and jobs get counters of their chunks."""

import pytest

from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("pipeline", "0004_relevance_config")]
AFTER = [("pipeline", "0005_lifecycle")]


@pytest.mark.django_db(transaction=True)
def test_old_chunk_statuses_are_renamed_and_the_job_counts_its_ended_chunks():
    old = migrate(BEFORE)
    ModelVersion, Job, Chunk = (
        old.get_model("pipeline", name) for name in ("ModelVersion", "RelevanceJob", "RelevanceChunk")
    )
    corpus = make_corpus(old, name="old-ward", language="en")
    model = ModelVersion.objects.create(name="old-model", family="llama", path="old-model")
    job = Job.objects.create(corpus=corpus, model_version=model, status="cancelled", total=10, done=0)
    for index, (status, size, seconds) in enumerate(
        [("done", 4, 2.0), ("done", 3, 1.5), ("skipped", 2, None), ("failed", 1, None), ("pending", 0, None)]
    ):
        Chunk.objects.create(job=job, index=index, pairs=[[1, 1]] * size, size=size, status=status, seconds=seconds)

    migrate(AFTER)
    migrate_to_latest()
    from webapp.pipeline.models import RelevanceChunk, RelevanceJob

    statuses = list(RelevanceChunk.objects.filter(job_id=job.pk).order_by("index").values_list("status", flat=True))
    assert statuses == ["done", "done", "cancelled", "failed", "queued"]
    assert RelevanceChunk.objects.get(job_id=job.pk, index=4).heartbeat is not None  # the sweeper may send it
    job = RelevanceJob.objects.get(pk=job.pk)
    assert (job.chunk_count, job.chunks_done, job.chunks_cancelled, job.chunks_failed) == (5, 2, 1, 1)
    assert (job.done, job.seconds_done) == (7, 3.5)
