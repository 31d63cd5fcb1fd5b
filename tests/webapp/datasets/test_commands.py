"""manage.py build_dataset and export_dataset."""

import json

import pytest
from django.core.management import CommandError, call_command

from webapp.audit.models import AuditEvent
from webapp.datasets.models import MaskedExample
from webapp.pipeline.models import JobStatus


def test_build_dataset_builds_in_this_process(make_dataset, maps, capsys):
    dataset = make_dataset()
    call_command("build_dataset", dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE and MaskedExample.objects.filter(dataset=dataset).count() == 2
    assert "2 examples from 3 maps" in capsys.readouterr().out


def test_build_dataset_says_why_it_failed(make_dataset, tasks):
    dataset = make_dataset()
    with pytest.raises(CommandError, match="No relevance maps match"):
        call_command("build_dataset", dataset.pk)
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED


@pytest.mark.parametrize(
    "fmt,data_file", [("jsonl", "examples.jsonl"), ("parquet", "examples.parquet"), ("hf", "state.json")]
)
def test_export_dataset_writes_the_folder_and_audits(built, tmp_path, fmt, data_file, capsys):
    call_command("export_dataset", built.pk, "--format", fmt, "--out", str(tmp_path / "out"), "--as-user", "rita")
    assert (tmp_path / "out" / data_file).exists()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["rows"] == 2 and manifest["format"] == fmt and manifest["exported_by"] == "command:rita"
    event = AuditEvent.objects.get(action=AuditEvent.Action.EXPORT)
    assert event.actor_name.startswith("cli:") and event.details["as"] == "command:rita"  # the OS user, and the label
    assert "2 rows written" in capsys.readouterr().out


def test_export_dataset_refuses_an_unknown_dataset_or_a_used_folder(built, tmp_path):
    with pytest.raises(CommandError, match="No dataset with id"):
        call_command("export_dataset", 999999, "--format", "jsonl", "--out", str(tmp_path / "a"))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    with pytest.raises(CommandError, match="not an empty folder"):
        call_command("export_dataset", built.pk, "--format", "jsonl", "--out", str(tmp_path / "b"))
