"""A Celery retry that really goes through Redis: a real worker process (tests/workers/conftest.py)
whose first attempt at a relevance chunk meets a transient database error, sends the retry message
to the broker, receives it again and completes the chunk.

The transient error is made from outside the worker, the way it happens in production: this test
holds the chunk's row locked (`SELECT ... FOR UPDATE` in an open transaction, as a long admin
transaction or a migration would), and the worker runs with `lock_timeout` set for its
connections (libpq's PGOPTIONS, as a deployment would in DATABASE_URL). The worker's claim
(`UPDATE ... WHERE id = chunk`) then fails after 1 s with "canceling statement due to lock
timeout", a psycopg LockNotAvailable that Django raises as OperationalError: `run_chunk` retries
it (`self.retry`, countdown 5 s). The test finds that retry message in Redis (with `retries: 1`
in its headers), releases the lock, and the worker runs the message again: the chunk is done and
its map stored.
"""

import base64
import json
import re

import pytest
import redis
from django.conf import settings
from django.db import connection

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from tests.workers.conftest import wait_for
from webapp.pipeline import jobs, planning
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob, RelevanceMap

TASK = "workers.relevance.run_chunk"
LOCK_TIMEOUT_MS = 1000
Chunk = RelevanceChunk.Status
WAITING = Chunk.QUEUED  # a chunk sent and not yet claimed
# The worker's recovery sweeper must not send the chunk again while the
# retry waits for its countdown: the retry alone brings the second attempt.
NO_SWEEP = {"WORK_STALL_SECONDS": 600, "WORK_REQUEUE_GRACE_SECONDS": 600}


@pytest.fixture
def broker():
    """The test run's Redis database (the workers' broker), with the relevance queue empty."""
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs Redis (REDIS_URL)")
    from workers.celery_app import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("relevance")
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    yield client
    client.close()


@pytest.fixture
def row_lock():
    """lock(table, pk): hold the row locked in another PostgreSQL session until release()."""
    import psycopg

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    db = connection.settings_dict
    session = psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname=db["NAME"],
        autocommit=False,
    )

    class Lock:
        def lock(self, table, pk):
            locked = session.execute(f'SELECT id FROM "{table}" WHERE id = %s FOR UPDATE', [pk]).fetchall()
            assert locked == [(pk,)]

        def release(self):
            session.rollback()

    yield Lock()
    session.rollback()
    session.close()


def launch_one_chunk(model_dir):
    """A job of one prompt in one chunk, planned here and its chunk's message sent to Redis."""
    job_spec = spec(make_corpus(1, sentences=2), make_model_version(str(model_dir)), make_tasks(1), chunk_size=1)
    job = jobs.launch(job_spec, enqueue=False)
    planning.plan_now(job, enqueue=True)
    return RelevanceJob.objects.get(pk=job.pk)


def messages_in_redis(client, task_id):
    """The messages of `task_id` sitting in the broker: waiting in the relevance queue, or
    delivered to a worker and not yet acknowledged (kombu's `unacked` hash; acks are late)."""
    raw = list(client.lrange("relevance", 0, -1))
    raw += [json.dumps(json.loads(v)[0]).encode() for v in client.hgetall("unacked").values()]
    found = []
    for item in raw:
        message = json.loads(item)
        if message["headers"].get("id") == task_id:
            found.append(message)
    return found


def retried(worker) -> bool:
    if log_of(worker, rf"{re.escape(TASK)}\[[0-9a-f-]+\] raised unexpected"):
        raise AssertionError("the first attempt failed for good instead of retrying")
    return bool(log_of(worker, rf"{re.escape(TASK)}\[[0-9a-f-]+\] retry: "))


def log_of(worker, pattern):
    return re.findall(pattern, worker.log_path.read_text(errors="replace"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_transient_database_error_is_retried_through_redis_and_the_next_attempt_succeeds(
    start_worker, tiny_model_dir, broker, row_lock
):
    job = launch_one_chunk(tiny_model_dir)
    chunk = job.chunks.get()
    assert (job.total, chunk.status, chunk.attempts) == (1, WAITING, 0)
    row_lock.lock(RelevanceChunk._meta.db_table, chunk.pk)  # before any worker can claim the chunk

    worker = start_worker(
        "relevance", PGOPTIONS=f"-c lock_timeout={LOCK_TIMEOUT_MS}", OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, **NO_SWEEP
    )
    try:
        wait_for(lambda: retried(worker), timeout=90, message="the first attempt to fail and retry")
        ((task_id, first_error),) = log_of(worker, rf"{re.escape(TASK)}\[([0-9a-f-]+)\] retry: Retry in 5s: (.*)")
        assert "OperationalError" in first_error and "lock timeout" in first_error, first_error
        # The retry is a new message in Redis, same task id, counting one retry, due 5 s later.
        retry = [m for m in messages_in_redis(broker, task_id) if m["headers"].get("retries") == 1]
        assert len(retry) == 1, messages_in_redis(broker, task_id)
        assert retry[0]["headers"]["task"] == TASK and retry[0]["headers"]["eta"]
        args, _kwargs, _embed = json.loads(base64.b64decode(retry[0]["body"]))
        assert args == [chunk.pk]
        # The failed claim changed nothing: the chunk waits, not taken, no attempt counted.
        assert RelevanceChunk.objects.filter(pk=chunk.pk).values_list("status", "attempts").get() == (WAITING, 0)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{worker.log()}") from None
    finally:
        row_lock.release()

    try:
        wait_for(
            lambda: RelevanceJob.objects.get(pk=job.pk).status in (JobStatus.DONE, JobStatus.FAILED),
            timeout=120,
            message="the job to end",
        )
        wait_for(
            lambda: log_of(worker, rf"{re.escape(TASK)}\[{task_id}\] succeeded"),
            timeout=30,
            message="the worker to log the success",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{worker.log()}") from None
    job = RelevanceJob.objects.get(pk=job.pk)
    chunk.refresh_from_db()
    assert (job.status, job.done, chunk.status, chunk.attempts) == (JobStatus.DONE, 1, Chunk.DONE, 1), worker.log()
    assert RelevanceMap.objects.filter(job=job).count() == 1
    # The worker received the message twice (the first delivery, then the retry from Redis), failed
    # once on the lock and succeeded once. (A test process stalled for over 4 s before releasing
    # the lock would see one more retry; then there are as many receptions as retries + 1.)
    received = log_of(worker, rf"{re.escape(TASK)}\[{task_id}\] received")
    retries = log_of(worker, rf"{re.escape(TASK)}\[{task_id}\] retry: Retry in \d+s: (.*)")
    succeeded = log_of(worker, rf"{re.escape(TASK)}\[{task_id}\] succeeded in [0-9.]+s: '(\w+)'")
    assert len(retries) >= 1 and all("lock timeout" in r for r in retries), worker.log()
    assert len(received) == len(retries) + 1 and succeeded == ["done"], worker.log()
    # The retried message was acknowledged: nothing of it is left in the broker.
    wait_for(lambda: not messages_in_redis(broker, task_id), timeout=10, message="the message to be acked")
