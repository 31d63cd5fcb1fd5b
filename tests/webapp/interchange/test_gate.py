"""The gate on annotation-tool exports (webapp.deid.gate): a corpus that is not de-identified is
refused on the export page and by the command, with the reason; a project admin's confirmation
lets it go, audited; a researcher's is refused. Every export's text is scanned as it is written:
its counts per identifier type go in its audit row and the page lists them; never a value."""

import io
import json
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from ml.deid.types import Finding
from webapp.audit.models import AuditEvent
from webapp.interchange.exporting import ExportChoice, export_corpus

REASON = "Corpus ward is not de-identified: de-identify it, or a project admin may confirm"
CHECKBOX = 'name="confirm_identifiable"'


class FakeDetector:
    """Finds "HR" (a stand-in identifier, typed PHONE) wherever it is written."""

    def find(self, text, known=None):
        return [Finding("PHONE", *m.span()) for m in re.finditer(r"\bHR\b", text)]


@pytest.fixture(autouse=True)
def fake_detector(monkeypatch):
    monkeypatch.setattr("webapp.deid_ops.scanning.detector_for", lambda project, language, policy=None: FakeDetector())


def releases():
    return AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE_IDENTIFIABLE)


def exports():
    return AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT)


def export_url(corpus, **extra):
    query = "&".join(f"{k}={v}" for k, v in {"format": "jsonl", "gold": "on", **extra}.items())
    return f"{reverse('interchange:export', args=[corpus.pk])}?{query}"


def test_the_export_page_refuses_a_corpus_that_is_not_deidentified(client, researcher, ward):
    client.force_login(researcher)
    html = client.get(reverse("interchange:export", args=[ward.pk])).content.decode()
    assert REASON in html and CHECKBOX not in html
    response = client.get(export_url(ward))
    assert not response.streaming and REASON in response.content.decode()
    assert not exports().exists()


def test_a_project_admin_sees_the_checkbox_and_the_confirmed_export_is_audited(client, admin_user, ward):
    client.force_login(admin_user)
    assert CHECKBOX in client.get(reverse("interchange:export", args=[ward.pk])).content.decode()
    response = client.get(export_url(ward, confirm_identifiable="1"))
    assert response.streaming
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert archive.namelist() == ["jsonl.jsonl"]
    export = exports().get()
    event = releases().get()
    assert event.actor == admin_user and (event.object_type, event.object_id) == ("corpus.Corpus", str(ward.pk))
    assert event.details == {
        "what": "annotation export",
        "corpora": [ward.pk],
        "corpus_names": ["ward"],
        "format": "jsonl",
        "export_event": export.pk,
    }


def test_a_researchers_confirmation_is_refused(client, researcher, ward):
    client.force_login(researcher)
    response = client.get(export_url(ward, confirm_identifiable="1"))
    assert not response.streaming
    assert "Only an admin of the project may confirm it" in response.content.decode()
    assert not releases().exists() and not exports().exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.PERMISSION_DENIED).count() == 1


def test_a_deidentified_corpus_exports_without_asking_and_the_page_lists_its_scan(client, researcher, ward):
    ward.deidentified = True
    ward.save(update_fields=["deidentified"])
    client.force_login(researcher)
    response = client.get(export_url(ward))
    assert response.streaming
    b"".join(response.streaming_content)
    assert not releases().exists()
    export = exports().get()
    # TEXTS: "n1" says HR once, "n2" once
    assert export.details["residual"]["counts"] == {"PHONE": 2}
    assert export.details["residual"]["notes"] == 2 and export.details["residual"]["notes_with_findings"] == 2
    html = client.get(reverse("interchange:export", args=[ward.pk])).content.decode()
    assert "Latest exports" in html and "not de-identified" not in html
    assert '<span class="identifier-type" title="PHONE">Phone number</span> 2' in html  # the residual count


def test_the_command_refuses_then_writes_with_its_flag(ward, tmp_path):
    with pytest.raises(CommandError, match="--confirm-identifiable"):
        call_command("export_annotations", "--corpus", "ward", "--format", "jsonl", "--out", str(tmp_path / "a.jsonl"))
    assert not (tmp_path / "a.jsonl").exists()
    out = io.StringIO()
    call_command(
        "export_annotations",
        "--corpus",
        "ward",
        "--format",
        "jsonl",
        "--out",
        str(tmp_path / "b.jsonl"),
        "--confirm-identifiable",
        stdout=out,
    )
    assert (tmp_path / "b.jsonl").exists()
    event = releases().get()
    assert event.actor is None and event.actor_name.startswith("cli:")


def test_no_note_text_in_the_audit_rows(ward, admin_user, tmp_path):
    export_corpus(ward, "jsonl", tmp_path / "x.jsonl", ExportChoice(), actor=admin_user, confirm_identifiable=True)
    said = json.dumps(list(AuditEvent.objects.values("details")))
    assert "HR" not in said and "fever" not in said.lower()
