"""The dataset export formats are one table: it matches DatasetExport.Format, every writer reads
it, and the dataset page's buttons are its entries."""

import io
import json
import zipfile

import pyarrow.parquet as pq
from django.urls import reverse

from webapp.datasets import export
from webapp.datasets.models import DatasetExport


def test_the_table_has_one_entry_per_stored_format():
    assert list(export.DATASET_FORMATS) == ["jsonl", "parquet", "hf"]
    assert set(export.DATASET_FORMATS) == set(DatasetExport.Format.values)
    assert export.DATA_FILES == {"jsonl": "examples.jsonl", "parquet": "examples.parquet"}


def test_the_page_buttons_are_the_tables_entries(built, researcher, client_for, monkeypatch):
    extra = export.DatasetFormat("csvish", "CSV-ish", "examples.csv")
    monkeypatch.setitem(export.DATASET_FORMATS, "csvish", extra)
    html = client_for(researcher).get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "Download JSONL (.zip)" in html and "Download Parquet (.zip)" in html
    assert "Prepare a Hugging Face dataset" in html
    assert reverse("datasets:download", args=[built.pk, "csvish"]) in html and "Download CSV-ish (.zip)" in html


def test_each_file_format_writes_the_same_rows_to_a_folder_and_a_download(built, tmp_path):
    for name, kind in export.DATASET_FORMATS.items():
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
