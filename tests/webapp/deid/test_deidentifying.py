"""A corpus de-identified into a new one (webapp.deid_ops.jobs, webapp.deid_ops.deidentifying), run in
process: the new corpus "<name> (de-identified)" holds every note under its external id, its text
and metadata replaced, its annotations with their evidence carried into the new text (a span
around an identifier, a span after it); relevance maps are not copied; batches resume after a
cancel or a lost attempt with no note copied twice; the end is audited with counts, no value."""

import json

import pytest
from django.urls import reverse

from tests.webapp.datasets.fabricate import add_map
from tests.webapp.deid.conftest import (
    DOCTOR,
    FIRST,
    METADATA,
    NAME,
    PATIENT,
    SECOND,
)
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note
from webapp.deid.models import DeidJob
from webapp.deid.policy import patient_hash
from webapp.deid_ops import deidentifying, jobs
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import ModelVersion, RelevanceMap

AROUND = (FIRST.index("Paziente"), FIRST.index(NAME) + len(NAME) + 1)  # "Paziente Ottone Zanfrini,"
AFTER = (FIRST.index("tachicardia"), FIRST.index("tachicardia") + len("tachicardia"))


@pytest.fixture(autouse=True)
def quiet_queue(monkeypatch):
    sent = []
    monkeypatch.setattr(queue, "send", lambda task, *ids: sent.extend(ids) or len(ids))
    return sent


@pytest.fixture
def ward(project, tachycardia):
    """A corpus as imported: three notes of one patient, the first with gold evidence and a map."""
    corpus = Corpus.objects.create(project=project, name="ward", language="it")
    notes = [
        Note.objects.create(corpus=corpus, external_id=f"n{i}", text=text, metadata=METADATA)
        for i, text in enumerate((FIRST, SECOND, f"Nota {3}: {NAME} stabile."), 1)
    ]
    Annotation.objects.create(
        note=notes[0], task=tachycardia, label="y", evidence=[list(AROUND), list(AFTER)], annotator_name="gold"
    )
    Annotation.objects.create(note=notes[1], task=tachycardia, label="n", evidence=[[0, 9]], annotator_name="gold")
    add_map(notes[0], tachycardia, ModelVersion.objects.create(name="base", family="llama", path="/nowhere"))
    return corpus


def _run(job, batch=None):
    return deidentifying.run(jobs.claim(job.pk, worker="test"), batch=batch)


def test_the_new_corpus_holds_every_note_deidentified_with_its_evidence_carried(ward, policy, researcher):
    job = jobs.launch_deidentify(ward, actor=researcher)
    assert job.target.name == "ward (de-identified)" and job.notes_total == 3
    assert _run(job, batch=2) == JobStatus.DONE
    job.refresh_from_db()
    target = job.target
    assert (target.deidentified, target.deidentified_from, target.language, target.project) == (
        True,
        ward,
        "it",
        ward.project,
    )
    assert (job.notes_done, job.notes_total, job.notes_with_findings) == (3, 3, 3)
    assert job.counts == {"DATE": 1, "NAME": 5, "PHONE": 2, "RECORD_NUMBER": 1}
    copies = {n.external_id: n for n in Note.objects.filter(corpus=target)}
    assert sorted(copies) == ["n1", "n2", "n3"]
    first = copies["n1"]
    surrogate = first.metadata["patient_name"]
    assert first.metadata["patient_id"] == patient_hash("patient_id", PATIENT)
    assert all(surrogate in note.text for note in copies.values())  # one stand-in across the patient's notes
    gold = Annotation.objects.get(note=first)
    (start, end), (after_start, after_end) = gold.evidence
    assert first.text[start:end] == f"Paziente {surrogate},"  # around the identifier: grows to the surrogate
    assert first.text[after_start:after_end] == "tachicardia"  # after it: moved with the text
    assert Annotation.objects.get(note=copies["n2"]).evidence == [[0, 9]]  # before any identifier: as it was
    assert not RelevanceMap.objects.filter(note__corpus=target).exists()  # computed again by the usual jobs
    assert RelevanceMap.objects.filter(note__corpus=ward).count() == 1 and Note.objects.filter(corpus=ward).count() == 3
    event = AuditEvent.objects.get(action=AuditEvent.Action.DEIDENTIFY)
    assert event.details["counts"] == job.counts and event.details["notes"] == 3
    assert event.object_id == str(target.pk) and event.project_id == ward.project_id
    for copy in copies.values():
        assert NAME not in copy.text and DOCTOR not in copy.text
    assert NAME not in json.dumps([e.details for e in AuditEvent.objects.all()])


