"""Dataset exports kept in ARTIFACT_STORAGE_URL (webapp.datasets.export, webapp.shared_files):
the export worker and the web app run with different DATA_DIRs, as on two machines.

Two machines in one process: the export task (workers.datasets.export_dataset, run in-process)
writes with DATA_DIR = worker/, then the web app's download page streams the zip with
DATA_DIR = web/. Object storage is a real S3-compatible server (moto's, tests/webapp/pipeline/
s3server.py) reached over HTTP by s3fs; a shared filesystem is a third temporary folder given as
a plain path. The rows downloaded are compared with the zip made straight from the database.
"""

import io
import zipfile

import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from tests.webapp.pipeline import s3server
from tests.webapp.pipeline.s3server import BUCKET, SECRET, unreachable_options
from webapp.datasets import export
from webapp.datasets.models import DatasetExport
from webapp.lib.storage import StorageError
from webapp.lifecycle.status import JobStatus
from workers.datasets import export_dataset

s3_server, s3_storage = s3server.s3_server, s3server.s3_storage  # the fixtures


@pytest.fixture
def machines(settings, tmp_path):
    """The two DATA_DIRs; the worker's is the current one."""
    web, worker = tmp_path / "web", tmp_path / "worker"
    settings.DATA_DIR = worker
    return web, worker


def files_under(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def export_on_worker(dataset, fmt, researcher) -> DatasetExport:
    job = DatasetExport.objects.create(dataset=dataset, format=fmt, created_by=researcher)
    export_dataset(job.pk)
    job.refresh_from_db()
    return job


def download_on_web(client, job) -> zipfile.ZipFile:
    response = client.get(reverse("datasets:export_download", args=[job.dataset_id, job.pk]))
    assert response.status_code == 200, response.content.decode()
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def rows_of(archive: zipfile.ZipFile, fmt: str) -> list:
    if fmt == "jsonl":
        return archive.read("examples.jsonl").decode().splitlines()
    return pq.read_table(io.BytesIO(archive.read("examples.parquet"))).to_pylist()


def straight_from_the_database(dataset, fmt, researcher) -> list:
    return rows_of(zipfile.ZipFile(io.BytesIO(b"".join(export.stream_download(dataset, fmt, researcher)))), fmt)


def test_an_export_a_worker_wrote_is_downloaded_by_the_web_app_from_object_storage(
    built, researcher, client, machines, s3_storage, settings
):
    web, worker = machines
    job = export_on_worker(built, "jsonl", researcher)
    assert (job.status, job.rows) == (JobStatus.DONE, 2)
    assert job.path == f"exports/dataset-{built.pk}/export-{job.pk}-jsonl/attempt-1"
    assert s3_storage() == {
        f"{job.path}/{name}" for name in ("examples.jsonl", "manifest.json", "artifact-manifest.json")
    }
    assert files_under(worker) == []  # only in the storage: a copy on the worker would never be removed

    settings.DATA_DIR = web
    client.force_login(researcher)
    archive = download_on_web(client, job)
    assert archive.namelist() == ["examples.jsonl", "manifest.json"]
    assert rows_of(archive, "jsonl") == straight_from_the_database(built, "jsonl", researcher)
    assert len(rows_of(archive, "jsonl")) == 2 and files_under(web) == []  # streamed, not copied


def test_a_shared_folder_given_as_a_plain_path_carries_the_export_between_two_data_dirs(
    built, researcher, client, machines, settings, tmp_path
):
    web, worker = machines
    share = tmp_path / "share"
    settings.ARTIFACT_STORAGE_URL = str(share)
    job = export_on_worker(built, "parquet", researcher)
    assert job.status == JobStatus.DONE and (share / job.path / "examples.parquet").is_file()
    assert files_under(worker) == []

    settings.DATA_DIR = web
    client.force_login(researcher)
    rows = rows_of(download_on_web(client, job), "parquet")
    assert rows == straight_from_the_database(built, "parquet", researcher) and len(rows) == 2

    (share / job.path / "examples.parquet").write_bytes(b"changed on the share")
    with pytest.raises(StorageError, match="does not match its manifest"):  # the download breaks off
        b"".join(export.stream_folder(job, researcher))


def test_a_storage_out_of_reach_fails_the_export_in_plain_words_and_leaves_nothing_behind(
    built, researcher, machines, settings
):
    _, worker = machines
    settings.ARTIFACT_STORAGE_URL = f"s3://{BUCKET}/nowhere"
    settings.ARTIFACT_STORAGE_OPTIONS = unreachable_options()
    job = export_on_worker(built, "jsonl", researcher)
    assert job.status == JobStatus.FAILED and job.path == ""
    assert f"s3://{BUCKET}/nowhere/exports/" in job.error and "shared storage" in job.error
    assert SECRET not in job.error and files_under(worker) == []


def test_a_download_from_a_storage_out_of_reach_or_emptied_is_refused_in_plain_words(
    built, researcher, machines, s3_storage, s3_server, settings
):
    web, _ = machines
    job = export_on_worker(built, "jsonl", researcher)
    settings.DATA_DIR = web
    settings.ARTIFACT_STORAGE_OPTIONS = unreachable_options()
    with pytest.raises(export.ExportError, match="could not be read from the shared storage") as refused:
        export.stream_folder(job, researcher)
    assert f"s3://{BUCKET}/" in str(refused.value) and SECRET not in str(refused.value)

    settings.ARTIFACT_STORAGE_URL = f"{settings.ARTIFACT_STORAGE_URL}-elsewhere"  # reachable, but not there
    settings.ARTIFACT_STORAGE_OPTIONS = s3_server.options
    with pytest.raises(export.ExportError, match="no longer on the server"):
        export.stream_folder(job, researcher)


def test_without_a_storage_the_export_stays_under_the_shared_data_dir(built, researcher, client, machines):
    _, worker = machines
    job = export_on_worker(built, "jsonl", researcher)
    assert job.path == f"exports/dataset-{built.pk}/export-{job.pk}-jsonl"
    assert files_under(worker / job.path) == ["examples.jsonl", "manifest.json"]
    client.force_login(researcher)
    assert len(rows_of(download_on_web(client, job), "jsonl")) == 2
