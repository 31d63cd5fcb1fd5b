"""Importing notes: JSONL, CSV and brat folders; idempotence, --update, batching, audit."""

import gzip
from io import StringIO

import pytest
from django.core.management import call_command

from tests.projects import default_project
from tests.webapp.corpus.conftest import notes, write_jsonl
from webapp.audit.models import AuditEvent
from webapp.corpus import importing
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Annotation, Corpus, Note, text_hash


def run(*args, **kwargs):
    out = StringIO()
    call_command("import_notes", *[str(a) for a in args], stdout=out, **kwargs)
    return out.getvalue()


def test_it_imports_a_jsonl_file_into_a_new_corpus(db, tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(3) + [{"id": 7, "text": "Int id.\nTwo lines."}])
    out = run(path, "--corpus", "ward", "--create", "--language", "it")
    assert "4 created, 0 updated, 0 unchanged" in out
    corpus = Corpus.objects.get(name="ward")
    assert corpus.language == "it"
    note = Note.objects.get(corpus=corpus, external_id="7")
    assert note.text == "Int id.\nTwo lines."
    assert note.content_hash == text_hash(note.text)
    assert Note.objects.get(external_id="n2").metadata == {"ward": "A"}


def test_it_keeps_extra_top_level_fields_as_metadata(corpus, tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", [{"id": "a", "text": "x", "language": "en", "metadata": {"k": 1}}])
    assert import_notes(path, "ward").created == 1
    assert Note.objects.get().metadata == {"k": 1, "language": "en"}


def test_it_accepts_a_utf8_bom_and_blank_lines(corpus, tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", [*notes(2), "", "   "], bom=True)
    report = import_notes(path, "ward")
    assert (report.created, report.problem_count) == (2, 0)
    assert Note.objects.get(external_id="n1").text.startswith("Paziente")


def test_it_reads_gzipped_jsonl(corpus, tmp_path):
    plain = write_jsonl(tmp_path / "plain.jsonl", notes(2))
    path = tmp_path / "notes.jsonl.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    assert import_notes(path, "ward").created == 2


def test_it_imports_csv_with_other_columns_as_metadata(corpus, tmp_path):
    path = tmp_path / "notes.csv"
    path.write_bytes(b'\xef\xbb\xbfward,id,text\r\nA,1,"Line one,\r\nline two ""quoted"""\r\nB,2,perch\xc3\xa9\r\n')
    report = import_notes(path, "ward")
    assert report.created == 2
    note = Note.objects.get(external_id="1")
    assert note.text == 'Line one,\r\nline two "quoted"'
    assert note.metadata == {"ward": "A"}
    assert Note.objects.get(external_id="2").text == "perché"


def test_it_imports_a_brat_folder_with_entities_in_metadata(corpus, tmp_path):
    folder = tmp_path / "brat"
    folder.mkdir()
    text = "Paziente con pacemaker.\r\nFC 80 bpm, tachicardia assente."
    (folder / "doc1.txt").write_bytes(text.encode("utf-8"))
    start = text.index("FC 80")
    (folder / "doc1.ann").write_text(
        f"T1\tDevice 13 22\tpacemaker\n"
        f"T2\tVital {start} {start + 2};{start + 3} {start + 5}\tFC 80\n"
        "A1\tNegation T2\n#1\tAnnotatorNotes T1\tfree text\n",
        encoding="utf-8",
    )
    (folder / "doc2.txt").write_text("Nessun dato.", encoding="utf-8")
    (folder / "doc2.ann").write_text("", encoding="utf-8")
    report = import_notes(folder, "ward")
    assert report.created == 2
    note = Note.objects.get(external_id="doc1")
    assert note.text == text  # exactly, \r\n kept
    assert note.metadata == {
        "brat": {
            "entities": [
                {"id": "T1", "type": "Device", "spans": [[13, 22]]},
                {"id": "T2", "type": "Vital", "spans": [[start, start + 2], [start + 3, start + 5]]},
            ]
        }
    }


def test_reimporting_the_same_file_changes_nothing(corpus, tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(5))
    import_notes(path, "ward")
    before = list(Note.objects.order_by("pk").values_list("pk", "content_hash", "created"))
    report = import_notes(path, "ward")
    assert (report.created, report.unchanged, report.updated) == (0, 5, 0)
    assert list(Note.objects.order_by("pk").values_list("pk", "content_hash", "created")) == before


def test_it_adds_new_notes_beside_existing_ones_across_batches(corpus, tmp_path):
    import_notes(write_jsonl(tmp_path / "first.jsonl", notes(4)), "ward")
    report = import_notes(write_jsonl(tmp_path / "second.jsonl", notes(10)), "ward", batch_size=3)
    assert (report.created, report.unchanged, report.updated) == (6, 4, 0)
    assert Note.objects.count() == 10


def test_update_replaces_changed_text_and_metadata(corpus, tmp_path):
    import_notes(write_jsonl(tmp_path / "notes.jsonl", notes(3)), "ward")
    rows = notes(3)
    rows[0]["text"] = "Corrected text."
    rows[1]["metadata"] = {"ward": "B"}
    report = import_notes(write_jsonl(tmp_path / "fixed.jsonl", rows), "ward", update=True)
    assert (report.created, report.unchanged, report.updated) == (0, 1, 2)
    first = Note.objects.get(external_id="n1")
    assert (first.text, first.content_hash) == ("Corrected text.", text_hash("Corrected text."))
    assert Note.objects.get(external_id="n2").metadata == {"ward": "B"}


def test_update_keeps_the_text_of_annotated_notes_with_the_same_text(corpus, tasks, tmp_path):
    import_notes(write_jsonl(tmp_path / "notes.jsonl", notes(1)), "ward")
    Annotation.objects.create(note=Note.objects.get(), task=tasks["pacemaker"], label="y", annotator_name="a")
    rows = notes(1)
    rows[0]["metadata"] = {"ward": "C"}
    assert import_notes(write_jsonl(tmp_path / "m.jsonl", rows), "ward", update=True).updated == 1


def test_an_import_is_audited_without_note_text(corpus, tmp_path):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(2))
    import_notes(path, "ward")
    event = AuditEvent.objects.get(action=AuditEvent.Action.IMPORT_NOTES)
    assert (event.object_type, event.object_id) == ("corpus.Corpus", str(corpus.pk))
    assert event.details == {"file": "notes.jsonl", "format": "jsonl", "created": 2, "unchanged": 0, "updated": 0}
    assert event.actor_name.startswith("cli:")  # no user: the operating-system user (webapp.audit.log)
    assert "Paziente" not in str(event.details)


def test_it_imports_nothing_if_the_file_changes_between_passes(corpus, tmp_path, monkeypatch, snapshot):
    path = write_jsonl(tmp_path / "notes.jsonl", notes(3))
    real_read_notes = importing.read_notes
    calls = []

    def read_then_change(*args):
        calls.append(1)
        if len(calls) == 2:
            write_jsonl(path, notes(4))
        return real_read_notes(*args)

    monkeypatch.setattr(importing, "read_notes", read_then_change)
    before = snapshot()
    report = import_notes(path, "ward")
    assert "the file changed while it was imported" in str(report.problems[0])
    assert snapshot() == before


@pytest.mark.django_db(transaction=True)
def test_a_large_import_writes_in_batches_and_reimports_unchanged(tmp_path):
    Corpus.objects.create(project=default_project(), name="big", language="en")
    path = write_jsonl(tmp_path / "notes.jsonl", notes(4500))
    phases = []
    report = import_notes(path, "big", progress=lambda phase, done: phases.append((phase, done)))
    assert report.created == 4500
    assert phases == [
        ("validate", 2000),
        ("validate", 4000),
        ("validate", 4500),
        ("write", 2000),
        ("write", 4000),
        ("write", 4500),
    ]
    assert Note.objects.filter(corpus__name="big").count() == 4500
    assert import_notes(path, "big").unchanged == 4500
