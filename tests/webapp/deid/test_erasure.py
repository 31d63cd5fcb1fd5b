"""Erasure knows the de-identification tables (webapp.erasure.planning): a patient's erasure finds
their notes in a de-identified corpus by the value (the notes hold its keyed hash) and removes
their kept mapping, never another patient's; a project's erasure removes its policy, jobs and
mappings; a de-identification job still running on a corpus holds its erasure back."""

import pytest

from tests.webapp.deid.conftest import METADATA, PATIENT, jsonl, note_rows
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Corpus, Note
from webapp.deid.models import DeidJob, DeidPolicy, SurrogateMapping
from webapp.deid.policy import patient_hash
from webapp.deid_ops import jobs
from webapp.erasure import erasing, planning
from webapp.erasure.models import ErasureRequest
from webapp.lifecycle import queue

Scope = ErasureRequest.Scope
OTHER = "PZ-0099"


@pytest.fixture(autouse=True)
def quiet_queue(monkeypatch, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


@pytest.fixture
def ward(project, policy, mapping_key, tmp_path):
    """Two patients' notes imported de-identified, their mappings kept."""
    policy.keep_mapping = True
    policy.save()
    other = {
        "id": "o1",
        "text": "Paziente Gualtiero Bressanone, FC 70.",
        "metadata": {**METADATA, "patient_id": OTHER, "patient_name": "Gualtiero Bressanone"},
    }
    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl([*note_rows(), other]))
    assert import_notes(path, "ward", project=project, language="it", create=True, deidentify=True).ok
    assert SurrogateMapping.objects.count() == 2
    return Corpus.objects.get(name="ward")


def test_a_patients_erasure_finds_their_deidentified_notes_and_removes_their_mapping(ward, project, admin_user):
    erasure = erasing.request(
        project, Scope.PATIENT, corpus=ward, patient_key="patient_id", patients=[PATIENT], actor=admin_user, send=False
    )
    assert erasure.planned["tables"]["corpus.Note"] == 2
    assert erasure.planned["tables"]["deid.SurrogateMapping"] == 1
    assert erasing.run(erasing.claim(erasure.pk, worker="test")) == "done"
    assert list(Note.objects.values_list("external_id", flat=True)) == ["o1"]
    assert list(SurrogateMapping.objects.values_list("patient_hash", flat=True)) == [patient_hash("patient_id", OTHER)]


def test_a_projects_erasure_removes_its_policy_jobs_and_mappings(ward, project, admin_user, researcher):
    plain = Corpus.objects.create(project=project, name="plain", language="it")
    Note.objects.create(corpus=plain, external_id="p1", text="FC 90.")
    job = jobs.launch_deidentify(plain, actor=researcher)
    DeidJob.objects.filter(pk=job.pk).update(status="done")
    counted, _ = erasing.plan(project, Scope.PROJECT)
    assert counted.tables["deid.DeidPolicy"] == 1 and counted.tables["deid.SurrogateMapping"] == 2
    assert counted.tables["deid.DeidJob"] == 1
    erasure = erasing.request(project, Scope.PROJECT, actor=admin_user, send=False)
    assert erasing.run(erasing.claim(erasure.pk, worker="test")) == "done"
    assert not DeidPolicy.objects.exists() and not SurrogateMapping.objects.exists() and not DeidJob.objects.exists()


def test_a_corpus_erasure_keeps_the_job_that_made_a_corpus_that_stays(project, policy, researcher, admin_user):
    plain = Corpus.objects.create(project=project, name="plain", language="it")
    Note.objects.create(corpus=plain, external_id="p1", text="FC 90.")
    job = jobs.launch_deidentify(plain, actor=researcher)
    with pytest.raises(planning.PlanError, match="de-identification jobs"):  # still queued: the erasure waits
        erasing.request(project, Scope.CORPUS, corpus=plain, actor=admin_user, send=False)
    DeidJob.objects.filter(pk=job.pk).update(status="done")
    erasure = erasing.request(project, Scope.CORPUS, corpus=plain, actor=admin_user, send=False)
    assert "deid.DeidJob" not in erasure.planned["tables"]
    assert erasing.run(erasing.claim(erasure.pk, worker="test")) == "done"
    job.refresh_from_db()
    assert job.source is None and job.target is not None  # the new corpus's provenance stays
    assert Corpus.objects.get(pk=job.target_id).deidentified_from is None
