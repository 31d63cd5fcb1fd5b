"""The dataset export formats are one table of writers (webapp.datasets.formats): the stored
exports' choices, every writer and the dataset page's buttons read it; an unknown name is refused
with the supported ones."""

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from webapp.datasets import export
from webapp.datasets.formats import FORMATS, DatasetFormat
from webapp.datasets.launch import LaunchError, request_export
from webapp.datasets.models import DatasetExport


def test_the_table_is_the_stored_formats_choices():
    assert list(FORMATS) == ["jsonl", "parquet", "hf"]
    assert [name for name, _ in DatasetExport._meta.get_field("format").choices] == list(FORMATS)
    assert export.DATA_FILES == {"jsonl": "examples.jsonl", "parquet": "examples.parquet"}


def test_an_unknown_format_is_refused_with_the_supported_ones(built, tmp_path):
    with pytest.raises(export.ExportError, match=r"Unknown export format 'csv'; choose one of jsonl, parquet, hf\."):
        export.write_export(built, "csv", tmp_path / "out")
    with pytest.raises(LaunchError, match=r"Unknown export format 'csv'; choose one of jsonl, parquet, hf\."):
        request_export(built, "csv")
    assert not DatasetExport.objects.exists()


def test_the_page_buttons_are_the_tables_entries(built, researcher, client_for, monkeypatch):
    extra = DatasetFormat("csvish", "CSV-ish", "examples.csv")
    monkeypatch.setitem(FORMATS, "csvish", extra)
    html = client_for(researcher).get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "Download JSONL (.zip)" in html and "Download Parquet (.zip)" in html
    assert "Prepare a Hugging Face dataset" in html
    assert reverse("datasets:download", args=[built.pk, "csvish"]) in html and "Download CSV-ish (.zip)" in html


def test_each_file_format_writes_the_same_rows_to_a_folder_and_a_download(built, tmp_path):
    for name, kind in FORMATS.items():
        if not kind.data_file:
            continue
        folder = export.write_export(built, name, tmp_path / name).path
        download = b"".join(export.stream_download(built, name, None))
        with zipfile.ZipFile(io.BytesIO(download)) as zf:
            zipped = zf.read(kind.data_file)
            assert json.loads(zf.read("manifest.json"))["rows"] == built.example_count
        on_disk = (folder / kind.data_file).read_bytes()
        if name == "jsonl":
            assert zipped == on_disk
        else:
            assert pq.read_table(io.BytesIO(zipped)).equals(pq.read_table(io.BytesIO(on_disk)))
            assert b"decselfmask.manifest" in pq.read_metadata(io.BytesIO(on_disk)).metadata
