"""Bad note files: every problem is reported with its line and reason, and nothing is written.

Each case writes a file whose other lines are valid, runs `manage.py import_notes`, and checks
that the command fails, names the line and the reason, never prints note text, and leaves
the database (corpora, notes, annotations, tasks, audit entries) exactly as it was.
"""

import json

import pytest
from django.core.management import CommandError, call_command

from tests.webapp.corpus.conftest import notes, write_jsonl
from webapp.corpus.models import Annotation, Note

SECRET = "Mario Rossi, nato il 3/4/1950"  # note text that must never appear in an error


def good(i):
    return {"id": f"n{i}", "text": f"{SECRET} nota {i}."}


def jsonl(tmp_path, *lines, bom=False):
    return write_jsonl(tmp_path / "notes.jsonl", [good(1), *lines, good(99)], bom=bom)


def csv_file(tmp_path, content: bytes):
    path = tmp_path / "notes.csv"
    path.write_bytes(content)
    return path


def brat(tmp_path, ann: str, text=f"{SECRET}: pacemaker.", extra=None):
    folder = tmp_path / "brat"
    folder.mkdir()
    (folder / "doc1.txt").write_text(text, encoding="utf-8")
    (folder / "doc1.ann").write_text(ann, encoding="utf-8")
    for name, content in (extra or {}).items():
        (folder / name).write_text(content, encoding="utf-8")
    return folder


