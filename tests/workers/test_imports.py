"""Imports through REAL worker processes (queue "default") on PostgreSQL + Redis: an upload is
imported in the background, and a worker SIGKILLed while it writes leaves nothing behind; another
worker imports the file again from the stored upload, with nothing lost and nothing twice."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import Count

from tests.projects import default_project
from tests.workers.conftest import wait_for
from webapp.corpus import import_jobs
from webapp.corpus.models import Corpus, ImportJob, Note
from webapp.lifecycle.status import ENDED, JobStatus

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LARGE = 50_000  # notes: a write phase of a second or more, so the kill lands inside it


def notes_file(n: int, name="notes.jsonl") -> SimpleUploadedFile:
    lines = (
        json.dumps({"id": f"n{i}", "text": f"Paziente {i}: FC {60 + i % 90} bpm, PA 120/80, afebbrile."})
        for i in range(n)
    )
    return SimpleUploadedFile(name, ("\n".join(lines) + "\n").encode())


def launch(file, researcher, corpus="ward-import"):
    return import_jobs.launch(
        file, project=default_project(), kind="notes", corpus=corpus, language="it", update=False, actor=researcher
    )


def ended(job_id):
    return ImportJob.objects.get(pk=job_id).status in ENDED


def upload_removed(job_id, data_dir):
    """The worker forgets the stored upload right after it marks the job done, in a statement
    of its own: wait for it rather than expect it the moment the job reads done."""
    wait_for(
        lambda: ImportJob.objects.get(pk=job_id).upload == "" and not any((data_dir / "uploads").iterdir()),
        timeout=30,
        message="the stored upload to be removed",
    )


def test_an_upload_is_imported_by_the_worker(start_worker, researcher, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    worker = start_worker("default", DATA_DIR=tmp_path)
    job = launch(notes_file(3), researcher)  # sent when the transaction commits
    wait_for(lambda: ended(job.pk), timeout=60, message="the import")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, (job.error, job.problems)
    assert (job.created_count, job.attempts) == (3, 1) and job.worker.startswith(worker.name.split("@")[0])
    assert Note.objects.filter(corpus__name="ward-import").count() == 3
    upload_removed(job.pk, tmp_path)
    assert "Paziente" not in worker.log()  # no note text in the log


def test_a_refused_file_ends_failed_with_its_problems(start_worker, researcher, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    start_worker("default", DATA_DIR=tmp_path)
    job = launch(SimpleUploadedFile("bad.jsonl", b'{"id": "a", "text": "ok"}\n{broken\n'), researcher)
    wait_for(lambda: ended(job.pk), timeout=60, message="the import")
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.problem_count == 1
    assert job.problem_lines[0].startswith("bad.jsonl line 2")
    assert not Corpus.objects.filter(name="ward-import").exists() and not Note.objects.exists()


def test_a_worker_killed_while_writing_is_replaced_and_the_import_ends_whole(
    start_worker, researcher, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    # Beats every 0.2 s, so the test sees the write phase begin well before it ends.
    first = start_worker("default", DATA_DIR=tmp_path, WORK_HEARTBEAT_SECONDS=0.2)
    job = launch(notes_file(LARGE), researcher)
    wait_for(
        lambda: ImportJob.objects.get(pk=job.pk).phase == ImportJob.Phase.WRITING,
        timeout=120,
        interval=0.05,
        message="the write phase",
    )
    first.kill()
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.records_done < LARGE, "the kill came after the import ended"
    assert not Corpus.objects.filter(name="ward-import").exists()  # the open transaction died with the worker

    start_worker("default", DATA_DIR=tmp_path)  # its sweeper finds the lost job and queues it again
    wait_for(lambda: ended(job.pk), timeout=180, message="the import after the kill")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, (job.error, job.problems)
    assert job.attempts == 2 and job.created_count == LARGE and job.unchanged_count == 0
    notes = Note.objects.filter(corpus__name="ward-import")
    assert notes.count() == LARGE
    assert not notes.values("external_id").annotate(n=Count("id")).filter(n__gt=1).exists()  # nothing twice
    upload_removed(job.pk, tmp_path)
