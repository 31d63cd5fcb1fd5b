"""The import page: researchers upload a file, the request answers at once with a queued import
job, a worker imports it (here the task runs in-process) and the job's page shows the result or
every problem with its line; a refused file imports nothing."""

import io
import json
import stat
import zipfile
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus import uploads
from webapp.corpus.models import Corpus, ImportJob, Note
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

TASK = "workers.imports.run_import"


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


@pytest.fixture
def sent(monkeypatch):
    """The messages sent to the queue, as (task name, id)."""
    messages = []
    monkeypatch.setattr(queue, "send", lambda task, *ids: messages.extend((task, pk) for pk in ids) or len(ids))
    return messages


def jsonl(*objs) -> bytes:
    return "".join(json.dumps(o) + "\n" for o in objs).encode()


def post(client, capture, **data):
    with capture(execute=True):
        return client.post(reverse("corpus:upload"), data)


def imported(client, capture, **data) -> tuple[ImportJob, str]:
    """Upload, let the worker's task run in-process, return the job and its page."""
    response = post(client, capture, **data)
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    assert response["Location"] == reverse("corpus:import_detail", args=[job.pk])
    run_import(job.pk)
    job.refresh_from_db()
    return job, client.get(response["Location"]).content.decode()


def test_the_upload_answers_at_once_with_a_queued_import_job(
    client, researcher, sent, data_dir, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}))
    response = post(client, django_capture_on_commit_callbacks, kind="notes", corpus="ed", language="it", file=upload)
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("corpus:import_detail", args=[job.pk])
    assert job.status == JobStatus.QUEUED and job.created_by == researcher and job.heartbeat is not None
    assert (job.kind, job.corpus_name, job.language, job.update) == ("notes", "ed", "it", False)
    assert (job.file_name, job.file_size) == ("notes.jsonl", len(upload.file.getvalue()))
    assert sent == [(TASK, job.pk)]
    assert not Corpus.objects.exists() and not Note.objects.exists()  # nothing imported in the request
    stored = data_dir / "uploads" / job.upload
    assert stored.is_file() and stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    launch = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB)
    assert launch.actor == researcher and launch.object_id == str(job.pk) and launch.details["file"] == "notes.jsonl"


def test_a_researcher_imports_a_jsonl_file_into_a_new_corpus(
    client, researcher, sent, data_dir, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}, {"id": "b", "text": "FC 120"}))
    job, html = imported(
        client, django_capture_on_commit_callbacks, kind="notes", corpus="ed", language="it", file=upload
    )
    assert job.status == JobStatus.DONE and job.attempts == 1
    assert (job.created_count, job.updated_count, job.unchanged_count) == (2, 0, 0)
    corpus = Corpus.objects.get(name="ed")
    assert sorted(corpus.notes.values_list("external_id", flat=True)) == ["a", "b"]
    assert "2 created, 0 updated, 0 unchanged" in html and reverse("corpus:detail", args=[corpus.pk]) in html
    assert "hx-get" not in html  # an ended import is not polled
    event = AuditEvent.objects.get(action="import_notes")
    assert event.actor == researcher and event.details["created"] == 2
    assert "PA 90/60" not in json.dumps(event.details)
    assert job.upload == "" and not any((data_dir / "uploads").iterdir())  # the stored upload is removed


def test_the_launch_is_audited_with_the_clients_address(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}))
    post(client, django_capture_on_commit_callbacks, kind="notes", corpus="ed", language="it", file=upload)
    assert AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB).ip == "127.0.0.1"


def test_a_finished_import_without_update_says_no_changed_record_was_met(
    client, researcher, sent, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}))
    job, html = imported(
        client, django_capture_on_commit_callbacks, kind="notes", corpus="ed", language="it", file=upload
    )
    assert job.status == JobStatus.DONE and not job.update
    assert "<dt>Changed records</dt><dd>none (a record that differs" in html
    assert "refused (a problem)" not in html
    assert "<dt>Records written</dt><dd>1 of 1</dd>" in html  # all of them, never the last beat's count


