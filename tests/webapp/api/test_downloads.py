"""Downloads by API: a corpus's gold spans and review decisions through the interchange export
(the corpus page's), which needs the export capability; a model another project trained is 404."""

import io
import json
import zipfile

from webapp.corpus.models import Annotation
from webapp.pipeline.models import ModelVersion
from webapp.review.models import PeakDecision


def _lines(response) -> list[dict]:
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    (name,) = archive.namelist()
    return [json.loads(line) for line in archive.read(name).decode().splitlines() if line.strip()]


def test_gold_and_decisions_download_as_jsonl(client, researcher, clinician, own, make_token, bearer):
    note, task = own["notes"][0], own["task"]
    Annotation.objects.create(note=note, task=task, label="y", annotator_name="gold", evidence=[[0, 2]])
    PeakDecision.objects.create(
        note=note,
        task=task,
        model_version=own["model"],
        method="attnlrp",
        template="en",
        start=3,
        end=6,
        decision="accept",
        reviewer=clinician,
    )
    _, secret = make_token(researcher, [own["project"]])
    response = client.get(f"/api/corpora/{own['corpus'].pk}/annotations/jsonl", headers=bearer(secret))
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    text = json.dumps(_lines(response))
    assert "accept" in text and "clara" in text  # the clinician's decision, by reviewer
    assert "heart-rate" in text


def test_a_clinicians_token_may_not_export(client, clinician, own, make_token, bearer):
    _, secret = make_token(clinician, [own["project"]])
    assert client.get(f"/api/corpora/{own['corpus'].pk}/annotations/jsonl", headers=bearer(secret)).status_code == 403


def test_peaks_of_a_model_of_another_project_are_404(client, researcher, own, other, make_token, bearer):
    from webapp.training.models import TrainingRun

    run = TrainingRun.objects.get(pk=other["run_id"])
    run.produced_model = ModelVersion.objects.create(name="zebra dsm", family="llama", path="/b")
    run.save(update_fields=["produced_model"])
    _, secret = make_token(researcher, [own["project"]])
    url = f"/api/corpora/{own['corpus'].pk}/annotations/jsonl?peaks_model=zebra%20dsm"
    assert client.get(url, headers=bearer(secret)).status_code == 404


def test_a_notes_maps_and_peaks(client, clinician, own, make_token, bearer):
    from webapp.pipeline.models import RelevanceMap

    note = own["notes"][0]  # "HR 100 bpm."
    offsets, scores = [[0, 2], [3, 6], [7, 10], [10, 11]], [0.05, 1.0, 0.1, 0.0]
    RelevanceMap.objects.store_one(note, own["task"], own["model"], offsets, scores)
    _, secret = make_token(clinician, [own["project"]], ceiling="read")
    url = f"/api/corpora/{own['corpus'].pk}/notes/{note.pk}/maps?arrays=true"
    (found,) = client.get(url, headers=bearer(secret)).json()["maps"]
    assert found["task"] == "heart-rate" and found["offsets"] == offsets
    assert found["scores"][1] == 1.0  # float16 stores 1.0 exactly
    assert any(start <= 3 and 6 <= end for start, end in found["peaks"])  # the peak covers "100"
