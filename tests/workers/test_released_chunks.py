"""Real Celery relevance workers, one of which cannot load the job's model.

The model is a tiny random Llama published to a real S3-compatible server started by the test
(moto's standalone server, tests/webapp/pipeline/s3server.py); its ModelVersion.path is the s3://
URI. Worker A's storage options point at a port nobody listens on (its storage is unreachable);
worker B reaches the server and fetches the model into its own cache. A releases every chunk it
takes (the job page names it and the model) and B computes them all. Alone, A releases each chunk
RELEVANCE_RELEASE_LIMIT times and the chunks end failed: no endless loop.
"""

import json
import time

import pytest
from django.urls import reverse

from tests.webapp.pipeline import s3server
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from tests.webapp.pipeline.s3server import BUCKET, unreachable_options
from tests.workers.test_relevance_jobs import assert_every_pair_has_exactly_one_map, plan_here, reload, wait
from webapp.lib import storage
from webapp.pipeline.models import JobStatus, RelevanceChunk

s3_server = s3server.s3_server  # the fixture (session-scoped: one server)
Chunk = RelevanceChunk.Status


@pytest.fixture
def relevance_queue_empty():
    from workers.celery_app import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("relevance")


def remote_job(tiny_model_dir, s3_server, notes=4, chunk_size=4):
    uri = storage.publish_named(tiny_model_dir, f"s3://{BUCKET}/workers", "tiny", s3_server.options)
    version = make_model_version(uri, name="tiny-llama+remote")
    return plan_here(spec(make_corpus(notes, sentences=2), version, make_tasks(2), chunk_size=chunk_size))


def node(worker) -> str:
    """The prefix of a worker's Celery name (its hostname part expands to this machine's name)."""
    return worker.name.split("@", 1)[0] + "@"


def lacking_of(job) -> dict:
    return reload(job).lacking


def storage_env(options, cache, **extra):
    return {"ARTIFACT_STORAGE_OPTIONS": json.dumps(options), "ARTIFACT_CACHE_DIR": str(cache), **extra}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_lacking_the_model_releases_its_chunks_to_one_that_has_it(
    start_worker, tiny_model_dir, s3_server, tmp_path, relevance_queue_empty, client, clinician
):
    release = {"RELEVANCE_RELEASE_LIMIT": 50, "RELEVANCE_RELEASE_DELAY_SECONDS": 0.5}
    lacking = start_worker("relevance", **storage_env(unreachable_options(), tmp_path / "a-cache", **release))
    job = remote_job(tiny_model_dir, s3_server)
    wait(lambda: any(k.startswith(node(lacking)) for k in lacking_of(job)), lacking, "worker A's first release")
    assert RelevanceChunk.objects.filter(job=job, status=Chunk.FAILED).count() == 0

    having = start_worker("relevance", **storage_env(s3_server.options, tmp_path / "b-cache", **release))
    wait(lambda: reload(job).status in (JobStatus.DONE, JobStatus.FAILED), having, "the job to end")
    job = reload(job)
    assert job.status == JobStatus.DONE, [(c.index, c.status, c.worker, c.error) for c in job.chunks.all()]
    assert_every_pair_has_exactly_one_map(job)
    for chunk in job.chunks.all():
        assert chunk.worker.startswith(node(having)) and chunk.error == ""
        assert all(worker.startswith(node(lacking)) for worker in chunk.releases)  # only A gave chunks back
    [(name, info)] = job.lacking.items()
    assert name.startswith(node(lacking)) and info["model"] == "tiny-llama+remote"
    assert "storage unreachable" in info["reason"] and info["releases"] >= 1
    manifest = storage.read_manifest(job.model_version.path, s3_server.options)
    assert (tmp_path / "b-cache" / manifest["digest"][:32] / storage.MANIFEST).is_file()  # B fetched it once
    assert not (tmp_path / "a-cache" / manifest["digest"][:32]).exists()
    assert "Traceback" not in lacking.log()  # released in plain words, not failed

    client.force_login(clinician)
    html = client.get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    shown = html[html.find('id="job-progress"') :][:3000]
    assert f"<strong>{name}</strong> lacks model <strong>tiny-llama+remote</strong>" in html, shown


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_chunks_no_live_worker_can_load_end_failed_after_the_release_limit(
    start_worker, tiny_model_dir, s3_server, tmp_path, relevance_queue_empty
):
    limit = 2
    release = {"RELEVANCE_RELEASE_LIMIT": limit, "RELEVANCE_RELEASE_DELAY_SECONDS": 0.2}
    lacking = start_worker("relevance", **storage_env(unreachable_options(), tmp_path / "a-cache", **release))
    started = time.monotonic()
    job = remote_job(tiny_model_dir, s3_server, notes=2, chunk_size=2)
    wait(lambda: reload(job).status in (JobStatus.DONE, JobStatus.FAILED), lacking, "the job to end", timeout=120)
    job = reload(job)
    assert job.status == JobStatus.FAILED and job.chunks_failed == job.chunk_count
    for chunk in job.chunks.all():
        assert chunk.status == Chunk.FAILED
        assert chunk.error.startswith(f"No worker could load model tiny-llama+remote: released {limit} times by each")
        assert list(chunk.releases.values()) == [limit]
    assert time.monotonic() - started < 120
