"""Adding a format is one module and one line of its table (docs/development.md, "Adding a format"):
a toy import format (one note a line, `id|text`) registered in webapp.lib.formats is offered by the
Import page and read by a real notes import, and a toy writer registered in webapp.datasets.formats
is offered by the dataset page and writes a real dataset export; both are unregistered after."""

import io
import json
import zipfile
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from tests.projects import default_project
from webapp.corpus.forms import UploadForm
from webapp.corpus.models import Note
from webapp.datasets import export
from webapp.datasets import formats as dataset_formats
from webapp.lib import formats as note_formats
from webapp.lib.formats import Document

# --- the toy import format: what its module would hold ------------------------------------------


def read_toy(path, options, problems):
    """One note a line, `id|text`; a line without '|' is a problem naming it."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        options.checkpoint()
        if not line.strip():
            continue
        note_id, sep, text = line.partition("|")
        if not sep:
            problems.add(path.name, number, "a toy line is 'id|text'")
            continue
        yield Document(note_id, text, where=f"line {number}")


TOY_READER = note_formats.Format("toy", "Toy lines", read_toy, detect=(".toy",), spans=False)

# --- the toy dataset writer: what its module would hold -----------------------------------------


def toy_steps(batches, sink, counter, describe):
    """One example a line, `example_id|label`."""
    for rows in batches:
        sink.write("".join(f"{row['example_id']}|{row['label']}\n" for row in rows).encode("utf-8"))
        counter.written(rows)
        yield


TOY_WRITER = dataset_formats.DatasetFormat("toy", "Toy lines", "examples.toy", toy_steps)


@pytest.fixture
def toy():
    note_formats.register(TOY_READER)
    dataset_formats.register(TOY_WRITER)
    yield
    note_formats.unregister("toy")
    dataset_formats.unregister("toy")


def test_a_toy_format_is_imported_and_a_toy_writer_exports_once_registered(
    toy, built, researcher, client_for, tmp_path
):
    # import: the command guesses it from the name, the Import page offers it
    path = tmp_path / "ward.toy"
    path.write_text("t1|Paziente con pacemaker.\nt2|FC 80 bpm.\n", encoding="utf-8")
    out = StringIO()
    call_command("import_notes", str(path), "--corpus", "toys", "--create", "--language", "it", stdout=out)
    assert "2 created" in out.getvalue()
    assert dict(Note.objects.filter(corpus__name="toys").values_list("external_id", "text")) == {
        "t1": "Paziente con pacemaker.",
        "t2": "FC 80 bpm.",
    }
    data = {"project": default_project().pk, "kind": "notes", "corpus": "toys", "format": "toy"}
    form = UploadForm(data, {"file": SimpleUploadedFile("ward.txt", b"t3|x\n")}, user=researcher)
    assert ("toy", "Toy lines") in form.fields["format"].choices
    assert form.is_valid(), form.errors
    assert form.cleaned_data["file"].import_options == {"format": "toy"}  # read as toy, whatever its name
    bad = tmp_path / "bad.toy"
    bad.write_text("t1|Paziente con pacemaker.\nno bar here\n", encoding="utf-8")
    from webapp.corpus.importing import import_notes

    assert import_notes(bad, "toys").problem_lines() == ["bad.toy line 2: a toy line is 'id|text'"]

    # export: the command and a download write through the toy writer, the page offers it
    call_command("export_dataset", str(built.pk), "--format", "toy", "--out", str(tmp_path / "out"), stdout=StringIO())
    lines = (tmp_path / "out" / "examples.toy").read_text(encoding="utf-8").splitlines()
    assert len(lines) == built.example_count and all("|" in line for line in lines)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert (manifest["format"], manifest["rows"]) == ("toy", built.example_count)
    with zipfile.ZipFile(io.BytesIO(b"".join(export.stream_download(built, "toy", None)))) as zf:
        assert zf.read("examples.toy").decode().splitlines() == lines
    page = client_for(researcher).get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "Download Toy lines (.zip)" in page


def test_unregistered_the_toy_formats_are_refused_naming_the_supported_ones(built, tmp_path):
    path = tmp_path / "ward.toy"
    path.write_text("t1|x\n", encoding="utf-8")
    from webapp.corpus.importing import import_notes

    (problem,) = import_notes(path, "toys", create=True, language="it", fmt="toy").problem_lines()
    assert problem.startswith("ward.toy: unsupported format; notes are read in these formats: jsonl (")
    with pytest.raises(export.ExportError, match=r"Unknown export format 'toy'; choose one of jsonl, parquet, hf\."):
        export.write_export(built, "toy", tmp_path / "out")
