"""Permission refusals (the 403 handler) and refused imports (command line and background job) in
the audit log: who, where, counts and reason categories, never note text."""

import getpass
import json
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus import import_jobs
from webapp.corpus.models import Corpus, ImportJob, Note
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus

MARKER = "Zebrafishmarker"  # in note text and metadata: must appear in no audit row


def refusals(action=AuditEvent.Action.PERMISSION_DENIED):
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def bad_notes(path):
    """Three notes, the third repeating the first's id and the second with empty text."""
    rows = [
        {"id": "n1", "text": f"{MARKER} FC 80", "metadata": {"name": MARKER}},
        {"id": "n2", "text": ""},
        {"id": "n1", "text": f"{MARKER} again"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_page_the_role_may_not_see_is_refused_and_audited(client, clinician):
    client.force_login(clinician)
    response = client.get(reverse("corpus:upload"), REMOTE_ADDR="10.9.8.7")
    assert response.status_code == 403 and "Not allowed" in response.content.decode()
    [event] = refusals()
    assert (event.actor, event.actor_name, event.ip) == (clinician, "clara", "10.9.8.7")
    assert event.details == {"path": "/corpora/import/", "method": "GET", "reason": "Your role does not allow: import"}


def test_a_refused_post_is_audited_without_its_body(client, clinician):
    client.force_login(clinician)
    response = client.post(
        reverse("corpus:upload"),
        {"kind": "notes", "corpus": MARKER, "language": "en", "file": SimpleUploadedFile("n.jsonl", MARKER.encode())},
    )
    assert response.status_code == 403
    [event] = refusals()
    assert event.details["method"] == "POST" and MARKER not in str(event.details)
    assert not Corpus.objects.exists()


def test_a_refusal_from_an_access_helper_is_audited_too(client, researcher):
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text=f"{MARKER} HR 120")
    client.force_login(researcher)
    assert client.post(reverse("review:decide", args=[corpus.pk, note.pk]), {}).status_code == 403
    [event] = refusals()
    assert event.actor == researcher and event.details["reason"].startswith("Your role does not allow")


def test_a_logged_in_user_without_a_role_is_refused_and_audited(client, norole_user):
    client.force_login(norole_user)
    assert client.get(reverse("home")).status_code == 403
    assert refusals()[0].actor_name == "nobody"


def test_a_refused_command_line_import_is_audited_with_counts_and_categories(db, tmp_path, monkeypatch):
    Corpus.objects.create(project=default_project(), name="ward", language="en")
    path = bad_notes(tmp_path / "notes.jsonl")
    monkeypatch.setattr(sys, "argv", ["manage.py", "import_notes", str(path), "--corpus", "ward"])
    with pytest.raises(CommandError, match="nothing imported, 2 problem"):
        call_command("import_notes", str(path), "--corpus", "ward")
    [event] = refusals(AuditEvent.Action.IMPORT_REFUSED)
    assert event.actor is None and event.actor_name == f"cli:{getpass.getuser()}"
    assert event.details == {
        "command": "import_notes",
        "corpus": "ward",
        "kind": "notes",
        "problems": 2,
        "reasons": ["field … is empty", "duplicate id …"],
    }
    assert not Note.objects.exists() and MARKER not in str(event.details)


def test_a_refused_command_line_annotation_import_is_audited(db, tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"note_id": MARKER, "task": "heart-rate", "label": "x", "evidence": []}) + "\n")
    with pytest.raises(CommandError):
        call_command("import_annotations", str(path), "--corpus", "nowhere")
    [event] = refusals(AuditEvent.Action.IMPORT_REFUSED)
    assert event.details["kind"] == "annotations" and event.details["problems"] == 1
    assert event.details["reasons"] == ["corpus … does not exist in project"]  # names quoted in the reason are left out


class FakeHeart:
    def __init__(self, lost=False):
        self.cancelling, self.lost = False, lost

    def report(self, **fields):
        pass


@pytest.fixture
def import_job(researcher, settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))
    body = bad_notes(tmp_path / "upload.jsonl").read_bytes()
    job = import_jobs.launch(
        SimpleUploadedFile("notes.jsonl", body),
        project=default_project(),
        kind="notes",
        corpus="icu",
        language="en",
        update=False,
        actor=researcher,
    )
    return units.claim(ImportJob, job.pk, "test-worker", select_related=("created_by",))


def test_a_refused_background_import_is_audited_as_its_user(import_job, researcher):
    assert import_jobs.run(import_job, FakeHeart()) == JobStatus.FAILED
    [event] = refusals(AuditEvent.Action.IMPORT_REFUSED)
    assert (event.actor, event.actor_name) == (researcher, "rita")
    assert event.details == {
        "corpus": "icu",
        "kind": "notes",
        "problems": 2,
        "reasons": ["field … is empty", "duplicate id …"],
    }
    assert MARKER not in str(event.details)


def test_a_background_import_lost_to_another_worker_records_no_refusal(import_job):
    assert import_jobs.run(import_job, FakeHeart(lost=True)) is None
    assert not refusals(AuditEvent.Action.IMPORT_REFUSED)
