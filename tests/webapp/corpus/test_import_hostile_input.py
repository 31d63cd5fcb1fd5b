"""Hostile and oversized input, each case both ways: on the command line (call_command:
a CommandError that names the file, the line and the reason) and through the Import page (the
upload answers with a redirect, the import task runs in-process and ends failed with the same
problem line on its page). Either way: no traceback, no 500, nothing written, and neither the
note text nor a metadata value in a message or a log.

What is accepted with a warning (a byte order mark, fields besides id/text/metadata, overlapping
evidence, a plain file named .gz, brat relations) shows the warning in the command's output and
on the import's page. A database error that slips past the validation is reported by its line
and its type only.
"""

import bz2
import gzip
import html
import io
import json
import os
import stat
import subprocess
import sys
import unicodedata
import zipfile
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse

from tests.webapp.corpus.conftest import postgres_only
from webapp.audit.models import AuditEvent
from webapp.corpus import importing
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.lib import validators
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from workers.imports import run_import

SECRET = "Mario Rossi"  # in texts and metadata values; never in a message or a log
TEXT = f"{SECRET}, portatore di pacemaker."
PM = [TEXT.index("pacemaker"), TEXT.index("pacemaker") + 9]  # its span


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    return settings.DATA_DIR


@pytest.fixture(autouse=True)
def quiet_queue(monkeypatch):
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


@pytest.fixture
def ward(corpus, tasks):
    for external_id in ("n1", "n2", "n3"):
        Note.objects.create(corpus=corpus, external_id=external_id, text=TEXT)
    return corpus


def written() -> dict:
    """What an import writes: rows, and the audit entries of imports done (not of refusals or launches)."""
    return {
        **{model.__name__: model.objects.count() for model in (Corpus, Note, Annotation, Task)},
        "imports audited": AuditEvent.objects.filter(action__in=["import_notes", "import_annotations"]).count(),
    }


# --- files --------------------------------------------------------------------------------------


def jsonl(*rows) -> bytes:
    return b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in rows)


def note(i, **fields):
    return {"id": f"n{i + 10}", "text": f"{TEXT} {i}", **fields}


def notes(*middle) -> bytes:
    """A notes file whose line 2 (and on) is the case, between good lines."""
    return jsonl(note(1), *middle, note(99))


def gold(*middle) -> bytes:
    good = {"note_id": "n1", "task": "presence-of-pacemaker", "label": "y", "evidence": [PM]}
    return jsonl(good, *middle, {**good, "note_id": "n3"})


