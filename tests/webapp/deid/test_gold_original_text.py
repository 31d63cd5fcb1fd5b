"""Gold imported later from an annotation tool's file into a de-identified corpus
(webapp.corpus.gold): a document that holds the ORIGINAL text of its note is de-identified
the same way on the way in (the same patient gives the same surrogates) and its spans carried into
the note's text (a span around an identifier, a span after it); one whose text still differs is
refused with a reason that holds no text; the original text is stored nowhere."""

import json

import pytest

from tests.webapp.deid.conftest import (
    FIRST,
    METADATA,
    NAME,
    assert_no_identifier_anywhere,
    jsonl,
    note_rows,
    places_holding,
)
from webapp.corpus.gold import import_gold
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Annotation, Note

AROUND = [FIRST.index("Paziente"), FIRST.index(NAME) + len(NAME) + 1]  # "Paziente Ottone Zanfrini,"
AFTER = [FIRST.index("tachicardia"), FIRST.index("tachicardia") + len("tachicardia")]


@pytest.fixture
def ward(project, policy, tachycardia, tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl(note_rows()))
    assert import_notes(path, "ward", project=project, language="it", create=True, deidentify=True).ok
    return Note.objects.get(external_id="n1")


def _gold_file(tmp_path, text=FIRST, metadata=METADATA):
    document = {
        "id": "n1",
        "text": text,
        "spans": [
            {"ranges": [AROUND], "label": "EVID", "source": "gold"},
            {"ranges": [AFTER], "label": "EVID", "source": "gold"},
        ],
    }
    if metadata is not None:
        document["metadata"] = metadata
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(document, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _import(path, project, **kwargs):
    return import_gold(
        path, "ward", fmt="jsonl", mapping=["EVID=tachy:y"], annotator="ward-team", project=project, **kwargs
    )


def test_a_document_with_the_original_text_is_deidentified_and_its_offsets_carried(ward, project, tmp_path):
    preview = _import(_gold_file(tmp_path), project, dry_run=True)
    assert preview.ok, preview.report.problem_lines()
    assert any("1 document(s) held the original text of their note" in line for line in preview.preview)
    gold = _import(_gold_file(tmp_path), project)
    assert gold.ok, gold.report.problem_lines()
    annotation = Annotation.objects.get(note=ward)
    (start, end), (after_start, after_end) = annotation.evidence
    surrogate = ward.metadata["patient_name"]
    assert ward.text[start:end] == f"Paziente {surrogate},"
    assert ward.text[after_start:after_end] == "tachicardia"
    assert annotation.label == "y" and annotation.annotator_name == "ward-team"
    again = _import(_gold_file(tmp_path), project)  # the same file again: unchanged
    assert (again.report.created, again.report.unchanged) == (0, 1)
    assert_no_identifier_anywhere()


def test_without_the_known_identifiers_the_text_still_differs_and_the_document_is_refused(ward, project, tmp_path):
    gold = _import(_gold_file(tmp_path, metadata=None), project)
    assert not gold.ok
    [line] = gold.report.problem_lines()
    assert "differs from note 'n1' of this de-identified corpus, and de-identified with the project's policy" in line
    assert not places_holding(NAME.split()[1]) and not any(word in line for word in ("Zanfrini", "Ottone", "RIC-"))
    assert not Annotation.objects.exists()


def test_the_kept_mapping_gives_the_known_identifiers_back(project, policy, tachycardia, tmp_path, mapping_key):
    policy.keep_mapping = True
    policy.save()
    path = tmp_path / "notes.jsonl"
    path.write_bytes(jsonl(note_rows()))
    assert import_notes(path, "ward", project=project, language="it", create=True, deidentify=True).ok
    gold = _import(_gold_file(tmp_path, metadata=None), project)
    assert gold.ok, gold.report.problem_lines()
    note = Note.objects.get(external_id="n1")
    (start, end), _ = Annotation.objects.get(note=note).evidence
    assert note.text[start:end] == f"Paziente {note.metadata['patient_name']},"
    assert_no_identifier_anywhere()


def test_another_text_is_refused_as_before(ward, project, tmp_path):
    gold = _import(_gold_file(tmp_path, text=FIRST.replace("FC 130", "FC 131")), project)
    assert not gold.ok and "still does (content hash)" in gold.report.problem_lines()[0]


def test_a_document_holding_the_stored_text_imports_as_usual(ward, project, tmp_path):
    start = ward.text.index("tachicardia")
    document = {"id": "n1", "text": ward.text, "spans": [{"ranges": [[start, start + 11]], "label": "EVID"}]}
    path = tmp_path / "ours.jsonl"
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    gold = _import(path, project)
    assert gold.ok and Annotation.objects.get().evidence == [[start, start + 11]]
    assert not any("original text" in line for line in gold.preview)
