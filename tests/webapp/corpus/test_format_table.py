"""One format table for every file a user brings (webapp.lib.formats): the notes import and the
gold import read a file through the same reader, so they refuse the same line for the same reason,
and notes can be made from any format of the table, an annotation tool's included; the spans of
those files become gold labels through the gold import of the same file, once the notes are in."""

import shutil
import zipfile

import pytest

from webapp.corpus.gold import import_gold
from webapp.corpus.importing import import_notes
from webapp.corpus.models import Annotation, Corpus, Note
from webapp.lib.formats import Document, Span, get_format, writers

TEXT = "Paziente con pacemaker. FC 80 bpm."
PACEMAKER = (13, 22)
RELATION_SHAPE = "relation line must be 'R<n><TAB><type> Arg1:<id> Arg2:<id>'"


def _brat(folder, ann: str):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "doc1.txt").write_text(TEXT, encoding="utf-8")
    (folder / "doc1.ann").write_text(ann, encoding="utf-8")
    return folder


def test_one_brat_reader_refuses_a_malformed_relation_alike_for_notes_and_gold_labels(corpus, tasks, tmp_path):
    """A folder of one entity and a relation line without its Arg1:/Arg2: roles: both imports
    refuse the whole file, naming the line and why, and write nothing."""
    entity = f"T1\tDevice {PACEMAKER[0]} {PACEMAKER[1]}\tpacemaker\n"
    folder = _brat(tmp_path / "bad", entity + "R1\tLocated T1 T1\n")
    expected = [f"doc1.ann line 2: {RELATION_SHAPE}"]

    notes = import_notes(folder, "new", create=True, language="it")
    assert notes.problem_lines() == expected
    assert not Corpus.objects.filter(name="new").exists()

    Note.objects.create(corpus=corpus, external_id="doc1", text=TEXT)  # the note the gold labels are for
    gold = import_gold(folder, "ward", fmt="brat", mapping=["Device=presence-of-pacemaker:y"], annotator="ann")
    assert gold.report.problem_lines() == expected
    assert not Annotation.objects.exists()

    # the relation written as brat writes it: both imports take the file
    fixed = _brat(tmp_path / "good", entity + "R1\tLocated Arg1:T1 Arg2:T1\n")
    notes = import_notes(fixed, "new", create=True, language="it")
    assert notes.ok and notes.created == 1
    assert Note.objects.get(corpus__name="new").metadata == {
        "brat": {"entities": [{"id": "T1", "type": "Device", "spans": [list(PACEMAKER)]}]}
    }
    gold = import_gold(fixed, "new", fmt="brat", mapping=["Device=presence-of-pacemaker:y"], annotator="ann")
    assert gold.ok and gold.report.created == 1
    assert Annotation.objects.get().evidence == [list(PACEMAKER)]


def _written(name: str, tmp_path):
    """Two documents written by format `name`'s writer: a file, or a zip of its folder."""
    fmt = get_format(name)
    pacemaker = Span.of([PACEMAKER], "presence-of-pacemaker:y", reviewer="ann", id="T1")
    docs = [Document("doc1", TEXT, [pacemaker]), Document("doc2", "Nessun pacemaker.")]
    if not fmt.writes_folder:
        path = tmp_path / f"export{fmt.suffix}"
        fmt.write(docs, path)
        return path
    fmt.write(docs, tmp_path / name)
    archive = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in sorted((tmp_path / name).iterdir()):
            zf.write(file, f"{name}/{file.name}")
    shutil.rmtree(tmp_path / name)
    return archive


@pytest.mark.parametrize("name", [f.name for f in writers()])
def test_notes_are_made_from_any_format_and_its_spans_become_gold_labels(name, tasks, tmp_path):
    path = _written(name, tmp_path)
    report = import_notes(path, "from-tool", create=True, language="it", fmt=name, unpack_dir=tmp_path)
    assert report.ok, report.problem_lines()
    assert report.created == 2
    corpus = Corpus.objects.get(name="from-tool")
    assert dict(corpus.notes.values_list("external_id", "text")) == {"doc1": TEXT, "doc2": "Nessun pacemaker."}
    assert any("1 span(s) of 1 document(s) are not gold labels yet" in line for line in report.warning_lines())
    assert not Annotation.objects.exists()

    gold = import_gold(path, "from-tool", fmt=name, mapping=[], annotator="ann", unpack_dir=tmp_path)
    assert gold.ok, gold.report.problem_lines()
    annotation = Annotation.objects.get()
    assert (annotation.note.external_id, annotation.task.slug, annotation.label) == (
        "doc1",
        "presence-of-pacemaker",
        "y",
    )
    assert annotation.evidence == [list(PACEMAKER)]
    assert not [p for p in tmp_path.iterdir() if p.is_dir()]  # what was unpacked is gone


