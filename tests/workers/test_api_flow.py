"""A researcher's automation by API only, through a REAL worker (queues default and relevance) on
PostgreSQL + Redis: import notes, compute relevance with a tiny random Llama, build a dataset
from the maps, download it; each step is launched by a POST and followed by GETs of its status,
as a script would. The notes are not de-identified: the build is refused (409, webapp.deid.gate)
until a project admin marks the corpus de-identified (its notes were, before the import)."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from tests.projects import default_project
from tests.webapp.pipeline.factories import make_model_version
from tests.workers.conftest import wait_for
from webapp.api import tokens
from webapp.corpus.models import Corpus, Task
from webapp.deid.gate import mark_deidentified
from webapp.pipeline.models import PeakProfile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NOTES = [
    {"id": "api-1", "text": "Heart rate 120 bpm, blood pressure 90/60, started on a beta blocker."},
    {"id": "api-2", "text": "Afebrile; pulse 64 and regular; no chest pain on review."},
]
ENDED = ("done", "failed", "cancelled")


def test_import_job_dataset_and_download_by_api_only(start_worker, tiny_model_dir, researcher, admin_user, client):
    start_worker("default,relevance")
    Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = make_model_version(str(tiny_model_dir), name="tiny-api")
    # scores are normalised to [0, 1]: thresholds of 0 make each map's whole note one peak, so
    # the one-peak build has one example per map, whatever the tiny random model's relevance
    profile = PeakProfile.objects.create(name="api-flow", kernel_size=1, lower=0.0, upper=0.0)
    _, secret = tokens.create(researcher, name="flow", projects=[default_project()], ceiling="roles", days=1)
    auth = {"Authorization": f"Bearer {secret}"}

    def follow(url):
        wait_for(lambda: client.get(url, headers=auth).json()["status"] in ENDED, timeout=120, message=url)
        answer = client.get(url, headers=auth).json()
        assert answer["status"] == "done", answer
        return answer

    upload = SimpleUploadedFile("notes.jsonl", "".join(json.dumps(n) + "\n" for n in NOTES).encode())
    form = {"file": upload, "project": default_project().slug, "kind": "notes", "corpus": "api ward", "language": "en"}
    imported = client.post("/api/imports", form, headers=auth)
    assert imported.status_code == 202, imported.json()
    assert follow(f"/api/imports/{imported.json()['id']}")["created_count"] == 2
    (corpus,) = [c for c in client.get("/api/corpora", headers=auth).json()["items"] if c["name"] == "api ward"]

    body = {"corpus": corpus["id"], "model_version": model.pk, "task_selection": "list", "tasks": ["heart-rate"]}
    job = client.post("/api/jobs", body, content_type="application/json", headers=auth)
    assert job.status_code == 202, job.json()
    assert follow(f"/api/jobs/{job.json()['id']}")["done"] == 2

    body = {
        "name": "api flow",
        "corpus": corpus["id"],
        "model_version": model.pk,
        "profile": profile.pk,
        "mode": "one_peak",
    }
    refused = client.post("/api/datasets", body, content_type="application/json", headers=auth)
    assert refused.status_code == 409 and "Corpus api ward is not de-identified" in refused.json()["detail"]
    mark_deidentified(Corpus.objects.get(pk=corpus["id"]), admin_user, confirm=True)
    built = client.post("/api/datasets", body, content_type="application/json", headers=auth)
    assert built.status_code == 202, built.json()
    dataset = follow(f"/api/datasets/{built.json()['id']}")
    assert dataset["stats"]["examples"] == 2

    download = client.get(f"/api/datasets/{dataset['id']}/download/jsonl", headers=auth)
    assert download.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content)))
    (rows_file,) = [name for name in archive.namelist() if name.endswith(".jsonl")]
    rows = [json.loads(line) for line in archive.read(rows_file).decode().splitlines()]
    assert len(rows) == 2
