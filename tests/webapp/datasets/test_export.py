"""Exports: JSONL, Parquet and Hugging Face folders re-read, manifests, audit, zip streams."""

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from ml.masking import DSM_INSTRUCTION
from webapp.audit.models import AuditEvent
from webapp.datasets import export
from webapp.datasets.models import DatasetExport
from webapp.pipeline.models import JobStatus

from .fabricate import TEXT


def expected_first_row():
    a = TEXT.index("pacemaker")
    masked = TEXT[:a] + "<mask>" + TEXT[a + len("pacemaker") :]
    return {
        "note_id": "n1",
        "task_slugs": ["heart", "pacemaker"],
        "task_descriptions": ["heart described", "pacemaker described"],
        "input": masked,
        "label": "pacemaker",
        "char_start": a,
        "char_end": a + len("pacemaker"),
        "prompt": f"{DSM_INSTRUCTION} {masked}",
        "answer": "pacemaker",
    }


def check_manifest(info, dataset, fmt, rows=2):
    assert info["dataset"] == {"id": dataset.pk, "name": dataset.name, "version": dataset.version}
    assert info["corpus"]["name"] == "ward" and info["model_version"]["name"] == "tiny-test"
    assert info["profile"] == {
        "id": dataset.profile_id,
        "name": "sharp",
        "version": 1,
        "kernel_size": 1,
        "sigma": 1.0,
        "lower": 0.2,
        "upper": 0.4,
        "strict": False,
        "trim": True,
    }
    from ml.relevance import default_config_key

    assert info["config_key"] == default_config_key("attnlrp", "en")  # built without jobs: the default's
    assert (info["method"], info["template"], info["mode"], info["mask_token"], info["seed"]) == (
        "attnlrp",
        "en",
        "dsm",
        "<mask>",
        0,
    )
    assert info["rows"] == rows and info["format"] == fmt and info["stats"]["examples"] == 2
    assert info["filters"] == dataset.filters and info["jobs"] == []
    assert info["code_version"] and info["exported_by"] and info["created"] and info["exported"]
    assert "input" in info["columns"]


def test_jsonl_export_has_one_line_per_example_and_a_manifest(built, tmp_path):
    result = export.write_export(built, "jsonl", tmp_path / "out", actor="tester")
    lines = (tmp_path / "out" / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    assert result.rows == len(lines) == 2
    first = json.loads(lines[0])
    assert {k: v for k, v in first.items() if k != "example_id"} == expected_first_row()
    info = json.loads((tmp_path / "out" / "manifest.json").read_text())
    check_manifest(info, built, "jsonl")
    assert info["exported_by"] == "tester" and info["files"] == ["examples.jsonl", "manifest.json"]


def test_parquet_export_reads_back_with_the_manifest_inside(built, tmp_path):
    export.write_export(built, "parquet", tmp_path / "out")
    table = pq.read_table(tmp_path / "out" / "examples.parquet")
    assert table.num_rows == 2 and table.column_names == export.COLUMNS
    first = table.slice(0, 1).to_pylist()[0]
    assert {k: v for k, v in first.items() if k != "example_id"} == expected_first_row()
    metadata = pq.read_metadata(tmp_path / "out" / "examples.parquet").metadata
    inside = json.loads(metadata[export.PARQUET_MANIFEST_KEY.encode()])
    check_manifest(inside, built, "parquet")
    check_manifest(json.loads((tmp_path / "out" / "manifest.json").read_text()), built, "parquet")


def test_hf_export_loads_with_datasets(built, tmp_path):
    import datasets

    export.write_export(built, "hf", tmp_path / "out")
    loaded = datasets.load_from_disk(str(tmp_path / "out"))
    assert loaded.num_rows == 2 and loaded.column_names == export.COLUMNS
    assert {k: v for k, v in loaded[0].items() if k != "example_id"} == expected_first_row()
    check_manifest(json.loads((tmp_path / "out" / "manifest.json").read_text()), built, "hf")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".dsm-export-")]  # temporary folder removed


def test_unmasked_rows_have_no_span_and_the_note_as_answer(make_dataset, maps, tmp_path):
    from webapp.datasets import building

    dataset = make_dataset(mode="unmasked")
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    export.write_export(dataset, "parquet", tmp_path / "out")
    (row,) = pq.read_table(tmp_path / "out" / "examples.parquet").to_pylist()
    assert (row["char_start"], row["char_end"], row["prompt"], row["answer"]) == (None, None, "", TEXT)


def test_exports_are_audited_without_note_text(built, tmp_path, researcher):
    export.write_export(built, "jsonl", tmp_path / "out", actor=researcher)
    event = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert event.actor == researcher and event.object_id == str(built.pk)
    assert event.details["format"] == "jsonl" and event.details["rows"] == 2
    assert "pacemaker" not in json.dumps(event.details) and "alert" not in json.dumps(event.details)


def test_an_unfinished_dataset_is_not_exported(make_dataset, maps, tmp_path):
    with pytest.raises(export.ExportError, match="finished"):
        export.write_export(make_dataset(), "jsonl", tmp_path / "out")
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).exists()


def test_a_folder_with_files_is_not_overwritten(built, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    with pytest.raises(export.ExportError, match="not an empty folder"):
        export.write_export(built, "jsonl", tmp_path / "out")


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_the_download_is_a_zip_of_the_data_and_the_manifest(built, researcher, fmt):
    data = b"".join(export.stream_download(built, fmt, researcher))
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.namelist() == [export.DATA_FILES[fmt], "manifest.json"]
    info = json.loads(archive.read("manifest.json"))
    check_manifest(info, built, fmt)
    if fmt == "jsonl":
        rows = [json.loads(line) for line in archive.read("examples.jsonl").decode().splitlines()]
    else:
        rows = pq.read_table(io.BytesIO(archive.read("examples.parquet"))).to_pylist()
    assert len(rows) == 2 and rows[0]["label"] == "pacemaker"
    assert AuditEvent.objects.get(action=AuditEvent.Action.EXPORT).details["delivery"] == "download"


def test_the_download_is_sent_batch_by_batch(built, researcher, monkeypatch):
    monkeypatch.setattr(export.iter_batches, "__defaults__", (1,))  # one example a batch
    chunks = list(export.stream_download(built, "parquet", researcher))
    assert len([c for c in chunks if c]) >= 3  # a row group per batch, then the end of the zip


def test_a_worker_export_folder_is_written_recorded_and_downloaded_as_zip(built, researcher, settings, tmp_path):
    settings.DATA_DIR = tmp_path
    job = DatasetExport.objects.create(dataset=built, format="hf", created_by=researcher)
    claimed = export.claim_export(job.pk)
    export.run_export(claimed)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.rows == 2 and job.size_bytes > 0
    assert (tmp_path / job.path / "manifest.json").exists()
    archive = zipfile.ZipFile(io.BytesIO(b"".join(export.stream_folder(job, researcher))))
    assert "manifest.json" in archive.namelist() and "state.json" in archive.namelist()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.EXPORT).count() == 2  # written, then downloaded


def test_a_failed_export_says_so_in_plain_words(built):
    job = export.claim_export(DatasetExport.objects.create(dataset=built, format="hf").pk)
    message = export.fail_export(job, OSError("disk full at /secret"))
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "OSError" in message and "/secret" not in message
