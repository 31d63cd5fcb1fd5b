"""The Import page with an annotation tool's files: a preview job shows each label and what it maps
to and writes nothing; the same upload without "Preview only" imports the gold evidence."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.webapp.interchange.conftest import TEXTS
from webapp.corpus.models import Annotation, ImportJob
from workers.imports import run_import

N1 = TEXTS["n1"]


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def _brat_zip() -> bytes:
    fever = N1.index("fever")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("gold/n1.txt", N1)
        zf.writestr("gold/n1.ann", f"T1\tSYMPTOM {fever} {fever + 5}\tfever\nT2\tWHO 0 2\tPt\n")
    return buffer.getvalue()


def _upload(client, capture, **extra):
    data = {
        "kind": "annotations",
        "corpus": "ward",
        "file": SimpleUploadedFile("gold.zip", _brat_zip()),
        "format": "brat",
        "mapping": "SYMPTOM=fever:present\r\nWHO=-",
        "annotator": "ward-team",  # the file names none
        **extra,
    }
    with capture(execute=True):
        response = client.post(reverse("corpus:upload"), data)
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    run_import(job.pk)
    job.refresh_from_db()
    return job, client.get(response["Location"]).content.decode()


def test_a_preview_writes_nothing_then_the_import_writes(
    ward, tasks, researcher, client_for, django_capture_on_commit_callbacks
):
    client = client_for(researcher)
    job, page = _upload(client, django_capture_on_commit_callbacks, preview="on")
    assert job.status == "done" and job.created_count == 0
    assert Annotation.objects.count() == 0
    assert "Preview of the import into ward: nothing was written." in page
    assert "gold.zip: SYMPTOM: 1 span(s) in 1 document(s) -&gt; fever:present" in page
    assert "gold.zip: annotations: 1 to create, 0 unchanged, 0 to update" in page
    job, page = _upload(client, django_capture_on_commit_callbacks)
    assert (job.status, job.created_count) == ("done", 1)
    fever = N1.index("fever")
    assert list(Annotation.objects.values_list("label", "evidence", "annotator_name")) == [
        ("present", [[fever, fever + 5]], "ward-team")
    ]


def test_a_bad_mapping_is_refused_by_the_form(ward, tasks, researcher, client_for):
    data = {
        "kind": "annotations",
        "corpus": "ward",
        "file": SimpleUploadedFile("gold.zip", _brat_zip()),
        "format": "brat",
        "mapping": "SYMPTOM fever",
    }
    response = client_for(researcher).post(reverse("corpus:upload"), data)
    assert response.status_code == 200
    assert "mapping entry 1 (&#x27;SYMPTOM fever&#x27;) must be LABEL=TASK:VALUE" in response.content.decode()
    assert not ImportJob.objects.exists()


def test_the_page_offers_every_format_of_the_table(researcher, client_for):
    page = client_for(researcher).get(reverse("corpus:upload")).content.decode()
    for value in ("brat", "xmi", "labelstudio", "doccano", "jsonl"):
        assert f'<option value="{value}">' in page


def test_import_now_imports_the_previewed_file_once(
    ward, tasks, researcher, client_for, django_capture_on_commit_callbacks, data_dir
):
    client = client_for(researcher)
    preview, page = _upload(client, django_capture_on_commit_callbacks, preview="on")
    assert preview.upload  # kept after the preview ended, for "Import now"
    assert reverse("interchange:import_previewed", args=[preview.pk]) in page
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("interchange:import_previewed", args=[preview.pk]))
    job = ImportJob.objects.latest("pk")
    assert job.pk != preview.pk and response["Location"] == reverse("corpus:import_detail", args=[job.pk])
    run_import(job.pk)
    job.refresh_from_db()
    assert (job.status, job.created_count, job.file_name) == ("done", 1, "gold.zip")
    assert Annotation.objects.get().annotator_name == "ward-team"
    preview.refresh_from_db()
    assert preview.upload == ""
    assert sorted(p.name for p in (data_dir / "uploads").iterdir()) == []  # both uploads removed
    again = client.post(reverse("interchange:import_previewed", args=[preview.pk]), follow=True)
    assert "Only a finished preview whose file is still kept can be imported from here" in again.content.decode()
    assert ImportJob.objects.count() == 2


def test_the_api_previews_then_imports_an_annotation_tools_files(
    ward, tasks, researcher, client, django_capture_on_commit_callbacks, data_dir
):
    """The same form by API: a preview job writes nothing and says what each label maps to, then
    POST /api/imports/ID/import imports the kept file; a bad mapping is a 400 naming the field."""
    from tests.projects import default_project
    from webapp.api import tokens

    _, secret = tokens.create(researcher, name="gold", projects=[default_project()], ceiling="roles", days=1)
    auth = {"Authorization": f"Bearer {secret}"}
    form = {
        "project": default_project().slug,
        "kind": "annotations",
        "corpus": "ward",
        "annotation_format": "brat",  # the API's older name of `format`, still taken
        "mapping": "SYMPTOM=fever:present\nWHO=-",
        "annotator": "ward-team",
    }
    bad = client.post("/api/imports", {**form, "mapping": "SYMPTOM", "file": _brat_file()}, headers=auth)
    assert bad.status_code == 400 and bad.json()["detail"].startswith("mapping: ")
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/api/imports", {**form, "preview": "true", "file": _brat_file()}, headers=auth)
    assert answer.status_code == 202, answer.json()
    run_import(answer.json()["id"])
    preview = client.get(f"/api/imports/{answer.json()['id']}", headers=auth).json()
    assert preview["status"] == "done" and Annotation.objects.count() == 0
    assert "gold.zip: SYMPTOM: 1 span(s) in 1 document(s) -> fever:present" in preview["problems"]
    with django_capture_on_commit_callbacks(execute=True):
        imported = client.post(f"/api/imports/{preview['id']}/import", headers=auth)
    assert imported.status_code == 202
    run_import(imported.json()["id"])
    assert client.get(f"/api/imports/{imported.json()['id']}", headers=auth).json()["created_count"] == 1
    assert Annotation.objects.get().label == "present"
    assert client.post(f"/api/imports/{preview['id']}/import", headers=auth).status_code == 409


def _brat_file():
    return SimpleUploadedFile("gold.zip", _brat_zip())