def test_the_format_is_told_from_the_names_of_a_zips_files(tasks, tmp_path):
    path = _written("xmi", tmp_path)
    report = import_notes(path, "told", create=True, language="it")
    assert report.ok, report.problem_lines()
    assert Note.objects.filter(corpus__name="told").count() == 2


def test_gold_labels_from_a_format_without_spans_are_refused(corpus, tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("id,text\ndoc1,x\n", encoding="utf-8")
    gold = import_gold(path, "ward", fmt="csv", mapping=[], annotator="ann")
    assert gold.report.problem_lines() == [
        "notes.csv: CSV (columns id, text) carries no spans: gold labels come from a format that has them"
    ]


def test_the_import_page_makes_notes_from_a_label_studio_export(
    tasks, researcher, client_for, django_capture_on_commit_callbacks, settings, tmp_path
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from webapp.corpus.models import ImportJob
    from workers.imports import run_import

    settings.DATA_DIR = tmp_path
    path = _written("labelstudio", tmp_path)
    client = client_for(researcher)
    page = client.get(reverse("corpus:upload")).content.decode()
    for fmt in get_format("jsonl"), get_format("csv"), get_format("labelstudio"):  # every format of the table
        assert f'<option value="{fmt.name}">' in page
    data = {"kind": "notes", "corpus": "studio", "language": "it", "format": "labelstudio"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("corpus:upload"), {**data, "file": SimpleUploadedFile("tasks.json", path.read_bytes())}
        )
    assert response.status_code == 302, response.content.decode()
    job = ImportJob.objects.latest("pk")
    run_import(job.pk)
    job.refresh_from_db()
    assert (job.status, job.created_count) == ("done", 2), job.problems
    assert job.problem_lines == [
        "tasks.json: 1 span(s) of 1 document(s) are not gold labels yet: import the same file as gold labels from "
        "Label Studio JSON, mapping its labels to tasks, once the notes are in"
    ]
    assert Note.objects.filter(corpus__name="studio").count() == 2


def test_the_api_imports_notes_in_a_format_it_names(
    tasks, researcher, client, django_capture_on_commit_callbacks, settings, tmp_path
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.projects import default_project
    from webapp.api import tokens
    from webapp.corpus.models import ImportJob
    from workers.imports import run_import

    settings.DATA_DIR = tmp_path
    path = _written("doccano", tmp_path)
    _, secret = tokens.create(researcher, name="notes", projects=[default_project()], ceiling="roles", days=1)
    form = {"project": default_project().slug, "kind": "notes", "corpus": "api", "language": "it"}
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/api/imports",
            {**form, "format": "doccano", "file": SimpleUploadedFile("export.jsonl", path.read_bytes())},
            headers={"Authorization": f"Bearer {secret}"},
        )
    assert answer.status_code == 202, answer.json()
    run_import(ImportJob.objects.latest("pk").pk)
    assert Note.objects.filter(corpus__name="api").count() == 2
    unknown = client.post(
        "/api/imports",
        {**form, "format": "conll", "file": SimpleUploadedFile("x.conll", b"x")},
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert unknown.status_code == 400 and unknown.json()["detail"].startswith("format: ")


def test_a_document_id_given_twice_names_where_it_was_first(db, tmp_path):
    import json

    tasks = [{"id": 1, "data": {"note_id": "n1", "text": "uno"}}, {"id": 2, "data": {"note_id": "n1", "text": "due"}}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(tasks), encoding="utf-8")
    report = import_notes(path, "twice", create=True, language="it", fmt="labelstudio")
    assert report.problem_lines() == ["export.json task 2: duplicate id 'n1' (first in export.json task 1)"]