def test_an_upload_spooled_to_disk_is_moved_into_its_private_folder(
    client, researcher, sent, settings, data_dir, django_capture_on_commit_callbacks
):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # Django writes every upload to a temporary file
    client.force_login(researcher)
    body = jsonl(*({"id": f"n{i}", "text": f"HR {i}"} for i in range(100)))
    response = post(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("big.jsonl", body),
    )
    job = ImportJob.objects.get()
    stored = data_dir / "uploads" / job.upload
    assert response.status_code == 302 and stored.read_bytes() == body and job.file_size == len(body)
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    run_import(job.pk)
    assert ImportJob.objects.get(pk=job.pk).created_count == 100 and not stored.exists()


def test_a_bad_file_lists_each_problem_with_its_line_and_imports_nothing(
    client, researcher, sent, data_dir, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    body = jsonl({"id": "a", "text": "ok"}) + b"{not json\n" + jsonl({"id": "a", "text": "Secret words"})
    job, html = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("n.jsonl", body),
    )
    assert job.status == JobStatus.FAILED and job.problem_count == 2
    assert [line.split(":")[0] for line in job.problem_lines] == ["n.jsonl line 2", "n.jsonl line 3"]
    assert "Secret words" not in json.dumps(job.problems)
    assert "Nothing was imported" in html and "n.jsonl line 2" in html and "n.jsonl line 3" in html
    assert not Corpus.objects.filter(name="ed").exists()
    assert Note.objects.count() == 0 and not AuditEvent.objects.filter(action="import_notes").exists()
    assert job.upload == "" and not any((data_dir / "uploads").iterdir())


def test_every_problem_can_be_read_a_page_at_a_time_whole_by_api_and_as_a_download(
    client, researcher, sent, django_capture_on_commit_callbacks
):
    from webapp.api import tokens

    client.force_login(researcher)
    body = b"".join(b"{broken\n" for _ in range(250))
    job, html = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("n.jsonl", body),
    )
    assert job.problem_count == 250 and len(job.problems) == 250 and job.more_problems == 0
    assert "250 problems" in html and "Problems 1–50 of 250" in html and "n.jsonl line 50:" in html
    assert "n.jsonl line 51:" not in html
    last = client.get(reverse("corpus:import_detail", args=[job.pk]), {"problems_page": 5}).content.decode()
    assert "Problems 201–250 of 250" in last and "n.jsonl line 250:" in last and "n.jsonl line 200:" not in last
    download = client.get(reverse("corpus:import_problems", args=[job.pk]))
    assert download["Content-Disposition"] == f'attachment; filename="import-{job.pk}-problems.txt"'
    assert download.content.decode().splitlines() == job.problem_lines
    _, secret = tokens.create(researcher, name="problems", projects=[default_project()], ceiling="roles", days=1)
    answer = client.get(f"/api/imports/{job.pk}", headers={"Authorization": f"Bearer {secret}"}).json()
    assert answer["problem_count"] == 250 and answer["problems"] == job.problem_lines


def test_a_zip_of_brat_files_is_imported_as_notes(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("case1.txt", "Febbre 39 C.")
        zf.writestr("case1.ann", "T1\tCLINENTITY 0 6\tFebbre\n")
        zf.writestr("sub/case2.txt", "Nessun dolore.")
        zf.writestr("sub/case2.ann", "")
    job, _ = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="brat",
        language="it",
        file=SimpleUploadedFile("cases.zip", buffer.getvalue()),
    )
    assert job.status == JobStatus.DONE, job.problems
    assert sorted(Note.objects.values_list("external_id", flat=True)) == ["case1", "case2"]