def zipped(files: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return buffer.getvalue()


def brat_zip(ann: str) -> bytes:
    return zipped({"doc1.txt": TEXT, "doc1.ann": ann})


def utf8_flagged_zip(in_central_directory: bool) -> bytes:
    """A brat zip whose member names are flagged UTF-8 but hold a byte that is not (0xe9 0xe9):
    in the local headers only, or in the central directory too."""
    data = zipped({"doc\xe9.txt": TEXT, "doc\xe9.ann": ""})
    return data.replace("doc\xe9".encode(), b"doc\xe9\xe9", 4 if in_central_directory else 1)


def brat_relation(relation: str) -> bytes:
    return brat_zip(f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\n{relation}\n")


def zip_with_symlink(name: str, target: str) -> bytes:
    """A brat zip whose `name` entry is a symbolic link to `target` (as Info-ZIP stores one)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("doc1.txt", TEXT)
        zf.writestr("doc1.ann", "")
        link = zipfile.ZipInfo(name)
        link.create_system = 3  # Unix: the mode lies in the high bits of external_attr
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, target)
    return buffer.getvalue()


CAFE_NFC, CAFE_NFD = unicodedata.normalize("NFC", "café-1"), unicodedata.normalize("NFD", "café-1")

LONG_ID = "R" + SECRET.replace(" ", "_") * 10_000
LATIN1_LINE = f'{{"id": "n3", "text": "{SECRET} caf\xe9"}}'.encode("latin-1")
GOLD_LATIN1_LINE = b'{"note_id": "n2", "task": "caf\xe9"}'
CONTROL_IN_JSON = f'{{"id": "n2", "text": "{SECRET}\x07"}}'.encode()  # a raw BEL inside a JSON string
LONG_LINE = json.dumps({"id": "n2", "text": SECRET + "a" * 3_000_000}).encode()


@dataclass
class Case:
    kind: str  # "notes" or "annotations"
    name: str
    body: bytes
    expected: str  # the whole problem line: file, line, reason
    settings: dict = field(default_factory=dict)


CASES = {
    # compression, told by content
    "a truncated gzip file": Case(
        "notes",
        "notes.jsonl.gz",
        gzip.compress(notes(note(2)))[:-10],
        "notes.jsonl.gz line 3: the gzip data is broken (truncated or corrupt) after line 2; nothing after it was read",
    ),
    "a corrupt bz2 file": Case(
        "notes",
        "notes.jsonl.bz2",
        b"BZh91AY&SY" + b"\x00" * 40,
        "notes.jsonl.bz2 line 1: the bz2 data is broken (truncated or corrupt) at its start",
    ),
    "a zstd file": Case(
        "notes",
        "notes.jsonl.zst",
        b"\x28\xb5\x2f\xfd" + b"\x00" * 20,
        "notes.jsonl.zst: is zstd-compressed, which is not supported; use gzip, bz2 or xz",
    ),
    "a compressed file that unpacks too large": Case(
        "notes",
        "notes.jsonl.gz",
        gzip.compress(notes(*(note(i) for i in range(2, 200)))),
        "notes.jsonl.gz line 16: the gzip data unpacks to more than 1,000 bytes, the limit (IMPORT_MAX_UNPACKED_BYTES)",
        {"IMPORT_MAX_UNPACKED_BYTES": 1000},
    ),
    "a zip member over the file limit": Case(
        "notes",
        "cases.zip",
        brat_zip("\n" * 2000),
        "cases.zip: entry 'doc1.ann' has 2,000 bytes, more than the 1,000 one file may have "
        "(IMPORT_MAX_FILE_BYTES); it was not read",
        {"IMPORT_MAX_FILE_BYTES": 1000},
    ),
    "a broken zip of brat files": Case(
        "notes", "cases.zip", brat_zip("")[:-30], "cases.zip: not a valid zip archive (truncated or corrupt)"
    ),
    "a zip of a JSONL file": Case(
        "notes",
        "notes.zip",
        zipped({"notes.jsonl": notes()}),
        "notes.zip: the archive holds no brat files (.txt and .ann); a JSONL or CSV file "
        "may be compressed with gzip, bz2 or xz instead",
    ),
    "a zip of gold labels": Case(
        "annotations",
        "gold.zip",
        zipped({"gold.jsonl": gold()}),
        "gold.zip: is a zip archive: only the files of a folder format (brat, XMI) can come in a zip",
    ),
    # metadata, validated whole
    "a NUL in metadata": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, metadata={"patient": SECRET + "\x00"})),
        'notes.jsonl line 2: metadata["patient"] contains a NUL character (\\u0000) at offset 11',
    ),
    "a NUL in a top-level field": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, mrn=f"{SECRET}\x00")),
        'notes.jsonl line 2: metadata["mrn"] contains a NUL character (\\u0000) at offset 11',
    ),
    "a control character in metadata": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, metadata={"ward": [SECRET + "\x1b"]})),
        'notes.jsonl line 2: metadata["ward"][0] contains the control character U+001B at offset 11',
    ),
    "NaN in metadata": Case(
        "notes",
        "notes.jsonl",
        notes(b'{"id": "n2", "text": "x", "metadata": {"score": NaN}}'),
        'notes.jsonl line 2: metadata["score"] is NaN or Infinity, which JSON does not allow',
    ),
    "metadata too large": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, metadata={"ward": SECRET * 20})),
        "notes.jsonl line 2: field 'metadata' has 231 bytes; the limit is 200 bytes (IMPORT_MAX_METADATA_BYTES)",
        {"IMPORT_MAX_METADATA_BYTES": 200},
    ),
    "a control character in a CSV column": Case(
        "notes",
        "notes.csv",
        f'id,text,ward\n1,"{TEXT}",A\n2,"{TEXT}",B\x01\n'.encode(),
        'notes.csv line 3: metadata["ward"] contains the control character U+0001 at offset 1',
    ),
    # encodings
    "Latin-1 text": Case(
        "notes",
        "notes.jsonl",
        notes(note(2), LATIN1_LINE),
        f"notes.jsonl line 3: not UTF-8 (byte 0xe9 at column {LATIN1_LINE.index(0xE9) + 1}); save the file as UTF-8",
    ),
    "a Latin-1 CSV": Case(
        "notes",
        "notes.csv",
        f'id,text\n1,"{TEXT}"\n2,{SECRET} caf\xe9\n'.encode("latin-1"),
        "notes.csv line 3: not UTF-8 (byte 0xe9 at column 18); save the file as UTF-8",
    ),
    "UTF-16 text": Case(
        "notes",
        "notes.jsonl",
        notes().decode().encode("utf-16"),
        "notes.jsonl line 1: the file is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8",
    ),
    "gold labels not in UTF-8": Case(
        "annotations",
        "gold.jsonl",
        gold(GOLD_LATIN1_LINE),
        f"gold.jsonl line 2: not UTF-8 (byte 0xe9 at column "
        f"{GOLD_LATIN1_LINE.index(0xE9) + 1}); save the file as UTF-8",
    ),
    # JSON
    "a raw control character in a JSON string": Case(
        "notes",
        "notes.jsonl",
        notes(CONTROL_IN_JSON),
        f"notes.jsonl line 2: invalid JSON: Invalid control character at column {CONTROL_IN_JSON.index(7) + 1}",
    ),
    "an unknown field in gold labels": Case(
        "annotations",
        "gold.jsonl",
        gold({"note_id": "n2", "task": "heart rate", "label": "unknown", "comment": SECRET}),
        "gold.jsonl line 2: unknown field(s) comment (allowed: note_id, task, label, evidence)",
    ),
    # brat
    "a garbage line in a brat .ann file": Case(
        "notes",
        "cases.zip",
        brat_zip(f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\nPaziente {SECRET}\n"),
        "doc1.ann line 2: not a brat annotation line (a line starts with T, R, "
        "E, A, M, N, # or * and an id, then a tab)",
    ),
    "a brat relation to a missing entity": Case(
        "notes",
        "cases.zip",
        brat_zip(f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\nR1\tNear Arg1:T1 Arg2:T2\n"),
        "doc1.ann line 2: relation 'R1' refers to 'T2', which the file does not define",
    ),
    # limits
    "a note over IMPORT_MAX_NOTE_CHARS": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, text=SECRET + "a" * 199_990)),
        "notes.jsonl line 2: note 'n12' has 200,001 characters; the limit is "
        "200,000 characters (IMPORT_MAX_NOTE_CHARS)",
    ),
    "a line far too long for any note": Case(
        "notes",
        "notes.jsonl",
        notes(LONG_LINE),
        f"notes.jsonl line 2: the line has {len(LONG_LINE) + 1:,} bytes or more, "
        "more than a note of 200,000 characters (IMPORT_MAX_NOTE_CHARS) and its "
        "metadata can take",
    ),
    "a file of too many lines": Case(
        "notes",
        "notes.jsonl",
        notes(note(2), note(3)),
        "notes.jsonl line 4: the file has more than 3 lines, the limit (IMPORT_MAX_LINES); nothing after it was read",
        {"IMPORT_MAX_LINES": 3},
    ),
    "too many evidence spans": Case(
        "annotations",
        "gold.jsonl",
        gold({"note_id": "n2", "task": "heart rate", "label": "unknown", "evidence": [[i, i + 1] for i in range(101)]}),
        "gold.jsonl line 2: field 'evidence' has 101 spans; the limit is 100 spans (IMPORT_MAX_EVIDENCE_SPANS)",
    ),
    "a brat entity of too many fragments": Case(
        "notes",
        "cases.zip",
        brat_zip(f"T1\tDevice {PM[0]} {PM[0] + 4};{PM[0] + 4} {PM[1]}\tpace maker\n"),
        "doc1.ann line 1: entity 'T1' has 2 fragments; the limit is 1 fragments (IMPORT_MAX_EVIDENCE_SPANS)",
        {"IMPORT_MAX_EVIDENCE_SPANS": 1},
    ),
    # the unpacked limit inside a line too long; ids, tasks and labels; brat; CSV rows
    "a bz2 line too long that unpacks past the limit": Case(
        "notes",
        "notes.jsonl.bz2",
        bz2.compress(jsonl(note(1)) + b"a" * 20_000_000),  # 52 bytes, no line end
        "notes.jsonl.bz2 line 2: the bz2 data unpacks to more than 3,000,000 bytes, the limit "
        "(IMPORT_MAX_UNPACKED_BYTES)",
        {"IMPORT_MAX_UNPACKED_BYTES": 3_000_000},
    ),
    "an unpaired surrogate in an id": Case(
        "notes",
        "notes.jsonl",
        notes(b'{"id": "\\ud800", "text": "x"}'),
        "notes.jsonl line 2: field 'id' contains an unpaired surrogate U+D800 at offset 0",
    ),
    "a bidi control in an id": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, id="n\u202e2")),
        "notes.jsonl line 2: field 'id' contains the invisible format character U+202E at offset 1",
    ),
    "a byte order mark inside an id": Case(
        "notes",
        "notes.jsonl",
        notes(note(2, id="n2\ufeff")),
        "notes.jsonl line 2: field 'id' contains the invisible format character U+FEFF at offset 2",
    ),
    "an unpaired surrogate in a note_id": Case(
        "annotations",
        "gold.jsonl",
        gold(b'{"note_id": "\\ud800", "task": "heart rate", "label": "unknown"}'),
        "gold.jsonl line 2: field 'note_id' contains an unpaired surrogate U+D800 at offset 0",
    ),
    "a zero-width space in a task": Case(
        "annotations",
        "gold.jsonl",
        gold({"note_id": "n2", "task": "heart\u200b rate", "label": "unknown"}),
        "gold.jsonl line 2: field 'task' contains the invisible format character U+200B at offset 5",
    ),
    "an unpaired surrogate in a label": Case(
        "annotations",
        "gold.jsonl",
        gold(b'{"note_id": "n2", "task": "heart rate", "label": "\\udc00"}'),
        "gold.jsonl line 2: field 'label' contains an unpaired surrogate U+DC00 at offset 0",
    ),
    "a line separator in a label": Case(
        "annotations",
        "gold.jsonl",
        gold({"note_id": "n2", "task": "heart rate", "label": "unknown\u2028"}),
        "gold.jsonl line 2: field 'label' contains the line separator U+2028 at offset 7",
    ),
    "a brat offset of 5,000 digits": Case(
        "notes",
        "cases.zip",
        brat_zip(f"T1\tDevice 1 {'9' * 5000}\tpacemaker\n"),
        "doc1.ann line 1: entity 'T1': offsets must be integer pairs 'start end' "
        "separated by ';', each of at most 18 digits",
    ),
    "a NUL in a brat id": Case(
        "notes",
        "cases.zip",
        brat_relation("R\x001\tNear Arg1:T1 Arg2:T\x009"),
        "doc1.ann line 2: relation 'R\\x001' refers to 'T\\x009', which the file does not define",
    ),
    "a brat id of 110,000 characters": Case(
        "notes",
        "cases.zip",
        brat_relation(f"{LONG_ID}\tNear Arg1:T1 Arg2:T9"),
        f"doc1.ann line 2: relation '{LONG_ID[:40]}…' refers to 'T9', which the file does not define",
    ),
    "a gzip .ann in a brat zip": Case(
        "notes",
        "cases.zip",
        zipped({"doc1.txt": TEXT, "doc1.ann": gzip.compress(f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\n".encode())}),
        "doc1.ann: is gzip-compressed; the .txt and .ann files of brat notes must be plain UTF-8 text",
    ),
    "a bz2 .txt in a brat zip": Case(
        "notes",
        "cases.zip",
        zipped({"doc1.txt": bz2.compress(TEXT.encode()), "doc1.ann": ""}),
        "doc1.txt: is bz2-compressed; the .txt and .ann files of brat notes must be plain UTF-8 text",
    ),
    "a zip whose names are flagged UTF-8 but are not": Case(
        "notes", "cases.zip", utf8_flagged_zip(True), "cases.zip: not a valid zip archive (truncated or corrupt)"
    ),
    "a zip whose local names are flagged UTF-8 but are not": Case(
        "notes", "cases.zip", utf8_flagged_zip(False), "cases.zip: not a valid zip archive (truncated or corrupt)"
    ),
    "a CSV row of many quoted lines": Case(
        "notes",
        "notes.csv",
        b"id,text\n1,x\n2," + b",".join([b'"y\n"'] * 30_000) + b"\n",
        "notes.csv line 3: the CSV row starting here has more than 69,536 characters, more than a note of 1,000 "
        "characters (IMPORT_MAX_NOTE_CHARS) and its metadata can take (is a quote left open?); nothing after it was "
        "read",
        {"IMPORT_MAX_NOTE_CHARS": 1000, "IMPORT_MAX_METADATA_BYTES": 1000},
    ),
    "a CSV header of too many columns": Case(
        "notes",
        "notes.csv",
        ("id,text," + ",".join(f"c{i}" for i in range(1000)) + "\n").encode(),
        "notes.csv line 1: the CSV header has 1,002 columns; the limit is 1,000 columns (MAX_CSV_COLUMNS in "
        "webapp/lib/formats/csvfile.py)",
    ),
    "a CSV without a header": Case(
        "notes",
        "notes.csv",
        f'n1,"{TEXT}"\nn2,"{TEXT}"\n'.encode(),
        "notes.csv line 1: the first line must be a header naming the columns id and text "
        "(missing: id, text; it has 2 column(s))",
    ),
    "both Unicode forms of one id (JSONL)": Case(
        "notes",
        "notes.jsonl",
        notes({"id": CAFE_NFC, "text": TEXT}, {"id": CAFE_NFD, "text": TEXT}),
        f"notes.jsonl line 3: duplicate id {CAFE_NFC!r} (first on line 2; ids are compared in Unicode NFC form)",
    ),
    "both Unicode forms of one id (CSV)": Case(
        "notes",
        "notes.csv",
        f"id,text\n{CAFE_NFD},x\n{CAFE_NFC},y\n".encode(),
        f"notes.csv line 3: duplicate id {CAFE_NFC!r} (first on line 2; ids are compared in Unicode NFC form)",
    ),
    "both Unicode forms of one id (brat files in a zip)": Case(
        "notes",
        "cases.zip",
        zipped({f"{CAFE_NFD}.txt": TEXT, f"{CAFE_NFD}.ann": "", f"{CAFE_NFC}.txt": TEXT, f"{CAFE_NFC}.ann": ""}),
        f"{CAFE_NFC}.txt: names the same document as {CAFE_NFD + '.txt'!r} (one id in two Unicode forms)",
    ),
    "a zip entry leading out of its folder": Case(
        "notes",
        "cases.zip",
        zipped({"doc1.txt": TEXT, "doc1.ann": "", "../doc2.txt": TEXT, "../doc2.ann": ""}),
        "cases.zip: entry '../doc2.txt' has a path that leads out of the archive (..); refused",
    ),
    "a zip entry with an absolute path": Case(
        "notes",
        "cases.zip",
        zipped({"/tmp/doc2.txt": TEXT, "/tmp/doc2.ann": ""}),
        "cases.zip: entry '/tmp/doc2.txt' has an absolute path; refused",
    ),
    "a zip entry that is a symbolic link": Case(
        "notes",
        "cases.zip",
        zip_with_symlink("doc2.txt", "/etc/passwd"),
        "cases.zip: entry 'doc2.txt' is a symbolic link; refused",
    ),
}


def refused_on_the_command_line(case: Case, tmp_path) -> str:
    path = tmp_path / case.name
    path.write_bytes(case.body)
    before = written()
    with pytest.raises(CommandError) as info:
        call_command(f"import_{case.kind}", str(path), "--corpus", "ward", stdout=StringIO(), stderr=StringIO())
    assert written() == before
    return str(info.value)


def uploaded(client, capture, kind: str, name: str, body: bytes) -> tuple[ImportJob, str]:
    """Upload a file, run the worker's task in-process, return the job and its page."""
    with capture(execute=True):
        response = client.post(
            reverse("corpus:upload"), {"kind": kind, "corpus": "ward", "file": SimpleUploadedFile(name, body)}
        )
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    run_import(job.pk)
    job.refresh_from_db()
    page = client.get(reverse("corpus:import_detail", args=[job.pk]))
    assert page.status_code == 200
    return job, page.content.decode()


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_command_line_refuses_it_with_file_line_and_reason(ward, tmp_path, settings, caplog, case):
    case = CASES[case]
    for name, value in case.settings.items():
        setattr(settings, name, value)
    message = refused_on_the_command_line(case, tmp_path)
    assert message.startswith("nothing imported, 1 problem(s):\n")
    assert message.splitlines()[1] == case.expected
    assert SECRET not in message and SECRET not in caplog.text


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_the_upload_fails_with_the_same_problem_line(
    ward, client, researcher, settings, caplog, django_capture_on_commit_callbacks, case
):
    case = CASES[case]
    for name, value in case.settings.items():
        setattr(settings, name, value)
    client.force_login(researcher)
    before = written()
    job, page = uploaded(client, django_capture_on_commit_callbacks, case.kind, case.name, case.body)
    assert job.status == JobStatus.FAILED and job.problem_count == 1
    assert job.problem_lines == [case.expected]
    assert html.escape(case.expected) in page and "Nothing was imported" in page
    assert written() == before
    assert SECRET not in page and SECRET not in caplog.text


def test_the_message_of_a_control_character_says_at_only_once(ward, tmp_path):
    message = refused_on_the_command_line(CASES["a raw control character in a JSON string"], tmp_path)
    column = CONTROL_IN_JSON.index(7) + 1
    assert f"Invalid control character at column {column}" in message and "at at" not in message


# --- upload size ------------------------------------------------------------------------------


def test_the_upload_form_refuses_a_file_over_the_limit_before_storing_it(ward, client, researcher, settings, data_dir):
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    client.force_login(researcher)
    body = notes()
    response = client.post(
        reverse("corpus:upload"), {"kind": "notes", "corpus": "ward", "file": SimpleUploadedFile("notes.jsonl", body)}
    )
    assert response.status_code == 200
    assert (
        f"notes.jsonl has {len(body):,} bytes; the limit is 100 bytes (IMPORT_MAX_UPLOAD_BYTES)"
        in response.content.decode()
    )
    assert not ImportJob.objects.exists()
    assert not (data_dir / "uploads").exists() or not any((data_dir / "uploads").iterdir())


def test_the_command_line_refuses_a_file_or_a_folder_over_the_upload_limit(ward, tmp_path, settings):
    settings.IMPORT_MAX_UPLOAD_BYTES = 100
    path = tmp_path / "notes.jsonl"
    path.write_bytes(notes())
    before = written()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    assert (
        f"notes.jsonl: the file has {path.stat().st_size:,} bytes; the limit is 100 bytes (IMPORT_MAX_UPLOAD_BYTES)"
    ) in str(info.value)
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "doc1.txt").write_text(TEXT * 3)
    (folder / "doc1.ann").write_text("")
    with pytest.raises(
        CommandError,
        match=r"brat: the folder \(its \.txt and \.ann files\) has 108 bytes; the "
        r"limit is 100 bytes \(IMPORT_MAX_UPLOAD_BYTES\)",
    ):
        call_command("import_notes", str(folder), "--corpus", "ward")
    assert written() == before


@pytest.mark.django_db(transaction=True)
def test_the_command_exits_1_with_the_reason_and_no_traceback(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("the child process reaches the test database by URL")
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(CASES["a truncated gzip file"].body)
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
    }
    manage = Path(__file__).resolve().parents[3] / "manage.py"
    done = subprocess.run(
        [sys.executable, str(manage), "import_notes", str(path), "--corpus", "ward", "--create", "--language", "it"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "CommandError: nothing imported, 1 problem(s):" in done.stderr
    assert CASES["a truncated gzip file"].expected in done.stderr
    assert "Traceback" not in done.stderr + done.stdout and SECRET not in done.stderr + done.stdout
    assert not Corpus.objects.exists()


# --- accepted, with a warning -----------------------------------------------------------------


@dataclass
class Accepted:
    kind: str
    name: str
    body: bytes
    warning: str | tuple[str, ...]  # one or several
    created: int

    @property
    def warnings(self) -> list[str]:
        return [self.warning] if isinstance(self.warning, str) and self.warning else list(self.warning or ())


ACCEPTED = {
    "a UTF-8 byte order mark": Accepted(
        "notes",
        "notes.jsonl",
        b"\xef\xbb\xbf" + notes(),
        "notes.jsonl line 1: the file starts with a UTF-8 byte order mark; it was ignored",
        2,
    ),
    "a plain file named .gz": Accepted(
        "notes", "notes.jsonl.gz", notes(), "notes.jsonl.gz: is named .gz but holds plain text; it was read as such", 2
    ),
    "fields besides id, text and metadata": Accepted(
        "notes",
        "notes.jsonl",
        jsonl(note(1, ward="A"), note(2), note(3, mrn="123", ward="B")),
        "notes.jsonl line 1: 2 line(s), this one first, have fields besides id, text, metadata and spans (mrn, "
        "ward); they were kept in each note's metadata",
        3,
    ),
    "overlapping evidence spans": Accepted(
        "annotations",
        "gold.jsonl",
        gold({"note_id": "n2", "task": "presence-of-pacemaker", "label": "y", "evidence": [PM, [0, PM[0] + 3]]}),
        f"gold.jsonl line 2: evidence spans [0, {PM[0] + 3}) and [{PM[0]}, {PM[1]}) overlap; imported as given",
        3,
    ),
    "brat relations and notes": Accepted(
        "notes",
        "cases.zip",
        brat_zip(
            f"T1\tDevice {PM[0]} {PM[1]}\tpacemaker\nA1\tNegation T1\n#1\tAnnotatorNotes T1\tx\n"
            "N1\tReference T1 Wikidata:Q372195\tpacemaker\n#2\tNote T1\tcheck\n"
        ),
        (
            "cases.zip: 2 relation, event, normalization, equivalence or note line(s) in 1 .ann file(s) were "
            "checked but not imported (only entities are, with their attributes)",
            "cases.zip: 1 span(s) of 1 document(s) are not gold labels yet: import the same file as gold labels "
            "from brat standoff, mapping its labels to tasks, once the notes are in",
        ),
        1,
    ),
    "a note longer than the model's context, within the limit": Accepted(
        "notes", "notes.jsonl", notes(note(2, text=SECRET + " FC 80." * 28_568)), "", 3
    ),  # ~50,000 tokens
}


@pytest.mark.parametrize("case", ACCEPTED, ids=list(ACCEPTED))
def test_the_command_line_accepts_it_and_prints_the_warning(ward, tmp_path, case):
    case = ACCEPTED[case]
    path = tmp_path / case.name
    path.write_bytes(case.body)
    out, err = StringIO(), StringIO()
    call_command(f"import_{case.kind}", str(path), "--corpus", "ward", stdout=out, stderr=err)
    assert f"{case.created} created" in out.getvalue()
    assert err.getvalue() == "".join(f"warning: {warning}\n" for warning in case.warnings)


@pytest.mark.parametrize("case", ACCEPTED, ids=list(ACCEPTED))
def test_the_import_page_shows_the_warning(ward, client, researcher, django_capture_on_commit_callbacks, case):
    case = ACCEPTED[case]
    client.force_login(researcher)
    job, page = uploaded(client, django_capture_on_commit_callbacks, case.kind, case.name, case.body)
    assert job.status == JobStatus.DONE and job.created_count == case.created and job.problem_count == 0
    assert job.problem_lines == case.warnings
    assert all(html.escape(w) in page for w in case.warnings) and ("Warnings" in page) == bool(case.warnings)
    listing = client.get(reverse("corpus:import_list")).content.decode()
    assert ("(with warnings)" in listing) == bool(case.warnings)


def test_the_longest_note_allowed_is_imported_whole(ward, tmp_path):
    text = (SECRET + " FC 80 bpm. ") * 10_000
    text = text[:200_000]
    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl({"id": "long", "text": text}))
    call_command("import_notes", str(path), "--corpus", "ward", stdout=StringIO())
    assert Note.objects.get(external_id="long").text == text and len(text) == 200_000


# --- the database refuses what the validation let through -------------------------------------


@postgres_only
def test_a_database_error_names_the_line_and_its_type_only(ward, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(validators, "metadata_messages", lambda *args: [])  # as if the validation missed it
    path = tmp_path / "notes.jsonl"
    path.write_bytes(notes(note(2), note(3, metadata={"patient": f"{SECRET}\x00"})))
    before = written()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    assert str(info.value).splitlines()[1] == (
        "notes.jsonl line 3: the database refused this record (DataError); nothing was imported"
    )
    assert written() == before
    assert SECRET not in str(info.value) and SECRET not in caplog.text
    assert "the database refused a record (DataError)" in caplog.text


@postgres_only
def test_a_database_error_fails_the_upload_by_its_line(
    ward, client, researcher, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(validators, "metadata_messages", lambda *args: [])
    client.force_login(researcher)
    before = written()
    job, page = uploaded(
        client,
        django_capture_on_commit_callbacks,
        "notes",
        "notes.jsonl",
        notes(note(2, metadata={"patient": f"{SECRET}\x00"})),
    )
    assert job.status == JobStatus.FAILED
    assert job.problem_lines == [
        "notes.jsonl line 2: the database refused this record (DataError); nothing was imported"
    ]
    assert "the database refused this record (DataError)" in page
    assert written() == before
    assert SECRET not in page and SECRET not in caplog.text


@postgres_only
def test_a_trigger_refusing_an_annotation_names_its_line(ward, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(importing, "label_messages", lambda *args: [])  # the trigger checks labels too
    path = tmp_path / "gold.jsonl"
    path.write_bytes(gold({"note_id": "n2", "task": "presence-of-pacemaker", "label": SECRET}))
    before = written()
    with pytest.raises(CommandError) as info:
        call_command("import_annotations", str(path), "--corpus", "ward")
    assert str(info.value).splitlines()[1] == (
        "gold.jsonl line 2: the database refused this record (IntegrityError); nothing was imported"
    )
    assert written() == before
    assert SECRET not in str(info.value) and SECRET not in caplog.text


@postgres_only
def test_a_refused_update_names_the_lines_of_its_batch(ward, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(validators, "metadata_messages", lambda *args: [])
    path = tmp_path / "notes.jsonl"
    path.write_bytes(
        jsonl(
            {"id": "n1", "text": TEXT, "metadata": {"a": f"{SECRET}\x00"}},
            {"id": "n2", "text": TEXT, "metadata": {"a": "ok"}},
        )
    )
    before = written()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward", "--update")
    assert str(info.value).splitlines()[1] == (
        "notes.jsonl line 1: the database refused one of the 2 records of "
        "lines 1 to 2 (DataError); nothing was imported"
    )
    assert written() == before
    assert Note.objects.get(external_id="n1").metadata == {}
    assert SECRET not in str(info.value) and SECRET not in caplog.text


def test_ids_and_labels_are_kept_in_nfc_and_found_in_either_form(ward, tmp_path):
    Task.objects.create(slug="fever", description="fever", options=[unicodedata.normalize("NFC", "sì"), "no"])
    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl({"id": CAFE_NFD, "text": TEXT}))
    call_command("import_notes", str(path), "--corpus", "ward", stdout=StringIO())
    assert Note.objects.filter(corpus=ward, external_id=CAFE_NFC).count() == 1
    path = tmp_path / "gold.jsonl"
    path.write_bytes(jsonl({"note_id": CAFE_NFD, "task": "fever", "label": unicodedata.normalize("NFD", "sì")}))
    call_command("import_annotations", str(path), "--corpus", "ward", stdout=StringIO())
    [annotation] = Annotation.objects.filter(note__external_id=CAFE_NFC)
    assert annotation.label == unicodedata.normalize("NFC", "sì")
