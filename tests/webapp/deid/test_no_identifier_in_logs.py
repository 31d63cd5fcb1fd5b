"""No identifier value in any log line or audit row: the whole flow (the policy saved, notes
imported de-identified with the mapping kept, the corpus de-identified into a new one, gold with
the original text imported, a refused document) runs with every logger at DEBUG, and neither the
captured records nor the audit rows hold one of the patient's identifiers."""

import json
import logging

import pytest
from django.urls import reverse

from tests.projects import DEFAULT_SLUG
from tests.webapp.deid.conftest import FIRST, IDENTIFIERS, METADATA, NAME, SECOND, jsonl, note_rows
from webapp.audit.models import AuditEvent
from webapp.corpus.gold import import_gold
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Annotation, Corpus, Note
from webapp.deid_ops import deidentifying, jobs
from webapp.lifecycle import queue


@pytest.fixture(autouse=True)
def quiet_queue(monkeypatch, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


def test_the_whole_flow_logs_and_audits_no_identifier(
    client_for, admin_user, researcher, project, tachycardia, mapping_key, tmp_path, caplog
):
    caplog.set_level(logging.DEBUG)
    form = {
        "mode": "surrogates",
        "patient_field": "patient_id",
        "known_fields": "patient_name\nmrn",
        "record_patterns": r"\bRIC-\d{6}\b",
        "allow_list": "Parkinson",
        "deny_list": NAME.split()[1],  # a name in the deny-list: counted, never written
        "keep_mapping": "on",
    }
    assert client_for(admin_user).post(reverse("deid:policy", args=[DEFAULT_SLUG]), form).status_code == 302

    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl(note_rows()))
    assert import_notes(
        path, "clean", project=project, language="it", create=True, deidentify=True, actor=researcher
    ).ok

    plain = Corpus.objects.create(project=project, name="plain", language="it")
    for i, text in enumerate((FIRST, SECOND)):
        note = Note.objects.create(corpus=plain, external_id=f"p{i}", text=text, metadata=METADATA)
        Annotation.objects.create(note=note, task=tachycardia, label="y", evidence=[[0, 20]], annotator_name="gold")
    job = jobs.launch_deidentify(plain, actor=researcher)
    assert deidentifying.run(jobs.claim(job.pk, worker="test")) == "done"

    gold = tmp_path / "gold.jsonl"
    spans = [{"ranges": [[0, 20]], "label": "EVID", "source": "gold"}]
    gold.write_text(
        json.dumps({"id": "n1", "text": FIRST, "metadata": METADATA, "spans": spans})
        + "\n"
        + json.dumps({"id": "n2", "text": SECOND + " altro", "spans": spans})
        + "\n",
        encoding="utf-8",
    )
    refused = import_gold(gold, "clean", fmt="jsonl", mapping=["EVID=tachy:y"], annotator="t", project=project)
    assert not refused.ok  # n2's text differs: refused, the reason without its text

    logged = caplog.text + "\n".join(str(record.args) for record in caplog.records)
    audited = json.dumps([event.details for event in AuditEvent.objects.all()], ensure_ascii=False)
    problems = "\n".join(refused.report.problem_lines())
    for value in IDENTIFIERS:
        assert value not in logged, value
        assert value not in audited, value
        assert value not in problems, value
    assert AuditEvent.objects.filter(action=AuditEvent.Action.DEIDENTIFY).count() == 1
    assert AuditEvent.objects.filter(action=AuditEvent.Action.DEID_POLICY).count() == 1
