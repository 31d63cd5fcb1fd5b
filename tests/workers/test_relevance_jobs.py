"""Relevance jobs end to end: a real Celery worker (tests/workers/conftest.py) computing a tiny
random Llama model's relevance into PostgreSQL, through Redis.

The model is built from a LlamaConfig and a tokenizer trained in code (tests/ml/conftest.py)
and saved to a folder registered as a ModelVersion, so no download and no converted model.

Recovery after SIGKILL: every worker runs the lifecycle's recovery sweeper (webapp.lifecycle.
recovery); the workers of these tests beat every second, count as lost after 4 s and sweep every
second (tests/workers/conftest.py), so a chunk whose worker was killed is queued and sent again
within about 5 s, whatever the broker's visibility timeout. The killed worker's own message may
still be redelivered later by the broker, and a worker of another test sharing the broker may
deliver a chunk twice: the tests never assume one delivery per chunk, only one map per pair.
"""

import time
from datetime import timedelta

import numpy as np
import pytest
from django.db import OperationalError
from django.db.models import Count
from django.utils import timezone

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from tests.workers.conftest import wait_for
from webapp.corpus.models import Note
from webapp.pipeline import chunks, jobs, modelcache, planning
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob, RelevanceMap
from webapp.pipeline.progress import job_progress

Chunk = RelevanceChunk.Status
STALL = 4  # WORK_STALL_SECONDS of the workers (tests/workers/conftest.py)


@pytest.fixture
def relevance_queue_empty():
    """Messages left in the relevance queue by an earlier run would only be no-ops, but purge them."""
    from workers.celery_app import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("relevance")


def launch_job(tiny_model_dir, *, notes=6, n_tasks=2, chunk_size=4, sentences=3, send=True, **changes):
    """A job planned here (as the planning worker would) and, with `send`, its chunks sent."""
    corpus = make_corpus(notes, sentences=sentences)
    tasks = make_tasks(n_tasks)
    model_version = make_model_version(str(tiny_model_dir))
    return plan_here(spec(corpus, model_version, tasks, chunk_size=chunk_size, **changes), send=send)


def plan_here(job_spec, send=True):
    job = jobs.launch(job_spec, enqueue=False)
    planning.plan_now(job, enqueue=send)
    return job


def reload(job):
    return RelevanceJob.objects.get(pk=job.pk)


def status_is(job, *statuses):
    return lambda: reload(job).status in statuses


def wait(predicate, worker, message, timeout=180, interval=0.3):
    """wait_for, showing the worker's log when it times out."""
    try:
        wait_for(predicate, timeout=timeout, interval=interval, message=message)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{worker.log()}") from None


def explain(job, worker) -> str:
    rows = list(job.chunks.values_list("index", "status", "attempts", "worker", "error"))
    return f"job {job.status}: {job.error}\nchunks: {rows}\n--- worker log ---\n{worker.log()}"


