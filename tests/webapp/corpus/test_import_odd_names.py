"""Names from outside the file's lines: brat file names, corpus names, upload
names, and what reaches the audit log of a refused import. Each is refused (or stored) with a
clear message: no traceback, no 500, nothing written, and no row content in a message, an
audit entry or a log."""

import gzip
import io
import os
import zipfile
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from tests.webapp.corpus.test_import_hostile_input import PM, TEXT, jsonl, notes, written
from webapp.audit.models import AuditEvent
from webapp.corpus import uploads
from webapp.corpus.models import ImportJob, Note
from webapp.lib.problems import Problems
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

MRN = "Rossi_MRN12345"
LONG_NAME = "é" * 200 + ".jsonl"  # 400 bytes in UTF-8: more than a file name may have


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


@pytest.fixture(autouse=True)
def quiet_queue(monkeypatch):
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


@pytest.fixture
def ward(corpus, tasks):
    Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    return corpus


def refused(*args) -> list[str]:
    """The problem lines of an import command that must fail, and nothing written."""
    before = written()
    with pytest.raises(CommandError) as info:
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    assert written() == before
    lines = str(info.value).splitlines()
    assert lines[0].startswith("nothing imported,")
    return lines[1:]


def upload(client, capture, name: str, body: bytes, corpus: str = "ward", kind: str = "notes"):
    with capture(execute=True):
        return client.post(
            reverse("corpus:upload"), {"kind": kind, "corpus": corpus, "file": SimpleUploadedFile(name, body)}
        )


# --- brat file names ----------------------------------------------------------------------------


def test_a_brat_file_name_not_in_utf8_is_refused_with_its_byte(ward, tmp_path, caplog):
    folder = tmp_path / "brat"
    folder.mkdir()
    stem = os.fsdecode(b"Mario_\xe9")  # the bytes of a Latin-1 name, as Python reads them
    (folder / f"{stem}.txt").write_text(TEXT)
    (folder / f"{stem}.ann").write_text(f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\n")
    (folder / "doc2.txt").write_text(TEXT)
    (folder / "doc2.ann").write_text("")
    assert refused("import_notes", str(folder), "--corpus", "ward") == [
        "Mario_\\udce9.txt: the file name is not UTF-8 (byte 0xe9); rename the file",
        "Mario_\\udce9.ann: the file name is not UTF-8 (byte 0xe9); rename the file",
    ]
    assert "Traceback" not in caplog.text
    reasons = AuditEvent.objects.get(action="import_refused").details["reasons"]
    assert reasons == ["the file name is not UTF-8"]


def test_a_brat_file_name_with_a_control_character_is_refused(
    ward, client, researcher, django_capture_on_commit_callbacks
):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:  # a name not flagged UTF-8 is read as cp437: 0x01 stays U+0001
        zf.writestr("doc\x01.txt", TEXT)
        zf.writestr("doc\x01.ann", "")
    client.force_login(researcher)
    before = written()
    upload(client, django_capture_on_commit_callbacks, "cases.zip", buffer.getvalue())
    job = ImportJob.objects.get()
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.problem_lines == [
        "doc\\x01.txt: the file name (the note's id) contains the control character U+0001 at offset 3; "
        "rename the file",
        "doc\\x01.ann: the file name (the note's id) contains the control character U+0001 at offset 3; "
        "rename the file",
    ]
    assert written() == before


# --- corpus names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, hidden, audited",
    [
        (
            os.fsdecode(b"ward\xe9"),
            "an unpaired surrogate U+DCE9 at offset 4",
            "ward\\udce9",
        ),  # an argument not in UTF-8
        ("ward\u202e", "the invisible format character U+202E at offset 4", "ward\\u202e"),
        ("ward\x00", "the control character U+0000 at offset 4", "ward\\x00"),
    ],
)
@pytest.mark.parametrize("kind", ["notes", "annotations"])
def test_a_corpus_name_with_hidden_characters_is_refused_on_the_command_line(
    ward, tmp_path, name, hidden, audited, kind
):
    path = tmp_path / "in.jsonl"
    path.write_bytes(notes() if kind == "notes" else jsonl({"note_id": "n1", "task": "heart rate", "label": "unknown"}))
    extra = ["--create", "--language", "it"] if kind == "notes" else []
    assert refused(f"import_{kind}", str(path), "--corpus", name, *extra) == [
        f"in.jsonl: the corpus name contains {hidden}"
    ]
    refusal = AuditEvent.objects.get(action="import_refused")
    assert refusal.details["corpus"] == audited
    assert refusal.details["reasons"] == [" ".join(f"the corpus name contains {hidden}".split()[:7])]


