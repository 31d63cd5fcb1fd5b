"""The gate by API (webapp.deid.gate): every download, export and launch whose data comes from a
corpus that is not de-identified answers 409 with the reason and what to send; a project admin's
`confirm_identifiable` lets it go (audited); anyone else's is a 403. A de-identified corpus's data
goes without asking. No answer or audit row holds a note's text."""

import json

import pytest

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus
from webapp.datasets import export
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.training.models import LabeledSplit, TrainingRun

from .test_success_paths import built  # noqa: F401 (a fixture)

REASON = "Corpus ward A is not de-identified: de-identify it, or a project admin may confirm"


@pytest.fixture
def identifiable(own):
    Corpus.objects.filter(pk=own["corpus"].pk).update(deidentified=False)
    return own


@pytest.fixture
def tokens(researcher, admin_user, own, make_token):
    return {
        "researcher": make_token(researcher, [own["project"]])[1],
        "admin": make_token(admin_user, [own["project"]])[1],
    }


def releases():
    return AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE_IDENTIFIABLE)


def refused_409(response):
    assert response.status_code == 409, response.content
    body = response.json()
    assert body["detail"].startswith(REASON)
    assert "sends the same request with confirm_identifiable=true" in body["detail"]
    assert body["corpora"][0]["name"] == "ward A"


def refused_403(response):
    assert response.status_code == 403, response.content
    assert "Only an admin of the project may confirm it" in response.json()["detail"]


def drained(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def test_a_dataset_build_by_api(client, mapped, identifiable, tokens, bearer):
    body = {
        "name": "api-gated",
        "corpus": mapped["corpus"].pk,
        "model_version": mapped["model"].pk,
        "profile": mapped["profile"].pk,
    }

    def post(extra, who):
        return client.post(
            "/api/datasets", {**body, **extra}, content_type="application/json", headers=bearer(tokens[who])
        )

    refused_409(post({}, "researcher"))
    refused_403(post({"confirm_identifiable": True}, "researcher"))
    assert not DatasetVersion.objects.exists()
    answer = post({"confirm_identifiable": True}, "admin")
    assert answer.status_code == 202
    assert releases().get().object_id == str(answer.json()["id"])


def test_downloads_exports_and_rebuilds_by_api(client, built, identifiable, tokens, bearer, settings, tmp_path):  # noqa: F811
    settings.DATA_DIR = tmp_path

    def call(method, url, who):
        return getattr(client, method)(url, headers=bearer(tokens[who]))

    base = f"/api/datasets/{built.pk}"
    for method, url in (
        ("get", f"{base}/download/jsonl"),
        ("post", f"{base}/exports?fmt=jsonl"),
        ("post", f"{base}/rebuild"),
    ):
        refused_409(call(method, url, "researcher"))
        joiner = "&" if "?" in url else "?"
        refused_403(call(method, f"{url}{joiner}confirm_identifiable=true", "researcher"))
    assert not releases().exists() and not DatasetExport.objects.exists()

    assert call("get", f"{base}/download/jsonl?confirm_identifiable=true", "admin").streaming
    requested = call("post", f"{base}/exports?fmt=jsonl&confirm_identifiable=true", "admin")
    assert requested.status_code == 202
    job = DatasetExport.objects.get(pk=requested.json()["id"])
    export.run_export(export.claim_export(job.pk))
    refused_409(call("get", f"{base}/exports/{job.pk}/download", "researcher"))
    assert call("get", f"{base}/exports/{job.pk}/download?confirm_identifiable=true", "admin").streaming
    status = call("get", f"{base}/exports/{job.pk}", "researcher").json()
    assert "residual" in status and status["residual"] is not None
    assert call("post", f"{base}/rebuild?confirm_identifiable=true", "admin").status_code == 202
    assert sorted(releases().values_list("details__what", flat=True)) == [
        "dataset build",
        "dataset download",
        "dataset export",
        "dataset export download",
    ]


def test_annotations_by_api(client, identifiable, tokens, bearer):
    url = f"/api/corpora/{identifiable['corpus'].pk}/annotations/jsonl"
    refused_409(client.get(url, headers=bearer(tokens["researcher"])))
    refused_403(client.get(f"{url}?confirm_identifiable=true", headers=bearer(tokens["researcher"])))
    answer = client.get(f"{url}?confirm_identifiable=true", headers=bearer(tokens["admin"]))
    assert answer.status_code == 200 and answer.streaming
    drained(answer)
    assert releases().get().details["what"] == "annotation export"


def test_a_training_launch_and_its_predictions_by_api(client, identifiable, tokens, bearer):
    for note, label in zip(identifiable["notes"], ("y", "n")):
        Annotation.objects.create(
            note=note, task=identifiable["task"], label=label, annotator_name="gold", evidence=[[0, 2]]
        )
    body = {
        "preset": "sft",
        "model_version": identifiable["model"].pk,
        "split_corpus": identifiable["corpus"].pk,
        "split_test_ratio": 0.5,
        "config": {"train": {"max_steps": 3}},
    }

    def post(extra, who):
        return client.post(
            "/api/training-runs", {**body, **extra}, content_type="application/json", headers=bearer(tokens[who])
        )

    refused_409(post({}, "researcher"))
    refused_403(post({"confirm_identifiable": True}, "researcher"))
    assert not TrainingRun.objects.exists()
    answer = post({"confirm_identifiable": True}, "admin")
    assert answer.status_code == 202
    run = answer.json()["id"]
    refused_409(client.get(f"/api/training-runs/{run}/predictions/csv", headers=bearer(tokens["researcher"])))
    ok = client.get(
        f"/api/training-runs/{run}/predictions/csv?confirm_identifiable=true", headers=bearer(tokens["admin"])
    )
    assert ok.status_code == 200


def test_a_deidentified_corpus_goes_without_asking(client, own, tokens, bearer):
    split = LabeledSplit.objects.create(corpus=own["corpus"], seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name="r", kind="sft", model_version=own["model"], split=split)
    assert (
        client.get(f"/api/training-runs/{run.pk}/predictions/csv", headers=bearer(tokens["researcher"])).status_code
        == 200
    )
    url = f"/api/corpora/{own['corpus'].pk}/annotations/jsonl"
    assert client.get(url, headers=bearer(tokens["researcher"])).status_code == 200
    assert not releases().exists()


def test_no_refusal_or_audit_row_holds_note_text(client, identifiable, tokens, bearer):
    url = f"/api/corpora/{identifiable['corpus'].pk}/annotations/jsonl"
    answer = client.get(url, headers=bearer(tokens["researcher"]))
    client.get(f"{url}?confirm_identifiable=true", headers=bearer(tokens["researcher"]))
    said = answer.content.decode() + json.dumps(list(AuditEvent.objects.values("details")))
    assert "bpm" not in said and "HR 10" not in said
