"""The success path of each API route that only the cross-project sweep (test_cross_project)
reached before: a dataset's rebuild and cancel, its exports (request, status, download,
cancel), a run's metrics, predictions, cancel and resume, an import's cancel, and one note.
Issue 38, item 9. Workers are not running here: what a worker would do is done in-process
(the dataset build and the export folder), the rest is the web side's answer."""

import csv
import io
import json
import zipfile

import pytest

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, ImportJob
from webapp.datasets import building, export
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.lifecycle.status import JobStatus
from webapp.training.models import LabeledSplit, RunMetric, RunPrediction, TrainingRun


@pytest.fixture
def built(mapped):
    """A finished DSM dataset of project A, built in-process from the hand-made maps."""
    dataset = DatasetVersion.objects.create(
        name="api ds", version=1, corpus=mapped["corpus"], model_version=mapped["model"], profile=mapped["profile"]
    )
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE and dataset.example_count > 0
    return dataset


@pytest.fixture
def run(own, researcher):
    """A queued SFT run of project A (its split on A's corpus)."""
    split = LabeledSplit.objects.create(corpus=own["corpus"], seed=0, test_ratio=0.5)
    return TrainingRun.objects.create(
        name="api run", kind="sft", model_version=own["model"], split=split, created_by=researcher
    )


def _zip_names(response) -> list[str]:
    return sorted(zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist())


