"""Notes imported de-identified (webapp.corpus.importing.import_notes(deidentify=True), the Import
page's "De-identify on the way in", the API's `deidentify`): each note's text and metadata are
replaced before they are written, so no original identifier is anywhere in the database; brat
entities' spans are carried into the new text; the corpus is de-identified only when every note
went through it; the counts per type (never values) go on the job and the audit entry."""

import json

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from tests.webapp.deid.conftest import (
    DATE,
    DOCTOR,
    IDENTIFIERS,
    METADATA,
    MRN,
    NAME,
    PATIENT,
    PHONE,
    assert_no_identifier_anywhere,
    jsonl,
    note_rows,
)
from webapp.api import tokens
from webapp.audit.models import AuditEvent
from webapp.corpus import import_jobs
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Corpus, ImportJob, Note
from webapp.deid import mapping
from webapp.deid.models import DeidPolicy, SurrogateMapping
from webapp.deid.policy import REDACTED, patient_hash
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus


@pytest.fixture(autouse=True)
def quiet_queue(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


def _file(tmp_path, rows=None, name="notes.jsonl"):
    path = tmp_path / name
    path.write_bytes(jsonl(rows or note_rows()))
    return path


def _import(project, path, **kwargs):
    options = {"project": project, "language": "it", "create": True, "deidentify": True, **kwargs}
    return import_notes(path, "ward", **options)


def test_no_original_identifier_is_stored_anywhere(project, policy, tmp_path, researcher):
    report = _import(project, _file(tmp_path), actor=researcher)
    assert report.ok, report.problem_lines()
    assert report.created == 2
    corpus = Corpus.objects.get(name="ward")
    assert corpus.deidentified and corpus.deidentified_from is None
    first, second = Note.objects.filter(corpus=corpus).order_by("external_id")
    # the metadata: the patient by its keyed hash, the known fields by their replacement, the rest kept
    assert first.metadata["patient_id"] == second.metadata["patient_id"] == patient_hash("patient_id", PATIENT)
    surrogate = first.metadata["patient_name"]
    assert surrogate not in (NAME, REDACTED) and surrogate in first.text and surrogate in second.text
    assert first.metadata["mrn"] not in (MRN, REDACTED) and first.metadata["mrn"] in first.text
    assert first.metadata["ward"] == "cardiologia"
    assert "tachicardia, FC 130" in first.text and "Morbo di Parkinson" in first.text  # clinical words stay
    assert report.deid_counts == {"DATE": 1, "NAME": 4, "PHONE": 2, "RECORD_NUMBER": 1}
    event = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_NOTES)
    assert event.details["deidentified"] is True and event.details["identifiers"] == report.deid_counts
    assert_no_identifier_anywhere()


def test_tags_replace_every_identifier_by_its_type(project, policy, tmp_path):
    policy.mode = "tags"
    policy.save()
    assert _import(project, _file(tmp_path)).ok
    first = Note.objects.get(external_id="n1")
    assert first.text.startswith("Paziente [NAME], cartella [RECORD_NUMBER], ricoverato il [DATE]. Tel [PHONE].")
    assert first.metadata["patient_name"] == "[NAME]" and first.metadata["mrn"] == "[RECORD_NUMBER]"
    assert_no_identifier_anywhere()


def test_importing_the_same_file_again_changes_nothing(project, policy, tmp_path):
    path = _file(tmp_path)
    assert _import(project, path).created == 2
    again = _import(project, path)
    assert (again.created, again.unchanged, again.updated) == (0, 2, 0)  # surrogates are deterministic


def test_a_corpus_that_is_not_deidentified_refuses_the_flag_and_one_that_is_requires_it(project, policy, tmp_path):
    Corpus.objects.create(project=project, name="plain", language="it")
    refused = import_notes(_file(tmp_path), "plain", project=project, deidentify=True)
    assert not refused.ok and "holds notes that were not de-identified" in refused.problem_lines()[0]
    Corpus.objects.create(project=project, name="clean", language="it", deidentified=True)
    refused = import_notes(_file(tmp_path), "clean", project=project)
    assert not refused.ok and "notes go into it de-identified only" in refused.problem_lines()[0]
    assert not Note.objects.exists()
    assert import_notes(_file(tmp_path), "clean", project=project, deidentify=True).created == 2


def test_a_language_the_deidentifier_does_not_read_is_refused(project, policy, tmp_path):
    report = import_notes(_file(tmp_path), "ward", project=project, language="de", create=True, deidentify=True)
    assert not report.ok and "this corpus's language is 'de'" in report.problem_lines()[0]
    assert not Corpus.objects.exists()


def test_brat_entities_follow_the_new_text(project, tmp_path):
    """A span around an identifier grows to its tag; one after it moves with the text."""
    DeidPolicy.objects.create(project=project, mode=DeidPolicy.Mode.TAGS)
    folder = tmp_path / "brat"
    folder.mkdir()
    text = f"Visto dal Dott. {DOCTOR} il {DATE}: tachicardia, FC 130.\n"
    around = (text.index("Dott."), text.index(DOCTOR) + len(DOCTOR))
    after = (text.index("tachicardia"), text.index("tachicardia") + len("tachicardia"))
    (folder / "b1.txt").write_text(text, encoding="utf-8")
    (folder / "b1.ann").write_text(
        f"T1\tPerson {around[0]} {around[1]}\t{text[around[0] : around[1]]}\n"
        f"T2\tSymptom {after[0]} {after[1]}\ttachicardia\n",
        encoding="utf-8",
    )
    report = import_notes(folder, "brat-ward", project=project, language="it", create=True, deidentify=True)
    assert report.ok, report.problem_lines()
    note = Note.objects.get(external_id="b1")
    assert note.text == "Visto dal Dott. [NAME] il [DATE]: tachicardia, FC 130.\n"
    (person, symptom) = note.metadata["brat"]["entities"]
    [[start, end]] = person["spans"]
    assert note.text[start:end] == "Dott. [NAME]"
    [[start, end]] = symptom["spans"]
    assert note.text[start:end] == "tachicardia"
    assert_no_identifier_anywhere((DOCTOR, DATE))


