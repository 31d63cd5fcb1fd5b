"""An erasure removes the files made from what it erases from ARTIFACT_STORAGE_URL: the export
folders of the dataset versions it withdraws or deletes, the stored uploads of a corpus's
imports. Object storage is a real S3-compatible server (moto's, tests/webapp/pipeline/s3server.py)."""

import pytest

from tests.webapp.erasure.helpers import erase_here
from tests.webapp.pipeline import s3server
from webapp import shared_files
from webapp.corpus.models import ImportJob
from webapp.erasure.models import ErasureRequest

s3_server, s3_storage = s3server.s3_server, s3server.s3_storage  # the fixtures
Scope = ErasureRequest.Scope
pytestmark = pytest.mark.django_db


def publish(tmp_path, relative: str) -> None:
    folder = tmp_path / "to-publish" / relative
    folder.mkdir(parents=True)
    (folder / "examples.jsonl").write_text('{"masked": "pt <mask>"}\n')
    shared_files.put(folder, relative)


def test_a_patients_erasure_removes_the_exports_of_the_withdrawn_version_from_the_storage(
    world, s3_storage, tmp_path, admin_user
):
    mine = f"exports/dataset-{world.dataset.pk}/export-{world.export.pk}-jsonl/attempt-1"
    publish(tmp_path, mine)
    publish(tmp_path, "exports/dataset-999999/export-1-jsonl/attempt-1")  # another version's: stays
    assert any(key.startswith(f"exports/dataset-{world.dataset.pk}/") for key in s3_storage())
    erasure, _, _ = erase_here(
        world.project, Scope.PATIENT, corpus=world.ward, patient_key="patient_id", patients=["P2"], actor=admin_user
    )
    keys = s3_storage()
    assert not any(key.startswith(f"exports/dataset-{world.dataset.pk}/") for key in keys)
    assert any(key.startswith("exports/dataset-999999/") for key in keys)
    assert erasure.erased["files: export folders"] == 1


def test_a_corpus_erasure_removes_its_imports_uploads_from_the_storage(world, s3_storage, tmp_path, admin_user):
    publish(tmp_path, "uploads/abc123")
    ImportJob.objects.filter(corpus_name="ward").update(upload="abc123/ward.jsonl")
    erasure, _, _ = erase_here(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user)
    assert not any(key.startswith("uploads/") for key in s3_storage())
    assert erasure.erased["files: uploads"] == 1 and not ImportJob.objects.filter(corpus_name="ward").exists()
