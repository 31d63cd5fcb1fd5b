"""The heartbeat thread (webapp.lifecycle.heartbeat) on its own database connection: committed
rows, so these tests use transactions like a worker does."""

import time

import pytest

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import jobs, planning
from webapp.pipeline.models import RelevanceChunk, RelevanceJob

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def chunk():
    job = jobs.launch(spec(make_corpus(2), make_model_version(), make_tasks(1), chunk_size=1), enqueue=False)
    planning.plan_now(job)
    return units.claim(RelevanceChunk, job.chunks.first().pk, "w1")


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_beats_and_progress_are_written_by_the_thread(chunk):
    before = chunk.heartbeat
    with Heartbeat(chunk, every=0.05) as heart:
        heart.report(seconds=1.5)
        assert wait_until(lambda: RelevanceChunk.objects.get(pk=chunk.pk).seconds == 1.5)
        assert RelevanceChunk.objects.get(pk=chunk.pk).heartbeat > before
        assert not heart.cancelling and not heart.lost


def test_progress_is_visible_while_the_work_holds_a_transaction_open(chunk):
    from django.db import transaction

    with Heartbeat(chunk, every=0.05) as heart:
        with transaction.atomic():
            RelevanceJob.objects.filter(pk=chunk.job_id).update(error="inside")  # a write the work holds
            heart.report(seconds=2.5)
            assert wait_until(lambda: _seconds_seen_elsewhere(chunk.pk) == 2.5)


def _seconds_seen_elsewhere(pk):
    """Read on a connection of another thread, as the web page would."""
    import threading

    from django.db import connection

    seen = []

    def read():
        seen.append(RelevanceChunk.objects.get(pk=pk).seconds)
        connection.close()

    thread = threading.Thread(target=read)
    thread.start()
    thread.join()
    return seen[0]


def test_the_work_learns_of_a_cancel_and_of_a_takeover(chunk):
    with Heartbeat(chunk, every=0.05) as heart:
        units.request_cancel(RelevanceChunk, chunk.pk)
        assert wait_until(lambda: heart.cancelling)
    RelevanceChunk.objects.filter(pk=chunk.pk).update(status=JobStatus.RUNNING, attempts=chunk.attempts + 1)
    with Heartbeat(chunk, every=0.05) as heart:
        assert wait_until(lambda: heart.lost)


def test_beats_resume_after_the_database_dropped_the_threads_connection(chunk):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    with Heartbeat(chunk, every=0.05):
        assert wait_until(lambda: RelevanceChunk.objects.get(pk=chunk.pk).heartbeat > chunk.heartbeat)
        with connection.cursor() as cursor:  # e.g. a database restart: every other session is dropped
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        dropped_at = RelevanceChunk.objects.get(pk=chunk.pk).heartbeat
        assert wait_until(lambda: RelevanceChunk.objects.get(pk=chunk.pk).heartbeat > dropped_at, timeout=10)