def test_annotations_are_imported_into_an_existing_corpus(
    client, researcher, sent, tasks, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    Note.objects.create(corpus=corpus, external_id="a", text="HR 130")
    upload = SimpleUploadedFile(
        "gold.jsonl", jsonl({"note_id": "a", "task": "heart rate", "label": "tachycardic", "evidence": [[0, 6]]})
    )
    job, html = imported(client, django_capture_on_commit_callbacks, kind="annotations", corpus="ward", file=upload)
    assert job.status == JobStatus.DONE and job.created_count == 1 and job.language == ""
    assert corpus.notes.get().annotations.get().label == "tachycardic"
    assert "1 created" in html


def test_gold_labels_jsonl_belong_to_the_annotator_named_on_the_page(
    client, researcher, sent, tasks, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    Note.objects.create(corpus=corpus, external_id="a", text="HR 130")
    line = {"note_id": "a", "task": "heart rate", "label": "tachycardic", "evidence": [[0, 6]]}
    for name in ("gold.jsonl", "gold-renamed.jsonl"):  # a renamed file is the same annotator's
        upload = SimpleUploadedFile(name, jsonl(line))
        job, _ = imported(
            client, django_capture_on_commit_callbacks, kind="annotations", corpus="ward", file=upload, annotator="rita"
        )
        assert job.status == JobStatus.DONE, job.problems
    assert (job.created_count, job.unchanged_count) == (0, 1)
    assert list(corpus.notes.get().annotations.values_list("annotator_name", flat=True)) == ["rita"]


def test_annotations_need_an_existing_corpus(client, researcher, sent):
    client.force_login(researcher)
    upload = SimpleUploadedFile("a.jsonl", jsonl({"note_id": "a", "task": "heart rate", "label": "x", "evidence": []}))
    response = client.post(reverse("corpus:upload"), {"kind": "annotations", "corpus": "missing", "file": upload})
    assert response.status_code == 200
    assert "No such corpus" in response.content.decode()
    assert not ImportJob.objects.exists() and sent == []


def test_a_broken_zip_is_reported(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("case1.txt", "Febbre 39 C.")
    job, html = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="z",
        language="en",
        file=SimpleUploadedFile("x.zip", buffer.getvalue()[:-30]),
    )
    assert job.status == JobStatus.FAILED
    assert "x.zip: not a valid zip archive (truncated or corrupt)" in html
    assert not Corpus.objects.exists()


def test_a_file_named_zip_that_is_not_one_is_reported(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    job, html = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="z",
        language="en",
        file=SimpleUploadedFile("x.zip", b"not a zip"),
    )
    assert job.status == JobStatus.FAILED
    assert "x.zip: unsupported format; it is named .zip but holds plain text" in html
    assert not Corpus.objects.exists()


def test_the_import_page_polls_until_the_job_ends(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    post(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("n.jsonl", jsonl({"id": "a", "text": "x"})),
    )
    job = ImportJob.objects.get()
    url = reverse("corpus:import_detail", args=[job.pk])
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, phase="writing", records_done=1200, records_total=5000, heartbeat=timezone.now()
    )
    fragment = client.get(url, headers={"HX-Request": "true"})
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "hx-get" in html and "<html" not in html
    assert "Writing" in html and "1200 of 5000" in html and "Cancel import" in html
    run_import(job.pk)  # a running job held by a live worker: the task does nothing
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.RUNNING
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, created_count=1)
    assert client.get(url, headers={"HX-Request": "true"}).status_code == 286  # htmx stops polling


def test_a_job_whose_worker_was_lost_shows_stalled_and_can_be_resumed(
    client, researcher, sent, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    post(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("n.jsonl", jsonl({"id": "a", "text": "x"})),
    )
    job = ImportJob.objects.get()
    lost_at = timezone.now() - timedelta(minutes=5)
    ImportJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, phase="writing", heartbeat=lost_at, started=lost_at, attempts=1
    )
    html = client.get(reverse("corpus:import_detail", args=[job.pk])).content.decode()
    assert f"stalled: worker lost at {timezone.localtime(lost_at):%H:%M}" in html and "Resume import" in html
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("corpus:import_resume", args=[job.pk]))
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.QUEUED and sent == [(TASK, job.pk)]
    run_import(job.pk)  # imports again from the stored upload
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.attempts == 2 and Note.objects.count() == 1


def test_a_queued_import_can_be_cancelled_and_its_upload_is_removed(
    client, researcher, sent, data_dir, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    post(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("n.jsonl", jsonl({"id": "a", "text": "x"})),
    )
    job = ImportJob.objects.get()
    response = client.post(reverse("corpus:import_cancel", args=[job.pk]), follow=True)
    assert "Import cancelled" in response.content.decode()
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.upload == "" and not any((data_dir / "uploads").iterdir())
    run_import(job.pk)  # its message finds nothing to do
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.CANCELLED and not Note.objects.exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, object_id=str(job.pk)).exists()