def assert_every_pair_has_exactly_one_map(job):
    planned = {tuple(pair) for chunk in job.chunks.all() for pair in chunk.pairs}
    key = ["note", "task", "model_version", "config"]
    maps = RelevanceMap.objects.for_config(job.method, job.template, job.config_key).filter(
        model_version=job.model_version
    )
    assert not maps.values(*key).annotate(n=Count("pk")).filter(n__gt=1).exists()
    assert set(maps.values_list("note_id", "task_id")) == planned
    assert maps.count() == len(planned) == job.total


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_job_runs_from_launch_to_stored_maps_on_a_real_worker(start_worker, tiny_model_dir, relevance_queue_empty):
    job = launch_job(tiny_model_dir)
    assert (job.total, job.chunks.count()) == (12, 3)
    worker = start_worker("relevance")
    wait(status_is(job, JobStatus.DONE, JobStatus.FAILED), worker, "the job to end")
    job = reload(job)
    assert job.status == JobStatus.DONE, explain(job, worker)
    assert job.done == job.total == 12 and job.finished is not None and job.error == ""
    assert_every_pair_has_exactly_one_map(job)
    texts = dict(Note.objects.values_list("pk", "text"))
    for relevance_map in RelevanceMap.objects.all():
        offsets, scores = relevance_map.arrays()
        text = texts[relevance_map.note_id]
        assert len(scores) == relevance_map.n_tokens > 0
        assert "".join(text[a:b] for a, b in offsets) == text  # the tokens tile the note exactly
        assert np.all((scores >= 0) & (scores <= 1)) and scores.max() == pytest.approx(1.0, abs=1e-3)
        assert relevance_map.target_token and relevance_map.job_id == job.pk
    progress = job_progress(job)
    assert progress.ended and progress.prompts_per_second > 0 and progress.errors == []
    assert set(job.chunks.values_list("status", flat=True)) == {Chunk.DONE}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_job_is_shown_stalled_then_recovered_without_duplicates(
    start_worker, tiny_model_dir, relevance_queue_empty, settings
):
    settings.WORK_STALL_SECONDS = STALL
    job = launch_job(tiny_model_dir, notes=8, n_tasks=3, chunk_size=6, sentences=5)
    first = start_worker("relevance")

    def just_started_a_chunk():  # a chunk takes ~1 s: kill early in one, after another finished
        recently = timezone.now() - timedelta(seconds=0.3)
        return (
            job.chunks.filter(status=Chunk.DONE).exists()
            and job.chunks.filter(status=Chunk.RUNNING, started__gt=recently).exists()
        )

    wait(just_started_a_chunk, first, "a chunk to start after one finished", interval=0.02)
    first.kill()
    orphans = list(job.chunks.filter(status=Chunk.RUNNING))
    assert orphans, "the killed worker's chunk finished before the kill; nothing was left to redeliver"
    killed_at = time.monotonic()
    assert reload(job).status == JobStatus.RUNNING and reload(job).done < job.total
    assert job_progress(reload(job)).status_label == "Running"
    # No worker is left: after WORK_STALL_SECONDS the page says so, and shows no live ETA.
    wait(lambda: job_progress(reload(job)).stalled_since is not None, first, "the stalled status", timeout=30)
    progress = job_progress(reload(job))
    assert progress.status_label.startswith("stalled: worker lost at ") and progress.eta is None
    assert progress.resumable
    second = start_worker("relevance")  # its sweeper queues the lost chunk again at once
    wait(
        lambda: all(RelevanceChunk.objects.get(pk=o.pk).attempts >= 2 for o in orphans),
        second,
        "the lost chunk to be taken again",
        timeout=60,
    )
    recovery_seconds = time.monotonic() - killed_at
    wait(status_is(job, JobStatus.DONE, JobStatus.FAILED), second, "the job to end")
    job = reload(job)
    assert job.status == JobStatus.DONE, explain(job, second)
    assert job.done == job.total == 24
    assert_every_pair_has_exactly_one_map(job)
    for orphan in orphans:  # queued again by the sweeper and claimed again: no Resume was needed
        orphan.refresh_from_db()
        assert orphan.status == Chunk.DONE and orphan.attempts >= 2
        assert orphan.worker != "" and orphan.worker.split("@")[0] in second.name
    assert recovery_seconds < 60  # stall (4 s) + waiting for the stalled status + a worker start


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_job_launched_like_the_web_page_is_planned_by_a_default_worker(
    start_worker, tiny_model_dir, relevance_queue_empty
):
    corpus, tasks = make_corpus(5, sentences=2), make_tasks(2)
    job = jobs.launch(spec(corpus, make_model_version(str(tiny_model_dir)), tasks, chunk_size=4))
    assert (reload(job).status, job.chunks.count()) == (JobStatus.PLANNING, 0)  # the launch planned nothing
    worker = start_worker("default,relevance")
    wait(status_is(job, JobStatus.DONE, JobStatus.FAILED), worker, "the job to end")
    job = reload(job)
    assert job.status == JobStatus.DONE, explain(job, worker)
    assert (job.total, job.chunk_count, job.notes_planned, job.notes_total) == (10, 3, 5, 5)
    assert_every_pair_has_exactly_one_map(job)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_chunks_whose_messages_were_lost_are_sent_again_without_resume(
    start_worker, tiny_model_dir, relevance_queue_empty
):
    from webapp.taskqueue import app

    job = launch_job(tiny_model_dir, notes=4, n_tasks=2, chunk_size=4)
    with app.connection_for_write() as connection:  # the broker restarted without persistence
        assert connection.default_channel.queue_purge("relevance") == 2
    worker = start_worker("relevance")  # its sweeper: chunks waiting > 3 s while the queue is empty
    wait(status_is(job, JobStatus.DONE, JobStatus.FAILED), worker, "the job to end", timeout=120)
    job = reload(job)
    assert job.status == JobStatus.DONE, explain(job, worker)
    assert_every_pair_has_exactly_one_map(job)
    assert "sent again" in worker.log()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_stops_between_chunks_and_resume_completes_the_job(start_worker, tiny_model_dir, relevance_queue_empty):
    job = launch_job(tiny_model_dir, notes=8, n_tasks=3, chunk_size=3, sentences=4)
    assert job.chunks.count() == 8
    worker = start_worker("relevance")
    wait(lambda: job.chunks.filter(status=Chunk.DONE).exists(), worker, "a first chunk", interval=0.05)
    jobs.cancel(job)
    wait(status_is(job, JobStatus.CANCELLED), worker, "the job to be cancelled", timeout=90)
    job = reload(job)
    done_before = dict(job.chunks.filter(status=Chunk.DONE).values_list("pk", "seconds"))
    assert job.chunks.filter(status=Chunk.CANCELLED).exists(), worker.log()
    assert not job.chunks.filter(status__in=(Chunk.QUEUED, Chunk.RUNNING)).exists()
    assert RelevanceMap.objects.filter(job=job).count() == job.done == 3 * len(done_before) < job.total
    maps_before = dict(RelevanceMap.objects.values_list("pk", "data"))

    assert jobs.resume(job) == 8 - len(done_before)
    wait(status_is(job, JobStatus.DONE, JobStatus.FAILED), worker, "the resumed job to end")
    job = reload(job)
    assert job.status == JobStatus.DONE and job.done == job.total == 24, explain(job, worker)
    assert_every_pair_has_exactly_one_map(job)
    # Chunks done before the cancel were not run again, and their maps were not rewritten.
    assert dict(job.chunks.filter(pk__in=done_before).values_list("pk", "seconds")) == done_before
    assert {
        pk: bytes(data) for pk, data in RelevanceMap.objects.filter(pk__in=maps_before).values_list("pk", "data")
    } == {pk: bytes(data) for pk, data in maps_before.items()}