def test_a_finished_dataset_is_rebuilt_as_its_next_version_and_that_one_cancelled(
    client, researcher, built, make_token, bearer
):
    _, secret = make_token(researcher, [built.corpus.project])
    again = client.post(f"/api/datasets/{built.pk}/rebuild", headers=bearer(secret))
    assert again.status_code == 202, again.json()
    answer = again.json()
    assert answer["id"] != built.pk and (answer["name"], answer["version"], answer["status"]) == ("api ds", 2, "queued")
    assert DatasetVersion.objects.get(pk=built.pk).status == JobStatus.DONE  # a finished version never changes

    cancelled = client.post(f"/api/datasets/{answer['id']}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.post(f"/api/datasets/{answer['id']}/cancel", headers=bearer(secret)).status_code == 409


def test_a_dataset_is_exported_to_a_folder_followed_and_downloaded(
    client, researcher, built, make_token, bearer, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    _, secret = make_token(researcher, [built.corpus.project])
    requested = client.post(f"/api/datasets/{built.pk}/exports?fmt=jsonl", headers=bearer(secret))
    assert requested.status_code == 202, requested.json()
    job = requested.json()
    assert (job["dataset"], job["format"], job["status"]) == (built.pk, "jsonl", "queued")
    url = f"/api/datasets/{built.pk}/exports/{job['id']}"
    export.run_export(export.claim_export(job["id"]))  # what the worker on the queue does

    followed = client.get(url, headers=bearer(secret))
    assert followed.status_code == 200
    assert followed.json()["status"] == "done" and followed.json()["rows"] == built.example_count
    assert followed.json()["size_bytes"] > 0
    download = client.get(f"{url}/download", headers=bearer(secret))
    assert download.status_code == 200 and download["Content-Type"] == "application/zip"
    assert 'filename="api-ds-v1-jsonl.zip"' in download["Content-Disposition"]
    assert _zip_names(download) == ["examples.jsonl", "manifest.json"]
    downloaded = AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT, details__export_id=job["id"])
    assert downloaded.get().actor == researcher


def test_a_queued_export_is_cancelled(client, researcher, built, make_token, bearer):
    _, secret = make_token(researcher, [built.corpus.project])
    job = DatasetExport.objects.create(dataset=built, format="parquet", created_by=researcher)
    cancelled = client.post(f"/api/datasets/{built.pk}/exports/{job.pk}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200
    assert (cancelled.json()["id"], cancelled.json()["status"]) == (job.pk, "cancelled")
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED


def test_a_runs_metrics_come_in_pages_in_the_order_written(client, clinician, own, run, make_token, bearer):
    RunMetric.objects.create(run=run, phase="teacher", step=1, loss=3.0)
    for step, loss in ((1, 2.0), (2, 1.5)):
        RunMetric.objects.create(run=run, step=step, epoch=step / 10, loss=loss, lr=1e-4, tokens_per_s=900.0)
    _, secret = make_token(clinician, [own["project"]], ceiling="read")  # reading needs no launch right
    answer = client.get(f"/api/training-runs/{run.pk}/metrics", headers=bearer(secret))
    assert answer.status_code == 200
    body = answer.json()
    assert body["next"] is None
    assert [(m["phase"], m["step"], m["loss"]) for m in body["items"]] == [
        ("teacher", 1, 3.0),
        ("train", 1, 2.0),
        ("train", 2, 1.5),
    ]
    assert body["items"][1] == {
        "phase": "train",
        "step": 1,
        "epoch": 0.1,
        "loss": 2.0,
        "lr": 1e-4,
        "tokens_per_s": 900.0,
    }
    first = client.get(f"/api/training-runs/{run.pk}/metrics?limit=2", headers=bearer(secret)).json()
    paged = client.get(first["next"], headers=bearer(secret)).json()
    assert [m["step"] for m in paged["items"]] == [2] and paged["next"] is None


def test_a_runs_predictions_download_as_csv_and_jsonl(client, clinician, own, run, make_token, bearer):
    first, second = own["notes"]
    RunPrediction.objects.create(run=run, note=second, task=own["task"], gold="n", predicted="y")
    RunPrediction.objects.create(run=run, note=first, task=own["task"], gold="y", predicted="y")
    _, secret = make_token(clinician, [own["project"]], ceiling="read")

    as_jsonl = client.get(f"/api/training-runs/{run.pk}/predictions/jsonl", headers=bearer(secret))
    assert as_jsonl.status_code == 200 and as_jsonl["Content-Type"].startswith("application/x-ndjson")
    assert f'filename="run-{run.pk}-predictions.jsonl"' in as_jsonl["Content-Disposition"]
    rows = [json.loads(line) for line in b"".join(as_jsonl.streaming_content).decode().splitlines()]
    assert rows == [
        {"note": "a0", "task": "heart-rate", "variant": 0, "gold": "y", "predicted": "y"},
        {"note": "a1", "task": "heart-rate", "variant": 0, "gold": "n", "predicted": "y"},
    ]

    as_csv = client.get(f"/api/training-runs/{run.pk}/predictions/csv", headers=bearer(secret))
    assert as_csv.status_code == 200 and as_csv["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(b"".join(as_csv.streaming_content).decode().lstrip("\ufeff"))))
    assert [(r["note"], r["gold"], r["predicted"]) for r in table] == [("a0", "y", "y"), ("a1", "n", "y")]
    assert client.get(f"/api/training-runs/{run.pk}/predictions/xlsx", headers=bearer(secret)).status_code == 400


def test_a_run_is_cancelled_and_resumed(client, researcher, own, run, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    cancelled = client.post(f"/api/training-runs/{run.pk}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200
    assert (cancelled.json()["id"], cancelled.json()["status"]) == (run.pk, "cancelled")
    assert client.post(f"/api/training-runs/{run.pk}/cancel", headers=bearer(secret)).status_code == 409

    resumed = client.post(f"/api/training-runs/{run.pk}/resume", headers=bearer(secret))
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"
    run.refresh_from_db()
    assert run.status == JobStatus.QUEUED and run.phase == "queued again"
    assert client.post(f"/api/training-runs/{run.pk}/resume", headers=bearer(secret)).status_code == 409


def test_a_queued_import_is_cancelled(client, researcher, own, make_token, bearer):
    job = ImportJob.objects.create(
        project=own["project"], kind="notes", corpus_name="ward A", file_name="n.jsonl", created_by=researcher
    )
    _, secret = make_token(researcher, [own["project"]])
    cancelled = client.post(f"/api/imports/{job.pk}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200
    assert (cancelled.json()["id"], cancelled.json()["status"]) == (job.pk, "cancelled")
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, actor=researcher).count() == 1
    assert client.post(f"/api/imports/{job.pk}/cancel", headers=bearer(secret)).status_code == 409


def test_one_note_with_its_text_and_annotations(client, clinician, own, make_token, bearer):
    note = own["notes"][1]
    note.metadata = {"ward": "cardiology"}
    note.save(update_fields=["metadata"])
    Annotation.objects.create(note=note, task=own["task"], label="y", annotator_name="gold", evidence=[[0, 2]])
    _, secret = make_token(clinician, [own["project"]], ceiling="read")
    answer = client.get(f"/api/corpora/{own['corpus'].pk}/notes/{note.pk}", headers=bearer(secret))
    assert answer.status_code == 200
    assert answer.json() == {
        "id": note.pk,
        "corpus": own["corpus"].pk,
        "external_id": "a1",
        "text": "HR 101 bpm.",
        "metadata": {"ward": "cardiology"},
        "annotations": [{"task": "heart-rate", "label": "y", "evidence": [[0, 2]], "annotator": "gold"}],
    }
    other_corpus = f"/api/corpora/{own['corpus'].pk + 10_000}/notes/{note.pk}"
    assert client.get(other_corpus, headers=bearer(secret)).status_code == 404