def test_the_kept_mapping_is_encrypted_per_patient(project, policy, tmp_path, mapping_key, settings):
    policy.keep_mapping = True
    policy.save()
    assert _import(project, _file(tmp_path)).ok
    row = SurrogateMapping.objects.get()
    assert row.project_id == project.pk and row.patient_hash == patient_hash("patient_id", PATIENT)
    token = bytes(row.ciphertext)
    for value in (NAME, MRN, PHONE):
        assert value.encode() not in token
    pairs = dict(Fernet(mapping_key.encode()).decrypt(token) and mapping.decrypt(token))
    surrogate = Note.objects.get(external_id="n1").metadata["patient_name"]
    assert pairs[NAME] == surrogate and PHONE in pairs and MRN in pairs
    settings.DEID_MAPPING_KEY = Fernet.generate_key().decode()
    with pytest.raises(InvalidToken):
        mapping.decrypt(token)
    settings.DEID_MAPPING_KEY = f"{settings.DEID_MAPPING_KEY},{mapping_key}"  # rotation: an old key still reads
    assert dict(mapping.decrypt(token))[NAME] == surrogate
    assert_no_identifier_anywhere()


def test_a_policy_that_keeps_the_mapping_without_the_key_imports_nothing(project, policy, tmp_path, settings):
    policy.keep_mapping = True
    policy.save()
    settings.DEID_MAPPING_KEY = ""
    report = _import(project, _file(tmp_path))
    assert not report.ok and "DEID_MAPPING_KEY is not set" in report.problem_lines()[0]
    assert not Note.objects.exists() and not Corpus.objects.exists()


# --- through the import job, the page and the API ---------------------------------------------


class Heart:
    cancelling = lost = False

    def report(self, **fields):
        pass


def test_the_job_keeps_the_counts_per_type(project, policy, researcher):
    job = import_jobs.launch(
        SimpleUploadedFile("notes.jsonl", jsonl(note_rows())),
        project=project,
        kind="notes",
        corpus="ward",
        language="it",
        update=False,
        actor=researcher,
        deidentify=True,
    )
    job = units.claim(ImportJob, job.pk, "test-worker", select_related=("created_by",))
    assert import_jobs.run(job, Heart()) == JobStatus.DONE
    job.refresh_from_db()
    assert job.deidentify and job.created_count == 2
    assert job.deid_counts == {"DATE": 1, "NAME": 4, "PHONE": 2, "RECORD_NUMBER": 1}
    launched = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB, object_id=str(job.pk))
    assert launched.details["deidentify"] is True
    assert_no_identifier_anywhere()


def test_the_import_page_sends_the_flag_and_says_why_it_cannot(client_for, researcher, project, policy):
    client = client_for(researcher)
    form = {"project": project.pk, "kind": "notes", "corpus": "ward", "language": "it", "deidentify": "on"}
    answer = client.post(reverse("corpus:upload"), {**form, "file": SimpleUploadedFile("n.jsonl", jsonl(note_rows()))})
    assert answer.status_code == 302
    assert ImportJob.objects.get().deidentify
    Corpus.objects.create(project=project, name="plain", language="it")
    refused = client.post(
        reverse("corpus:upload"),
        {**form, "corpus": "plain", "language": "", "file": SimpleUploadedFile("n.jsonl", b"{}")},
    )
    assert refused.status_code == 200
    assert "holds notes that were not de-identified" in refused.context["form"].errors["deidentify"][0]
    gold = client.post(
        reverse("corpus:upload"),
        {**form, "kind": "annotations", "corpus": "plain", "file": SimpleUploadedFile("g.jsonl", b"{}")},
    )
    assert gold.context["form"].errors["deidentify"] == ["De-identification on the way in is for notes."]
    assert ImportJob.objects.count() == 1


def test_the_api_takes_the_flag_and_answers_the_counts_field(client, researcher, project, policy):
    _, secret = tokens.create(researcher, name="t", projects=[project], ceiling="roles", days=30)
    upload = SimpleUploadedFile("n.jsonl", jsonl(note_rows()))
    form = {"file": upload, "project": project.slug, "kind": "notes", "corpus": "ward", "language": "it"}
    answer = client.post("/api/imports", {**form, "deidentify": "true"}, headers={"Authorization": f"Bearer {secret}"})
    assert answer.status_code == 202, answer.json()
    body = answer.json()
    assert body["deidentify"] is True and body["deid_counts"] == {}
    assert ImportJob.objects.get(pk=body["id"]).deidentify


def test_metadata_values_that_are_not_text_are_redacted(project, policy, tmp_path):
    rows = [{"id": "n9", "text": f"Paziente {NAME}.", "metadata": {**METADATA, "mrn": ["RIC-1", "RIC-2"]}}]
    assert _import(project, _file(tmp_path, rows)).ok
    assert Note.objects.get().metadata["mrn"] == REDACTED
    assert not any(value in json.dumps(Note.objects.get().metadata) for value in IDENTIFIERS)
