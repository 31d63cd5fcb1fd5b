"""The gate on the dataset pages and command (webapp.deid.gate): a build, build again, a download,
an export folder and its download of a corpus that is not de-identified are refused with the
reason; a project admin's confirmation lets them go, audited; a researcher's is refused. The
export folder's residual scan is kept on the export and shown where it is listed."""

import io
import re
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.datasets import export
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.lifecycle.status import JobStatus

from .test_views import form_data

REASON = "Corpus ward is not de-identified: de-identify it, or a project admin may confirm"
CHECKBOX = 'name="confirm_identifiable"'


@pytest.fixture
def identifiable(corpus):
    """The fixtures' corpus, not de-identified."""
    corpus.deidentified = False
    corpus.save(update_fields=["deidentified"])
    return corpus


def releases():
    return AuditEvent.objects.filter(action=AuditEvent.Action.RELEASE_IDENTIFIABLE)


def page(client, user, dataset) -> str:
    client.force_login(user)
    return client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()


# ---------------------------------------------------------------- the build form


def test_a_build_of_a_corpus_that_is_not_deidentified_is_refused_with_the_reason(
    client, researcher, identifiable, model, sharp, maps
):
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(identifiable, model, sharp))
    html = response.content.decode()
    assert response.status_code == 200 and REASON in html
    assert CHECKBOX not in html  # a researcher sees the refusal only
    assert not DatasetVersion.objects.exists() and not releases().exists()


def test_a_project_admin_sees_the_checkbox_and_confirms_the_build(client, admin_user, identifiable, model, sharp, maps):
    client.force_login(admin_user)
    refused = client.post(reverse("datasets:new"), form_data(identifiable, model, sharp)).content.decode()
    assert REASON in refused and CHECKBOX in refused and "Let it leave although corpus ward is" in refused
    response = client.post(reverse("datasets:new"), form_data(identifiable, model, sharp, confirm_identifiable="1"))
    dataset = DatasetVersion.objects.get()
    assert response.status_code == 302
    event = releases().get()
    assert event.actor == admin_user and event.object_type == "datasets.DatasetVersion"
    assert event.object_id == str(dataset.pk)
    assert event.details["what"] == "dataset build" and event.details["corpora"] == [identifiable.pk]


def test_a_researchers_confirmation_is_refused_and_audited(client, researcher, identifiable, model, sharp, maps):
    client.force_login(researcher)
    data = form_data(identifiable, model, sharp, confirm_identifiable="1")
    html = client.post(reverse("datasets:new"), data).content.decode()
    assert "Only an admin of the project may confirm it" in html
    assert not DatasetVersion.objects.exists() and not releases().exists()
    denied = AuditEvent.objects.get(action=AuditEvent.Action.PERMISSION_DENIED)
    assert denied.actor == researcher and denied.details["what"] == "dataset build"


def test_a_deidentified_corpus_builds_without_asking(client, researcher, corpus, model, sharp, maps):
    client.force_login(researcher)
    html = client.post(reverse("datasets:new"), form_data(corpus, model, sharp), follow=True).content.decode()
    assert DatasetVersion.objects.count() == 1 and "not de-identified" not in html
    assert not releases().exists()


def test_build_again_is_refused_then_confirmed_by_an_admin(client, researcher, admin_user, built, identifiable):
    client.force_login(researcher)
    response = client.post(reverse("datasets:build_again", args=[built.pk]), follow=True)
    assert REASON in response.content.decode() and DatasetVersion.objects.count() == 1
    client.force_login(admin_user)
    detail = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert CHECKBOX in detail
    client.post(reverse("datasets:build_again", args=[built.pk]), {"confirm_identifiable": "1"})
    new = DatasetVersion.objects.get(version=2)
    assert releases().get().object_id == str(new.pk)


# ---------------------------------------------------------------- downloads and export folders


def test_the_detail_page_says_why_and_offers_the_checkbox_to_admins_only(
    client, researcher, admin_user, built, identifiable
):
    html = page(client, researcher, built)
    assert REASON in html and CHECKBOX not in html
    assert "Only an admin of the project may let it leave as it is." in html
    assert CHECKBOX in page(client, admin_user, built)


def test_a_deidentified_corpus_shows_plain_download_links(client, researcher, built):
    html = page(client, researcher, built)
    assert "not de-identified" not in html and reverse("datasets:download", args=[built.pk, "jsonl"]) in html


def test_a_download_is_refused_with_the_reason(client, researcher, built, identifiable):
    client.force_login(researcher)
    response = client.get(reverse("datasets:download", args=[built.pk, "jsonl"]), follow=True)
    assert REASON in response.content.decode() and not response.streaming
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()


def test_a_researchers_confirmed_download_is_refused(client, researcher, built, identifiable):
    client.force_login(researcher)
    url = reverse("datasets:download", args=[built.pk, "jsonl"]) + "?confirm_identifiable=1"
    response = client.get(url, follow=True)
    assert "Only an admin of the project may confirm it" in response.content.decode()
    assert not releases().exists() and not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()


