"""Import uploads kept in ARTIFACT_STORAGE_URL (webapp.corpus.uploads, webapp.shared_files):
the web app and the import worker run with different DATA_DIRs, as on two machines.

Two machines in one process: the "web" side stores the upload with DATA_DIR = web/, then the
import task (workers.imports.run_import, run in-process) runs with DATA_DIR = worker/. Object
storage is a real S3-compatible server (moto's, tests/webapp/pipeline/s3server.py) reached over
HTTP by s3fs; a shared filesystem is a third temporary folder given as a plain path.
"""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.projects import default_project
from tests.webapp.interchange.conftest import TEXTS
from tests.webapp.interchange.test_upload_page import _brat_zip
from tests.webapp.pipeline import s3server
from tests.webapp.pipeline.s3server import BUCKET, SECRET, unreachable_options
from webapp import shared_files
from webapp.corpus import import_jobs
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

s3_server, s3_storage = s3server.s3_server, s3server.s3_storage  # the fixtures

NOTES = [{"id": "a", "text": "PA 90/60"}, {"id": "b", "text": "FC 120 bpm"}]


@pytest.fixture(autouse=True)
def queue_sent(monkeypatch):
    """The messages sent to the queue, as (task name, id); the tests run the task themselves."""
    sent = []
    monkeypatch.setattr(queue, "send", lambda task, *ids: sent.extend((task, pk) for pk in ids) or len(ids))
    return sent


@pytest.fixture
def machines(settings, tmp_path):
    """The two DATA_DIRs; the web app's is the current one."""
    web, worker = tmp_path / "web", tmp_path / "worker"
    settings.DATA_DIR = web
    return web, worker


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def launch_on_web(researcher, django_capture_on_commit_callbacks):
    """Store an upload of NOTES as the upload page does (the message sent once committed)."""

    def launch() -> ImportJob:
        with django_capture_on_commit_callbacks(execute=True):
            return import_jobs.launch(
                SimpleUploadedFile("notes.jsonl", jsonl(NOTES)),
                project=default_project(),
                kind="notes",
                corpus="ed",
                language="it",
                update=False,
                actor=researcher,
            )

    return launch