@pytest.fixture
def in_process_job(db, tiny_model_dir):
    """A planned, not enqueued job, computed in this process with gradient x input:
    AttnLRP would patch the pytest process for good (lxt), which other tests must not see."""
    job = launch_job(tiny_model_dir, method="grad_input", send=False)
    yield job
    modelcache.clear()


@pytest.mark.slow
def test_a_chunk_delivered_twice_writes_nothing_twice(in_process_job):
    from workers.relevance import run_chunk

    chunk = in_process_job.chunks.get(index=0)
    assert run_chunk(chunk.pk) == "done"
    first = {(m.note_id, m.task_id): (m.pk, bytes(m.data)) for m in RelevanceMap.objects.all()}
    assert len(first) == chunk.size == 4

    assert run_chunk(chunk.pk) == "nothing to do"  # the duplicate message of a DONE chunk
    assert {(m.note_id, m.task_id): (m.pk, bytes(m.data)) for m in RelevanceMap.objects.all()} == first

    # A redelivery after the worker died half-way: the chunk is still RUNNING with a stale
    # heartbeat, one map is missing.
    RelevanceChunk.objects.filter(pk=chunk.pk).update(
        status=Chunk.RUNNING, heartbeat=timezone.now() - timedelta(seconds=600)
    )
    missing = RelevanceMap.objects.order_by("pk").last()
    missing.delete()
    assert run_chunk(chunk.pk) == "done"
    again = {(m.note_id, m.task_id): (m.pk, bytes(m.data)) for m in RelevanceMap.objects.all()}
    assert len(again) == 4 and set(again) == set(first)
    kept = set(first) - {(missing.note_id, missing.task_id)}
    assert {k: again[k] for k in kept} == {k: first[k] for k in kept}  # untouched, not recomputed
    chunk.refresh_from_db()
    assert (chunk.status, chunk.attempts) == (Chunk.DONE, 2)

    # Storing the same results again (two workers racing on one chunk) upserts.
    results = [(pair, _Result(*RelevanceMap.objects.get(note_id=pair[0], task_id=pair[1]).arrays())) for pair in first]
    chunks.store(chunk, results)
    assert RelevanceMap.objects.count() == 4


