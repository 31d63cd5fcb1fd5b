"""An uploaded file of maps imported by a real worker (kind "map import", workers.runner): a worker
killed while it checks the file is replaced (the sweeper queues the job again) and the import ends
whole from the stored file: every map once, one MapImport, nothing lost and nothing twice."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.projects import default_project
from tests.webapp.pipeline.factories import note_text
from tests.workers.conftest import wait_for
from webapp.corpus.models import Corpus, Note, Task, text_hash
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.pipeline import mapimport_jobs
from webapp.pipeline.models import MapImport, MapImportJob, ModelVersion, RelevanceMap

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

LINES = 2000  # one map a note: a check of a few seconds on this machine, so the kill lands inside it


def job_row(job):
    return MapImportJob.objects.values("status", "lines_done", "attempts", "phase").get(pk=job.pk)


def test_a_worker_killed_mid_import_is_replaced_and_the_import_ends_whole(
    start_worker, researcher, tiny_model_dir, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    corpus = Corpus.objects.create(project=default_project(), name="ward-maps", language="en")
    Note.objects.bulk_create(
        Note(corpus=corpus, external_id=f"n{i:05d}", text=note_text(i), content_hash=text_hash(note_text(i)))
        for i in range(LINES)
    )
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model_version = ModelVersion.objects.create(name="tiny", family="llama", path=str(tiny_model_dir))
    lines = (
        json.dumps({"note": f"n{i:05d}", "task": task.slug, "spans": [[0, 7, 0.5], [8, 10, -1.0 - i % 7]]})
        for i in range(LINES)
    )
    upload = SimpleUploadedFile("maps.jsonl", ("\n".join(lines) + "\n").encode())

    first = start_worker("default", DATA_DIR=tmp_path, WORK_HEARTBEAT_SECONDS=0.2)
    job = mapimport_jobs.launch(upload, corpus=corpus, model_version=model_version, actor=researcher)
    wait_for(lambda: job_row(job)["lines_done"] >= 200, timeout=120, interval=0.05, message="the check under way")
    first.kill()
    row = job_row(job)
    assert row["status"] == JobStatus.RUNNING and row["lines_done"] < LINES, "the kill came after the import ended"
    assert not MapImport.objects.exists() and not RelevanceMap.objects.exists()  # nothing written yet

    second = start_worker("default", DATA_DIR=tmp_path)  # its sweeper finds the lost job and queues it again
    wait_for(lambda: job_row(job)["status"] in ENDED, timeout=240, message=f"the import after the kill\n{second.log()}")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, (job.error, job.problems)
    assert job.attempts == 2 and job.lines_done == LINES and not job.imported_before
    assert MapImport.objects.count() == 1 and job.map_import.maps == LINES
    maps = RelevanceMap.objects.filter(model_version=model_version)
    assert maps.count() == LINES and maps.values("note_id").distinct().count() == LINES  # every map once
    wait_for(lambda: not any((tmp_path / "uploads").iterdir()), timeout=30, message="the stored file removed")
    logs = first.log() + second.log()
    assert "map import" in logs and note_text(7)[:40] not in logs and "n00007" not in logs  # ids and counts only