def files_under(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_an_upload_stored_by_the_web_app_is_imported_by_a_worker_without_its_data_dir(
    launch_on_web, machines, s3_storage, settings, queue_sent
):
    web, worker = machines
    job = launch_on_web()
    folder = job.upload.split("/")[0]
    assert queue_sent == [(import_jobs.TASK, job.pk)]
    assert files_under(web) == []  # only in the storage: a copy here would never be removed
    assert s3_storage() == {f"uploads/{folder}/notes.jsonl", f"uploads/{folder}/artifact-manifest.json"}

    settings.DATA_DIR = worker
    assert run_import(job.pk) == JobStatus.DONE
    job.refresh_from_db()
    assert (job.status, job.created_count, job.upload) == (JobStatus.DONE, 2, "")
    assert sorted(Note.objects.values_list("external_id", flat=True)) == ["a", "b"]
    assert s3_storage() == set() and files_under(worker) == [] and files_under(web) == []


def test_a_shared_folder_given_as_a_plain_path_carries_the_upload_between_two_data_dirs(
    launch_on_web, machines, settings, tmp_path
):
    web, worker = machines
    share = tmp_path / "share"
    settings.ARTIFACT_STORAGE_URL = str(share)
    job = launch_on_web()
    folder = share / "uploads" / job.upload.split("/")[0]
    assert files_under(folder) == ["artifact-manifest.json", "notes.jsonl"] and files_under(web) == []

    settings.DATA_DIR = worker
    assert run_import(job.pk) == JobStatus.DONE
    assert Note.objects.count() == 2
    assert not folder.exists() and files_under(worker) == []


def test_a_storage_out_of_reach_at_upload_fails_the_job_in_plain_words_and_queues_nothing(
    launch_on_web, machines, settings, queue_sent
):
    web, _ = machines
    settings.ARTIFACT_STORAGE_URL = f"s3://{BUCKET}/nowhere"
    settings.ARTIFACT_STORAGE_OPTIONS = unreachable_options()
    job = launch_on_web()
    assert job.status == JobStatus.FAILED and job.upload == "" and queue_sent == []
    assert f"s3://{BUCKET}/nowhere/uploads/" in job.error and "Upload the file again" in job.error
    assert SECRET not in job.error  # no credentials
    assert files_under(web) == [] and not Note.objects.exists()


def test_a_storage_out_of_reach_for_the_worker_fails_the_import_and_keeps_the_upload(
    launch_on_web, machines, s3_storage, s3_server, settings, caplog
):
    web, worker = machines
    job = launch_on_web()
    stored = s3_storage()
    settings.DATA_DIR = worker
    settings.ARTIFACT_STORAGE_OPTIONS = unreachable_options()
    assert run_import(job.pk) == JobStatus.FAILED
    job.refresh_from_db()
    assert "shared storage" in job.error and f"s3://{BUCKET}/" in job.error
    assert not Note.objects.exists() and files_under(worker) == []
    assert job.upload and s3_storage() == stored  # not lost: named by its job still, for a later removal
    assert "PA 90/60" not in caplog.text

    settings.DATA_DIR = web  # the storage is back: the next upload removes the leftover
    settings.ARTIFACT_STORAGE_OPTIONS = s3_server.options
    import_jobs.discard_leftovers()
    job.refresh_from_db()
    assert job.upload == "" and s3_storage() == set()


def test_import_now_on_the_web_app_imports_a_preview_the_worker_checked(
    researcher, client_for, machines, s3_storage, settings, django_capture_on_commit_callbacks
):
    web, worker = machines
    ward = Corpus.objects.create(project=default_project(), name="ward", language="en")
    Note.objects.create(corpus=ward, external_id="n1", text=TEXTS["n1"])
    Task.objects.create(slug="fever", description="fever", options=["present", "absent"])
    client = client_for(researcher)
    form = {
        "kind": "annotations",
        "corpus": "ward",
        "file": SimpleUploadedFile("gold.zip", _brat_zip()),
        "format": "brat",
        "mapping": "SYMPTOM=fever:present\r\nWHO=-",
        "annotator": "ward-team",  # the brat files name none
        "preview": "on",
    }
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("corpus:upload"), form).status_code == 302
    preview = ImportJob.objects.get()
    settings.DATA_DIR = worker
    assert run_import(preview.pk) == JobStatus.DONE
    preview.refresh_from_db()
    assert preview.upload and Annotation.objects.count() == 0
    assert files_under(worker) == []  # the storage keeps the previewed file, not the worker
    assert len(s3_storage()) == 3  # the file, its options and the manifest

    settings.DATA_DIR = web
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("interchange:import_previewed", args=[preview.pk]))
    job = ImportJob.objects.latest("pk")
    preview.refresh_from_db()
    assert job.pk != preview.pk and preview.upload == ""
    assert files_under(web) == [] and {k.split("/")[1] for k in s3_storage()} == {job.upload.split("/")[0]}

    settings.DATA_DIR = worker
    assert run_import(job.pk) == JobStatus.DONE
    assert Annotation.objects.count() == 1 and s3_storage() == set() and files_under(worker) == []


def test_without_a_storage_the_upload_stays_under_the_shared_data_dir(launch_on_web, machines, monkeypatch):
    web, _ = machines

    def never(*args, **kwargs):
        raise AssertionError("no storage is used without ARTIFACT_STORAGE_URL")

    for name in ("put", "get", "read", "remove", "files"):
        monkeypatch.setattr(shared_files, name, never)
    job = launch_on_web()
    assert files_under(web) == [f"uploads/{job.upload}"]
    assert run_import(job.pk) == JobStatus.DONE
    assert Note.objects.count() == 2 and files_under(web) == []
