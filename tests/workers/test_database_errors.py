"""Real workers against a database that goes away or a worker that hangs, on PostgreSQL + Redis:
a dataset build survives the server ending its session (the one retry policy of every kind of
work); a task that ended on an error it could not record queues its unit again as soon as the
database answers, not a stall period later; an import worker stopped (SIGSTOP) inside its write
transaction no longer blocks the worker that takes the import over."""

import signal

import pytest
from django.db import connection
from django.db.models import Count

from tests.webapp.datasets.fabricate import add_notes_with_maps
from tests.workers.conftest import wait_for
from tests.workers.test_datasets import build_fields, inputs, status_of  # noqa: F401 - inputs is a fixture
from tests.workers.test_imports import LARGE, ended, launch, notes_file
from webapp.corpus.models import ImportJob, Note
from webapp.datasets.launch import launch_build
from webapp.datasets.models import DatasetVersion, MaskedExample
from webapp.lifecycle.status import JobStatus

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOTES = 30_000  # 90,000 maps: a build of several seconds, long enough to be interrupted in its middle


def end_other_sessions() -> int:
    """pg_terminate_backend on every other session of the test database: the workers' ones."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def allow_connections(allowed: bool) -> None:
    """Let the test database accept new sessions or refuse them (run from the server's maintenance
    database: PostgreSQL refuses it from the database itself). Open sessions stay open."""
    import psycopg

    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"], dbname="postgres", autocommit=True
    ) as admin:
        admin.execute(f'ALTER DATABASE "{db["NAME"]}" WITH ALLOW_CONNECTIONS {"true" if allowed else "false"}')


def full_log(worker) -> str:
    return worker.log_path.read_text(errors="replace")  # worker.log() keeps only its tail


def build_under_way(inputs):  # noqa: F811 - the fixture's value
    add_notes_with_maps(inputs["corpus"], inputs["tasks"], inputs["model_version"], NOTES)
    dataset = launch_build(name="interrupted", **build_fields(inputs))

    def under_way():
        row = DatasetVersion.objects.values("status", "maps_done").get(pk=dataset.pk)
        assert row["status"] not in ("done", "failed"), f"the build ended too soon: {row}"
        return row["status"] == "running" and row["maps_done"] >= 2_000

    wait_for(under_way, timeout=120, interval=0.1, message="the build to be under way")
    return dataset


def assert_built_whole(dataset):
    expected = 2 * (NOTES + 1)  # "pacemaker" and "bp" from every note (and the fixture's one)
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE, dataset.error
    examples = MaskedExample.objects.filter(dataset=dataset)
    assert examples.count() == dataset.stats["examples"] == expected
    assert not examples.values("note_id", "label").annotate(n=Count("id")).filter(n__gt=1).exists()


def test_a_build_survives_the_database_ending_its_session(start_worker, inputs):  # noqa: F811
    worker = start_worker("default")
    dataset = build_under_way(inputs)
    assert end_other_sessions() >= 1  # a real OperationalError in the worker, mid-build
    wait_for(lambda: status_of(DatasetVersion, dataset.pk) in ("done", "failed"), timeout=240, message="the build")
    assert_built_whole(dataset)
    assert dataset.attempts >= 2  # released, retried, claimed again
    assert " retry: Retry in " in full_log(worker)


def test_a_task_ended_by_an_error_it_could_not_record_queues_its_unit_again_once_the_database_answers(
    start_worker_without_redelivery,
    inputs,  # noqa: F811
):
    # A stall period of ten minutes: only the worker's own record can move the build on in this test.
    worker = start_worker_without_redelivery("default", WORK_STALL_SECONDS=600)
    dataset = build_under_way(inputs)
    try:
        allow_connections(False)  # the database refuses new sessions: the task cannot record anything
        assert end_other_sessions() >= 1
        wait_for(
            lambda: "the database is away, waiting to record it" in full_log(worker),
            timeout=120,
            message="the worker to wait for the database",
        )
        assert status_of(DatasetVersion, dataset.pk) == JobStatus.RUNNING  # nothing could be written meanwhile
    finally:
        allow_connections(True)
    wait_for(lambda: "queued again after its task ended on" in full_log(worker), timeout=60, message="the record")
    wait_for(lambda: status_of(DatasetVersion, dataset.pk) in ("done", "failed"), timeout=240, message="the rebuild")
    assert_built_whole(dataset)
    assert dataset.attempts == 2 and not dataset.is_stalled


def test_an_import_worker_stopped_mid_write_does_not_block_the_worker_that_takes_it_over(
    start_worker_without_redelivery, researcher, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    first = start_worker_without_redelivery("default", DATA_DIR=tmp_path, WORK_HEARTBEAT_SECONDS=0.2)
    job = launch(notes_file(LARGE), researcher)
    wait_for(
        lambda: ImportJob.objects.get(pk=job.pk).phase == ImportJob.Phase.WRITING,
        timeout=120,
        interval=0.05,
        message="the write phase",
    )
    first.process.send_signal(signal.SIGSTOP)  # hung, not dead: its transaction and locks stay open
    try:
        job.refresh_from_db()
        assert job.status == JobStatus.RUNNING and job.records_done < LARGE, "the stop came after the import ended"
        stopped = job.worker
        second = start_worker_without_redelivery("default", DATA_DIR=tmp_path)
        wait_for(lambda: ended(job.pk), timeout=180, message="the import after the takeover")
    finally:
        first.kill()  # SIGKILL ends a stopped process too
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, (job.error, job.problems)
    assert job.attempts == 2 and job.created_count == LARGE and job.worker != stopped
    notes = Note.objects.filter(corpus__name="ward-import")
    assert notes.count() == LARGE
    assert not notes.values("external_id").annotate(n=Count("id")).filter(n__gt=1).exists()
    assert f"database sessions of the lost worker {stopped}" in full_log(second)