def test_a_cancel_stops_between_batches_and_resume_copies_each_note_once(ward, policy, researcher):
    job = jobs.launch_deidentify(ward, actor=researcher)
    claimed = jobs.claim(job.pk, worker="first")
    with deidentifying.Heartbeat(claimed) as heart:
        assert deidentifying._copy_batch(claimed, deidentifying.NoteDeidentifier(ward.project, "it"), 2, heart) == 2
    units.request_cancel(DeidJob, job.pk)
    assert deidentifying.run(claimed, batch=2) == JobStatus.CANCELLED
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.notes_done == 2 and job.last_note > 0
    assert Note.objects.filter(corpus=job.target).count() == 2
    assert jobs.resume(job, researcher)
    assert _run(job, batch=2) == JobStatus.DONE
    job.refresh_from_db()
    assert job.notes_done == 3 and Note.objects.filter(corpus=job.target).count() == 3
    assert Annotation.objects.filter(note__corpus=job.target).count() == 2


def test_a_lost_attempts_batch_is_done_again_and_a_note_already_copied_is_skipped(ward, policy, researcher):
    job = jobs.launch_deidentify(ward, actor=researcher)
    first = jobs.claim(job.pk, worker="first")
    # the first worker committed the notes of a batch, then was lost before its cursor moved (as if
    # the rows had come from another path): the next attempt must not copy them again
    deid = deidentifying.NoteDeidentifier(ward.project, "it")
    done = deid.note(FIRST, METADATA)
    Note.objects.create(corpus=job.target, external_id="n1", text=done.text, metadata=done.metadata)
    DeidJob.objects.filter(pk=job.pk).update(heartbeat=units.before(3600))
    second = jobs.claim(job.pk, worker="second")
    assert second.attempts == 2
    assert deidentifying.run(second) == JobStatus.DONE
    with pytest.raises(deidentifying.Stopped):  # the first worker, waking up, writes nothing more
        deidentifying._copy_batch(first, deid, 2, deidentifying.Heartbeat(first))
    assert sorted(Note.objects.filter(corpus=job.target).values_list("external_id", flat=True)) == ["n1", "n2", "n3"]


def test_a_deidentified_corpus_and_one_being_deidentified_are_refused(ward, policy, researcher):
    job = jobs.launch_deidentify(ward, actor=researcher)
    with pytest.raises(jobs.LaunchRefused, match="being de-identified already"):
        jobs.launch_deidentify(ward, actor=researcher)
    with pytest.raises(jobs.LaunchRefused, match="de-identified already"):
        jobs.launch_deidentify(job.target, actor=researcher)
    assert _run(job) == JobStatus.DONE
    second = jobs.launch_deidentify(ward, actor=researcher)  # a second version once the first has ended
    assert second.target.name == "ward (de-identified 2)"


def test_a_policy_that_cannot_be_applied_refuses_the_launch(project, policy, researcher, settings):
    corpus = Corpus.objects.create(project=project, name="station", language="de")
    with pytest.raises(jobs.LaunchRefused, match="language is 'de'"):
        jobs.launch_deidentify(corpus, actor=researcher)
    policy.keep_mapping = True
    policy.save()
    settings.DEID_MAPPING_KEY = ""
    corpus.language = "it"
    corpus.save()
    with pytest.raises(jobs.LaunchRefused, match="DEID_MAPPING_KEY is not set"):
        jobs.launch_deidentify(corpus, actor=researcher)
    assert not DeidJob.objects.exists() and Corpus.objects.count() == 1