def non_utf8(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(json.dumps(good(1)).encode() + b'\n{"id": "n2", "text": "caf\xe9 latte"}\n')
    return path


PACEMAKER = len(SECRET) + 2  # offset of "pacemaker" in the brat text

CASES = {
    "invalid JSON": (
        lambda p: jsonl(p, '{"id": "n2", "text": "x"'),
        ["notes.jsonl line 2: invalid JSON: Expecting ',' delimiter"],
    ),
    "JSON array instead of object": (
        lambda p: jsonl(p, '["n2", "x"]'),
        ["line 2: expected a JSON object, got an array"],
    ),
    "missing text": (lambda p: jsonl(p, {"id": "n2"}), ["line 2: missing field(s) text"]),
    "missing id": (lambda p: jsonl(p, {"text": "x"}), ["line 2: missing field(s) id"]),
    "id of the wrong type": (
        lambda p: jsonl(p, {"id": 2.5, "text": "x"}),
        ["line 2: field 'id' must be a string or an integer, not a number"],
    ),
    "boolean id": (
        lambda p: jsonl(p, {"id": True, "text": "x"}),
        ["line 2: field 'id' must be a string or an integer, not a boolean"],
    ),
    "empty id": (lambda p: jsonl(p, {"id": "", "text": "x"}), ["line 2: field 'id' is empty"]),
    "id with a control character": (
        lambda p: jsonl(p, {"id": "n\t2", "text": "x"}),
        ["line 2: field 'id' contains the control character U+0009 at offset 1"],
    ),
    "id with surrounding spaces": (
        lambda p: jsonl(p, {"id": " n2", "text": "x"}),
        ["line 2: field 'id' has surrounding spaces"],
    ),
    "id too long": (
        lambda p: jsonl(p, {"id": "x" * 201, "text": "x"}),
        ["line 2: field 'id' is longer than 200 characters"],
    ),
    "text of the wrong type": (
        lambda p: jsonl(p, {"id": "n2", "text": 12}),
        ["line 2: field 'text' must be a string, not a number"],
    ),
    "empty text": (lambda p: jsonl(p, {"id": "n2", "text": ""}), ["line 2: field 'text' is empty"]),
    "whitespace text": (lambda p: jsonl(p, {"id": "n2", "text": " \n\t"}), ["line 2: field 'text' is empty"]),
    "NUL in text": (
        lambda p: jsonl(p, {"id": "n2", "text": "ab\u0000c"}),
        ["line 2: field 'text' contains a NUL character at offset 2"],
    ),
    "unpaired surrogate": (
        lambda p: jsonl(p, '{"id": "n2", "text": "ab\\ud800"}'),
        ["line 2: field 'text' contains an unpaired surrogate (\\u escape) at offset 2"],
    ),
    "metadata not an object": (
        lambda p: jsonl(p, {"id": "n2", "text": "x", "metadata": [1]}),
        ["line 2: field 'metadata' must be an object, not an array"],
    ),
    "top-level field clashes with metadata": (
        lambda p: jsonl(p, {"id": "n2", "text": "x", "ward": "A", "metadata": {"ward": "B"}}),
        ["line 2: field(s) ward given both at top level and in 'metadata'"],
    ),
    "duplicate id": (lambda p: jsonl(p, good(2), good(2)), ["line 3: duplicate id 'n2' (first on line 2)"]),
    "duplicate id int and string": (
        lambda p: jsonl(p, {"id": 5, "text": "x"}, {"id": "5", "text": "y"}),
        ["line 3: duplicate id '5' (first on line 2)"],
    ),
    "non-UTF-8 byte": (non_utf8, ["notes.jsonl line 2: not UTF-8 (byte 0xe9 at column 26)"]),
    "empty file": (lambda p: write_jsonl(p / "notes.jsonl", []), ["notes.jsonl: the file holds no notes"]),
    "unknown format": (
        lambda p: (p / "notes.txt").write_text("x") and p / "notes.txt",
        ["notes.txt: unsupported format"],
    ),
    "missing file": (lambda p: p / "nope.jsonl", ["nope.jsonl: no such file or folder"]),
    "CSV without a text column": (
        lambda p: csv_file(p, b"id,body\n1,x\n"),
        [
            "notes.csv line 1: the first line must be a header naming the columns id and text "
            "(missing: text; it has 2 column(s))"
        ],
    ),
    "CSV with a repeated column": (
        lambda p: csv_file(p, b"id,text,id\n1,x,2\n"),
        ["notes.csv line 1: CSV header repeats column(s) id"],
    ),
    "CSV row with too many fields": (
        lambda p: csv_file(p, b'id,text\n1,"a\nb"\n2,x,extra\n'),
        ["notes.csv line 4: row has 3 fields, the header has 2"],
    ),
    "CSV unclosed quote": (
        lambda p: csv_file(p, b'id,text\n1,ok\n2,"never closed\n'),
        ["notes.csv line 3: unreadable CSV row: unexpected end of data"],
    ),
    "CSV empty text": (lambda p: csv_file(p, b"id,text\n1,ok\n2,\n"), ["notes.csv line 3: field 'text' is empty"]),
    "brat span outside the text": (
        lambda p: brat(p, f"T1\tDevice {PACEMAKER} 999\tpacemaker\n"),
        [
            f"doc1.ann line 1: entity 'T1': evidence[0] [{PACEMAKER}, 999) ends past the text "
            f"(length {PACEMAKER + 10}) of doc1.txt"
        ],
    ),
    "brat span start >= end": (
        lambda p: brat(p, "T1\tDevice 20 10\tx\n"),
        ["doc1.ann line 1: entity 'T1': evidence[0] [20, 10) is empty or reversed (start >= end)"],
    ),
    "brat covered text differs": (
        lambda p: brat(p, "T1\tDevice 0 5\tLuigi\n"),
        ["doc1.ann line 1: entity 'T1': the covered text differs from doc1.txt at [0, 5)"],
    ),
    "brat discontinuous covered text differs": (
        lambda p: brat(p, "T1\tDevice 0 5;6 11\tMario Bianchi\n"),
        ["doc1.ann line 1: entity 'T1': the covered text differs from doc1.txt at [0, 5), [6, 11)"],
    ),
    "brat malformed entity line": (lambda p: brat(p, "T1\tDevice 0 5\n"), ["doc1.ann line 1: entity line must be"]),
    "brat non-integer offsets": (
        lambda p: brat(p, "T1\tDevice 0 x\tMario\n"),
        ["doc1.ann line 1: entity 'T1': offsets must be integer pairs"],
    ),
    "brat entity defined twice": (
        lambda p: brat(p, "T1\tDevice 0 5\tMario\nT1\tDevice 0 5\tMario\n"),
        ["doc1.ann line 2: entity 'T1' is defined twice"],
    ),
    "brat text not UTF-8": (
        lambda p: brat(p, "") and (p / "brat" / "doc1.txt").write_bytes(b"ok\nab\xffc") and p / "brat",
        ["doc1.txt line 2: not UTF-8 (byte 0xff at column 3)"],
    ),
    "brat text without ann": (
        lambda p: brat(p, "", extra={"doc2.txt": "x"}),
        ["doc2.txt: has no .ann file of the same name beside it"],
    ),
    "brat ann without text": (
        lambda p: brat(p, "", extra={"doc3.ann": ""}),
        ["doc3.ann: has no .txt file of the same name beside it"],
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_bad_file_is_refused_with_line_and_reason(corpus, tmp_path, snapshot, case):
    make, expected = CASES[case]
    path = make(tmp_path)
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    message = str(info.value)
    assert message.startswith("nothing imported, ")
    for fragment in expected:
        assert fragment in message
    assert SECRET not in message and "Mario" not in message
    assert snapshot() == before


def test_every_problem_is_reported_not_only_the_first(corpus, tmp_path, snapshot):
    path = jsonl(tmp_path, {"id": "n2"}, "not json", {"id": "n3", "text": ""}, good(1))
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    message = str(info.value)
    assert "4 problem(s)" in message
    for fragment in (
        "line 2: missing",
        "line 3: invalid JSON",
        "line 4: field 'text' is empty",
        "line 5: duplicate id 'n1'",
    ):
        assert fragment in message
    assert snapshot() == before


def test_problems_are_capped_at_fifty_with_a_count(corpus, tmp_path, snapshot):
    path = jsonl(tmp_path, *[{"id": f"x{i}"} for i in range(120)])
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    lines = str(info.value).splitlines()
    assert lines[0] == "nothing imported, 120 problem(s):"
    assert len(lines) == 1 + 50 + 1
    assert lines[-1] == "... and 70 more problems (120 in all)"
    assert snapshot() == before


def test_an_unknown_corpus_needs_create(db, tmp_path, snapshot):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(2))
    before = snapshot()
    with pytest.raises(CommandError, match="corpus 'nowhere' does not exist \\(use --create to create it\\)"):
        call_command("import_notes", str(path), "--corpus", "nowhere")
    with pytest.raises(CommandError, match="creating a corpus needs --language"):
        call_command("import_notes", str(path), "--corpus", "nowhere", "--create")
    with pytest.raises(CommandError, match="creating a corpus needs --language"):
        call_command("import_notes", str(path), "--corpus", "nowhere", "--create", "--language", "Italian")
    assert snapshot() == before


def test_a_language_other_than_the_corpus_language_is_refused(corpus, tmp_path, snapshot):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(2))
    before = snapshot()
    with pytest.raises(CommandError, match="corpus 'ward' is in language 'en', not 'it'"):
        call_command("import_notes", str(path), "--corpus", "ward", "--language", "it")
    assert snapshot() == before


def test_changed_text_for_an_existing_id_is_refused_without_update(corpus, tmp_path, snapshot):
    call_command("import_notes", str(write_jsonl(tmp_path / "a.jsonl", [good(1), good(2)])), "--corpus", "ward")
    changed = {"id": "n2", "text": f"{SECRET} corrected."}
    path = write_jsonl(tmp_path / "b.jsonl", [good(3), good(1), changed])
    before = snapshot()
    with pytest.raises(CommandError) as info:
        call_command("import_notes", str(path), "--corpus", "ward")
    assert (
        "b.jsonl line 3: note 'n2' already exists with different text (content hash differs); "
        "use --update to replace it"
    ) in str(info.value)
    assert SECRET not in str(info.value)
    assert snapshot() == before
    assert Note.objects.get(external_id="n2").text == good(2)["text"]


def test_update_refuses_to_change_the_text_of_an_annotated_note(corpus, tasks, tmp_path, snapshot):
    call_command("import_notes", str(write_jsonl(tmp_path / "a.jsonl", [good(1)])), "--corpus", "ward")
    Annotation.objects.create(note=Note.objects.get(), task=tasks["pacemaker"], label="y", annotator_name="a")
    path = write_jsonl(tmp_path / "b.jsonl", [good(2), {"id": "n1", "text": "shorter"}])
    before = snapshot()
    with pytest.raises(CommandError, match="line 2: note 'n1' has 1 annotation\\(s\\), so its text cannot change"):
        call_command("import_notes", str(path), "--corpus", "ward", "--update")
    assert snapshot() == before
