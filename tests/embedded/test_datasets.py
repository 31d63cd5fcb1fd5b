"""Dataset builds and every export on SQLite (the bulk_create paths; text compared for duplicate
notes where PostgreSQL compares the hash its trigger keeps)."""

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
from webapp.corpus.models import Note
from webapp.datasets import building, export
from webapp.datasets.models import DatasetExport, MaskedExample
from webapp.lifecycle.status import JobStatus

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def labels(dataset):
    return sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True))


def test_a_build_masks_the_peaks_and_drops_a_note_repeating_another(make_dataset, maps, corpus, tasks, model):
    twin = Note.objects.create(corpus=corpus, external_id="n2-same-text", text=TEXT)
    add_map(twin, tasks["heart"], model, PEAKS["heart"])
    dataset = make_dataset()
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE and labels(dataset) == ["bp", "pacemaker"]
    assert dataset.stats["dropped_duplicate_notes"] == 1


def test_a_build_in_small_batches_gives_the_same_examples(make_dataset, maps, monkeypatch):
    monkeypatch.setattr(building, "WRITE_BATCH", 1)  # every example its own bulk_create
    dataset = make_dataset()
    building.build(building.claim(dataset.pk))
    assert labels(dataset) == ["bp", "pacemaker"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "hf"])
def test_every_format_is_written_and_reads_back(built, tmp_path, fmt):
    result = export.write_export(built, fmt, tmp_path / "out")
    folder = tmp_path / "out"
    if fmt == "jsonl":
        rows = [json.loads(line) for line in (folder / "examples.jsonl").read_text(encoding="utf-8").splitlines()]
    elif fmt == "parquet":
        rows = pq.read_table(folder / "examples.parquet").to_pylist()
    else:
        import datasets

        rows = list(datasets.load_from_disk(str(folder)))
    assert result.rows == len(rows) == 2
    assert sorted(r["label"] for r in rows) == ["bp", "pacemaker"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["rows"] == 2 and manifest["format"] == fmt


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_a_download_is_a_zip_of_the_examples_and_the_manifest(built, researcher, fmt):
    archive = zipfile.ZipFile(io.BytesIO(b"".join(export.stream_download(built, fmt, researcher))))
    assert archive.namelist() == [export.DATA_FILES[fmt], "manifest.json"]
    assert json.loads(archive.read("manifest.json"))["rows"] == 2


def test_a_worker_export_is_written_under_data_dir_and_downloaded(built, researcher, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="hf", created_by=researcher)
    export.run_export(export.claim_export(job.pk))
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.rows == 2
    archive = zipfile.ZipFile(io.BytesIO(b"".join(export.stream_folder(job, researcher))))
    assert "manifest.json" in archive.namelist()