@pytest.mark.slow
def test_a_job_computes_with_its_configuration_and_keeps_its_maps_apart(db, tiny_model_dir):
    """Two jobs on the same pairs, "next" then "span": the second computes its own maps (the
    first's are not "already stored" for it), each map records its job's configuration, and
    the stored scores are what ml.relevance computes with that configuration."""
    from ml.relevance import RelevanceConfig, compute_relevance
    from workers.relevance import run_chunk

    first = launch_job(tiny_model_dir, notes=1, n_tasks=2, chunk_size=2, method="grad_input", send=False)
    second = plan_here(
        spec(
            first.corpus,
            first.model_version,
            list(first.tasks.all()),
            chunk_size=2,
            method="grad_input",
            explain="span",
            normalise="clip",
        ),
        send=False,
    )
    try:
        for job in (first, second):
            assert run_chunk(job.chunks.get().pk) == "done"
        assert RelevanceMap.objects.count() == 4
        span = RelevanceConfig(method="grad_input", explain="span", normalise="clip")
        assert set(RelevanceMap.objects.filter(job=second).values_list("config__config_key", flat=True)) == {span.key}
        assert set(RelevanceMap.objects.filter(job=first).values_list("config__config_key", flat=True)) == {
            RelevanceConfig(method="grad_input").key
        }
        assert job_progress(reload(second)).errors == []
        # computed as the worker computes them: the chunk's prompts (in its order, by task slug) in one
        # call, where a note's prompts share their prefix (bf16 rounding differs from one alone)
        maps = list(RelevanceMap.objects.filter(job=second).select_related("note", "task").order_by("task__slug"))
        stored = maps[0]
        expected = compute_relevance(
            modelcache.loaded_model(second.model_version),
            [m.note.text for m in maps],
            [m.task.description for m in maps],
            span,
        )[0]
        offsets, scores = stored.arrays()
        np.testing.assert_array_equal(offsets, expected.offsets)
        np.testing.assert_allclose(scores, expected.scores, atol=1e-3)  # stored as float16
        assert stored.target_token == expected.target_token == stored.task.description
    finally:
        modelcache.clear()


class _Result:
    def __init__(self, offsets, scores):
        self.offsets, self.scores, self.target_token = offsets, scores, "x"


@pytest.mark.slow
def test_a_chunk_that_fails_is_marked_failed_in_plain_words_and_the_job_shows_it(db, tiny_model_dir, settings):
    from workers.relevance import run_chunk

    # A missing model is released for another worker first (test_released_chunks); with a limit
    # of one release, this only worker's first release ends the chunk.
    settings.RELEVANCE_RELEASE_LIMIT = 1
    job = launch_job(tiny_model_dir, notes=2, n_tasks=2, chunk_size=2, send=False)
    job.model_version.path = str(tiny_model_dir / "missing")
    job.model_version.save()
    for chunk in job.chunks.all():
        assert run_chunk(chunk.pk) == "failed"
    job = reload(job)
    assert job.status == JobStatus.FAILED and "2 of 2 chunks failed" in job.error
    errors = job_progress(job).errors
    assert len(errors) == 2 and "No worker could load model tiny-llama" in errors[0]
    assert jobs.can_resume(job)


@pytest.mark.slow
def test_a_temporary_database_problem_releases_the_chunk_for_a_retry(db, tiny_model_dir, monkeypatch):
    from workers.relevance import run_chunk

    job = launch_job(tiny_model_dir, notes=1, n_tasks=2, chunk_size=2, send=False)
    chunk = job.chunks.get()

    def lost_connection(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(chunks, "run", lost_connection)
    with pytest.raises(OperationalError):  # called directly, retry() re-raises; a worker sends a retry message
        run_chunk(chunk.pk)
    chunk.refresh_from_db()
    assert chunk.status == Chunk.QUEUED and "temporary problem (OperationalError)" in chunk.error