def test_the_upload_form_refuses_a_corpus_name_with_an_invisible_character(ward, client, researcher, data_dir):
    client.force_login(researcher)
    response = client.post(
        reverse("corpus:upload"),
        {"kind": "notes", "corpus": "ward\u200b", "language": "it", "file": SimpleUploadedFile("notes.jsonl", notes())},
    )
    assert response.status_code == 200
    assert "The name contains the invisible format character U+200B at offset 4." in response.content.decode()
    assert not ImportJob.objects.exists()


# --- upload names -------------------------------------------------------------------------------


def test_an_upload_name_too_long_for_the_disk_is_stored_under_a_short_one(
    ward, client, researcher, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    response = upload(client, django_capture_on_commit_callbacks, LONG_NAME, notes())
    assert response.status_code == 302
    job = ImportJob.objects.get()
    assert job.file_name == LONG_NAME and job.upload.endswith("/upload.jsonl")
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.created_count == 2
    page = client.get(reverse("corpus:import_detail", args=[job.pk])).content.decode()
    assert LONG_NAME in page


def test_a_refused_upload_with_a_long_name_names_the_stored_file(
    ward, client, researcher, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    upload(client, django_capture_on_commit_callbacks, LONG_NAME + ".gz", gzip.compress(notes(b'{"id": "n2"}')))
    job = ImportJob.objects.get()
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.file_name == LONG_NAME + ".gz"
    assert job.problem_lines == ["upload.jsonl.gz line 2: missing field(s) text"]


@pytest.mark.parametrize(
    "name, stored",
    [
        ("notes.jsonl", "notes.jsonl"),
        ("é" * 98 + ".csv", "é" * 98 + ".csv"),  # 200 bytes
        ("é" * 99 + ".csv", "upload.csv"),
        ("é" * 120 + ".jsonl.GZ", "upload.jsonl.gz"),
        ("é" * 200, "upload"),
        ("é" * 200 + ".tar.jsonl.bz2", "upload.jsonl.bz2"),
        (".hidden.jsonl", "upload.jsonl"),
    ],
)
def test_the_stored_name_is_the_name_sent_or_upload_and_its_known_suffixes(name, stored):
    assert uploads.stored_name(name) == stored
    assert len(uploads.stored_name(name).encode()) <= 255


# --- what the audit log and the job keep -------------------------------------------------------


def test_a_refused_brat_import_audits_its_reasons_without_the_ids(ward, tmp_path):
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "doc1.txt").write_text(TEXT)
    (folder / "doc1.ann").write_text(
        f"TMario_Rossi_MRN12345\tDevice {PM[0]} x\tpacemaker\n"
        "RMario_Rossi\tNear Arg1:TMario_Rossi_MRN12345 Arg2:TMario\n"
    )
    problems = refused("import_notes", str(folder), "--corpus", "ward")
    assert problems == [
        "doc1.ann line 1: entity 'TMario_Rossi_MRN12345': offsets must be integer pairs 'start end' separated by "
        "';', each of at most 18 digits",
        "doc1.ann line 2: relation 'RMario_Rossi' refers to 'TMario_Rossi_MRN12345', which the file does not define",
        "doc1.ann line 2: relation 'RMario_Rossi' refers to 'TMario', which the file does not define",
    ]
    reasons = AuditEvent.objects.get(action="import_refused").details["reasons"]
    assert reasons == ["entity …", "relation … refers to …, which the"]
    assert "Mario" not in str(reasons)


def test_a_nul_in_a_brat_id_reaches_the_job_and_the_audit_log_escaped(
    ward, client, researcher, caplog, django_capture_on_commit_callbacks
):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("doc1.txt", TEXT)
        zf.writestr("doc1.ann", f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\nA\x00{MRN}\tNegation T\x009\n")
    client.force_login(researcher)
    upload(client, django_capture_on_commit_callbacks, "cases.zip", buffer.getvalue())
    job = ImportJob.objects.get()
    run_import(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.problem_count == 1
    assert job.problem_lines == [
        f"doc1.ann line 2: attribute 'A\\x00{MRN}' refers to 'T\\x009', which the file does not define"
    ]
    assert AuditEvent.objects.get(action="import_refused").details["reasons"] == ["attribute … refers to …, which the"]
    assert "unexpected error" not in (job.error or "") and MRN not in caplog.text


def test_no_problem_line_holds_a_character_that_is_not_printable():
    problems = Problems()
    problems.add("doc\x00.ann", 3, "bad \x00 \ud800 \u202e \n")
    problems.warn("a\u2028b", None, "ok")
    assert [str(p) for p in problems.kept] == ["doc\\x00.ann line 3: bad \\x00 \\ud800 \\u202e \\n"]
    assert [str(p) for p in problems.warnings] == ["a\\u2028b: ok"]