def test_the_imports_list_is_reachable_from_the_import_page(
    client, researcher, sent, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    post(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="it",
        file=SimpleUploadedFile("visits.jsonl", jsonl({"id": "a", "text": "x"})),
    )
    job = ImportJob.objects.get()
    page = client.get(reverse("corpus:upload")).content.decode()
    assert reverse("corpus:import_list") in page and "visits.jsonl" in page
    listing = client.get(reverse("corpus:import_list")).content.decode()
    assert reverse("corpus:import_detail", args=[job.pk]) in listing and "Queued" in listing


@pytest.mark.parametrize("name", ["corpus:import_list", "corpus:upload"])
def test_a_clinician_may_not_see_imports(client, clinician, name):
    client.force_login(clinician)
    assert client.get(reverse(name)).status_code == 403


def test_a_clinician_may_not_open_or_cancel_an_import(client, clinician, researcher):
    job = ImportJob.objects.create(
        project=default_project(), kind="notes", corpus_name="ed", file_name="n.jsonl", created_by=researcher
    )
    client.force_login(clinician)
    assert client.get(reverse("corpus:import_detail", args=[job.pk])).status_code == 403
    assert client.post(reverse("corpus:import_cancel", args=[job.pk])).status_code == 403
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.QUEUED


def test_a_stored_upload_outside_the_uploads_folder_is_never_read(data_dir):
    report = uploads.import_stored(
        "../../etc/passwd", project=None, kind="notes", corpus="x", language="en", update=False, actor=None
    )
    assert not report.ok and "no longer stored" in report.problem_lines()[0]


# --- the language of a new corpus ------------------------------------------------------------


def test_a_new_corpus_without_a_language_is_refused_beside_the_field(client, researcher, sent):
    client.force_login(researcher)
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}))
    response = client.post(reverse("corpus:upload"), {"kind": "notes", "corpus": "new ward", "file": upload})
    assert response.status_code == 200
    form = response.context["form"]
    assert form.errors == {"language": ["This corpus does not exist yet: choose its language to create it."]}
    html = response.content.decode()
    assert "This corpus does not exist yet: choose its language to create it." in html and "--create" not in html
    assert not ImportJob.objects.exists() and sent == [] and not Corpus.objects.exists()


def test_the_language_is_chosen_from_the_supported_codes(client, researcher, sent):
    client.force_login(researcher)
    html = client.get(reverse("corpus:upload")).content.decode()
    for code, name in (("it", "Italian"), ("en", "English"), ("es", "Spanish")):
        assert f'<option value="{code}">{name} ({code})</option>' in html
    assert "Keep the corpus&#x27;s language" in html
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "PA 90/60"}))
    response = client.post(
        reverse("corpus:upload"), {"kind": "notes", "corpus": "ed", "language": "english", "file": upload}
    )
    assert response.status_code == 200 and "language" in response.context["form"].errors
    assert not ImportJob.objects.exists() and sent == [] and not Corpus.objects.exists()


def test_en_creates_the_corpus_in_english(client, researcher, sent, django_capture_on_commit_callbacks):
    client.force_login(researcher)
    job, _ = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ed",
        language="en",
        file=SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "BP 90/60"})),
    )
    assert job.status == JobStatus.DONE and job.language == "en"
    assert Corpus.objects.get(name="ed").language == "en"


def test_an_existing_corpus_imports_without_a_language_choice(
    client, researcher, sent, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    job, _ = imported(
        client,
        django_capture_on_commit_callbacks,
        kind="notes",
        corpus="ward",
        language="",
        file=SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "HR 130"})),
    )
    assert job.status == JobStatus.DONE and job.created_count == 1 and job.language == ""
    assert corpus.notes.get().text == "HR 130" and Corpus.objects.get().language == "en"


def test_an_existing_corpus_refuses_another_language_in_the_form(client, researcher, sent):
    client.force_login(researcher)
    Corpus.objects.create(project=default_project(), name="ward", language="en")
    upload = SimpleUploadedFile("notes.jsonl", jsonl({"id": "a", "text": "HR 130"}))
    response = client.post(
        reverse("corpus:upload"), {"kind": "notes", "corpus": "ward", "language": "it", "file": upload}
    )
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "language": ["This corpus is in English (en): keep the corpus's language."]
    }
    assert not ImportJob.objects.exists() and sent == []