def test_the_corpus_page_launches_it_and_the_job_page_follows(client_for, researcher, clinician, ward, policy):
    page = client_for(clinician).get(reverse("corpus:detail", args=[ward.pk]))
    assert "Not de-identified" in page.content.decode() and "De-identify into a new corpus" not in page.content.decode()
    assert client_for(clinician).post(reverse("deid:deidentify", args=[ward.pk])).status_code == 403
    client = client_for(researcher)
    page = client.get(reverse("corpus:detail", args=[ward.pk])).content.decode()
    assert "De-identify into a new corpus" in page
    answer = client.post(reverse("deid:deidentify", args=[ward.pk]))
    job = DeidJob.objects.get()
    assert answer.status_code == 302 and answer["Location"] == reverse("deid:job", args=[job.pk])
    live = client.get(reverse("deid:job", args=[job.pk]), headers={"HX-Request": "true"})
    assert live.status_code == 200 and "0 of 3 notes" in live.content.decode()
    _run(job)
    ended = client.get(reverse("deid:job", args=[job.pk]), headers={"HX-Request": "true"})
    assert ended.status_code == 286 and "3 of 3 notes" in ended.content.decode()
    assert 'Name <small><code class="identifier-type">NAME</code></small>' in ended.content.decode()
    target_page = client.get(reverse("corpus:detail", args=[job.target_id])).content.decode()
    assert "De-identified" in target_page and "made from" in target_page
    assert client.post(reverse("deid:job_resume", args=[job.pk])).status_code == 302  # refused: it is done
    assert DeidJob.objects.get().status == JobStatus.DONE


def test_the_api_lists_launches_and_cancels_jobs(client, researcher, ward, policy):
    from webapp.api import tokens

    _, secret = tokens.create(researcher, name="t", projects=[ward.project], ceiling="roles", days=30)
    auth = {"Authorization": f"Bearer {secret}"}
    launched = client.post(f"/api/corpora/{ward.pk}/deidentify", headers=auth)
    assert launched.status_code == 202
    body = launched.json()
    assert body["action"] == "deidentify" and body["source"] == ward.pk and body["notes_total"] == 3
    assert client.post(f"/api/corpora/{ward.pk}/deidentify", headers=auth).status_code == 409
    listed = client.get("/api/deid-jobs", headers=auth).json()
    assert [item["id"] for item in listed["items"]] == [body["id"]]
    cancelled = client.post(f"/api/deid-jobs/{body['id']}/cancel", headers=auth).json()
    assert cancelled["status"] == JobStatus.CANCELLED
    assert client.post(f"/api/deid-jobs/{body['id']}/resume", headers=auth).json()["status"] == JobStatus.QUEUED
    assert client.get(f"/api/corpora/{body['target']}", headers=auth).json()["deidentified_from"] == ward.pk


def test_notes_without_a_patient_each_get_their_own_date_shift(project, policy):
    """A note whose patient is unknown is keyed by its own id: one shared key would give every
    such note one date shift, and one real date learnt would shift all of them back."""
    from webapp.deid.policy import NoteDeidentifier

    deid = NoteDeidentifier(project, "it")
    text = "Ricoverato il 3 marzo 2024."
    shifted = {deid.note(text, {}, f"n{i}").text for i in range(8)}
    assert len(shifted) > 1  # 8 notes, 670 possible shifts: one shared shift is what this catches
    assert deid.note(text, {}, "n1").text == deid.note(text, {}, "n1").text  # a note keeps its own
    assert all("3 marzo 2024" not in new for new in shifted)