def test_an_admins_confirmed_download_streams_and_is_audited(client, admin_user, built, identifiable):
    client.force_login(admin_user)
    response = client.get(reverse("datasets:download", args=[built.pk, "jsonl"]) + "?confirm_identifiable=1")
    assert response.streaming
    names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
    assert names == ["examples.jsonl", "manifest.json"]
    event = releases().get()
    assert event.details == {
        "what": "dataset download",
        "corpora": [identifiable.pk],
        "corpus_names": ["ward"],
        "format": "jsonl",
    }
    assert event.object_type == "datasets.DatasetVersion" and event.project_id == identifiable.project_id


def test_preparing_an_export_is_refused_then_confirmed(client, researcher, admin_user, built, identifiable):
    client.force_login(researcher)
    response = client.post(reverse("datasets:export", args=[built.pk]), {"format": "jsonl"}, follow=True)
    assert REASON in response.content.decode() and not DatasetExport.objects.exists()
    client.force_login(admin_user)
    client.post(reverse("datasets:export", args=[built.pk]), {"format": "jsonl", "confirm_identifiable": "1"})
    job = DatasetExport.objects.get()
    event = releases().get()
    assert event.object_type == "datasets.DatasetExport" and event.object_id == str(job.pk)


def test_a_prepared_exports_download_passes_the_gate_too(
    client, researcher, admin_user, built, identifiable, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="jsonl", created_by=admin_user)
    export.run_export(export.claim_export(job.pk))
    url = reverse("datasets:export_download", args=[built.pk, job.pk])
    client.force_login(researcher)
    assert REASON in client.get(url, follow=True).content.decode()
    client.force_login(admin_user)
    response = client.get(url + "?confirm_identifiable=1")
    assert response.streaming
    assert releases().get().details["what"] == "dataset export download"


def test_the_command_refuses_then_writes_with_its_flag(built, identifiable, tmp_path):
    with pytest.raises(CommandError, match="--confirm-identifiable"):
        call_command("export_dataset", built.pk, "--format", "jsonl", "--out", str(tmp_path / "a"))
    out = io.StringIO()
    call_command(
        "export_dataset",
        built.pk,
        "--format",
        "jsonl",
        "--out",
        str(tmp_path / "b"),
        "--confirm-identifiable",
        stdout=out,
    )
    assert (tmp_path / "b" / "examples.jsonl").exists() and "Residual scan:" in out.getvalue()
    event = releases().get()
    assert event.actor is None and event.actor_name.startswith("cli:")


# ---------------------------------------------------------------- the export folder's residual scan


class FakeDetector:
    """Finds "pacemaker" as a NAME and "bp" as a PHONE: counts only ever leave the scan."""

    def find(self, text, known=None):
        from ml.deid.types import Finding

        found = []
        for word, kind in (("pacemaker", "NAME"), ("bp", "PHONE")):
            if match := re.search(rf"\b{word}\b", text):
                found.append(Finding(kind, *match.span()))
        return found


@pytest.fixture
def fake_detector(monkeypatch):
    monkeypatch.setattr("webapp.deid_ops.scanning.detector_for", lambda project, language, policy=None: FakeDetector())


def test_an_export_folder_keeps_its_residual_scan_and_the_page_shows_it(
    client, researcher, built, settings, tmp_path, fake_detector
):
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="jsonl", created_by=researcher)
    export.run_export(export.claim_export(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    # two rows: "pacemaker" masked in one (its label), "bp" in the other; each row holds both words
    assert job.residual["counts"] == {"NAME": 2, "PHONE": 2}
    assert job.residual["rows"] == 2 and job.residual["rows_with_findings"] == 2
    audited = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert audited.details["residual"]["counts"] == {"NAME": 2, "PHONE": 2}
    html = page(client, researcher, built)
    assert (
        "Identifiers left (residual scan)" in html
        and (
            '<span class="identifier-type" title="NAME">Name</span> 2 · '
            '<span class="identifier-type" title="PHONE">Phone number</span> 2'
        )
        in html
    )


def test_an_hf_export_is_scanned_too(researcher, built, settings, tmp_path, fake_detector):
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="hf", created_by=researcher)
    export.run_export(export.claim_export(job.pk))
    job.refresh_from_db()
    assert job.residual["counts"] == {"NAME": 2, "PHONE": 2} and job.residual["rows"] == 2


def test_an_export_whose_detector_cannot_be_made_is_written_and_says_it_was_not_scanned(
    researcher, built, settings, tmp_path, monkeypatch
):
    def broken(project, language, policy=None):
        raise RuntimeError("no detector here")

    monkeypatch.setattr("webapp.deid_ops.scanning.detector_for", broken)
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="jsonl", created_by=researcher)
    export.run_export(export.claim_export(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.residual == {"skipped": "not scanned: the detector could not be made (RuntimeError)"}
