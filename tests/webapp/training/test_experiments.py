"""Experiment files: validated whole before anything runs; presets, defaults and run configs merge."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from webapp.training import experiments
from webapp.training.models import TrainingRun


def experiment(**changes):
    data = {
        "name": "t",
        "model": "tiny-llama",
        "split": {"corpus": "ward"},
        "defaults": {"train": {"max_steps": 2}, "heads": {"epochs": 3}},
        "runs": [
            {"id": "dsm", "preset": "dsm-full", "dataset": {"name": "ward-dsm"}},
            {"id": "dsm-ch", "preset": "ch", "model": "@dsm", "config": {"heads": {"epochs": 4}}},
            {"id": "peak", "preset": "one-peak", "dataset": {"name": "ward-dsm"}},
        ],
    }
    data.update(changes)
    return data


def test_a_file_is_planned_with_preset_then_defaults_then_run_config(dataset, model_version):
    planned = experiments.parse(experiment()).runs
    assert [(p.key, p.kind, p.depends_on) for p in planned] == [
        ("dsm", "dsm", None),
        ("dsm-ch", "heads", "dsm"),
        ("peak", "dsm", None),
    ]
    assert planned[0].config == {"train": {"max_steps": 2}} and planned[0].dataset == dataset
    assert planned[1].config == {"heads": {"epochs": 4}}
    assert planned[2].config == {"train": {"epochs": 5.0, "max_steps": 2}}
    assert planned[0].name == "t-dsm"


def test_every_problem_is_reported_before_anything_runs(dataset, model_version):
    data = experiment(
        runs=[
            {"id": "a", "preset": "dsm-full", "dataset": {"name": "nope"}, "config": {"train": {"lr": -1}}},
            {"id": "a", "preset": "ch", "model": "@later"},
            {"id": "c", "preset": "warp-speed"},
            {"id": "d", "kind": "heads", "split": {"corpus": "elsewhere"}, "colour": "red"},
        ]
    )
    with pytest.raises(experiments.ExperimentError) as caught:
        experiments.parse(data)
    message = str(caught.value)
    for words in (
        "no finished dataset",
        "learning rate must be greater than 0",
        "id is used twice",
        "@later must name an earlier run",
        "Unknown preset 'warp-speed'",
        "no corpus named 'elsewhere'",
        "unknown key(s) colour",
    ):
        assert words in message, message
    assert TrainingRun.objects.count() == 0


def test_the_command_checks_a_file(tmp_path, dataset, model_version, capsys):
    path = tmp_path / "e.json"
    path.write_text(json.dumps(experiment()))
    call_command("run_experiment", str(path), "--check")
    assert "3 run(s) planned" in capsys.readouterr().err
    path.write_text("{not json")
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("run_experiment", str(path))


def test_the_documented_example_files_are_valid_json_with_known_presets():
    from pathlib import Path

    from webapp.training import presets

    folder = Path(__file__).resolve().parents[3] / "docs" / "experiments"
    for path in folder.glob("*.json"):
        data = json.loads(path.read_text())
        assert {run.get("preset") for run in data["runs"]} <= set(presets.PRESETS), path.name


def test_the_documented_example_files_have_valid_settings_and_references():
    """Every run's settings (preset, then the file's defaults, then its own config) pass the same
    validation as the launch form, and every "@id" names an earlier run of its file."""
    from pathlib import Path

    from webapp.training import presets

    folder = Path(__file__).resolve().parents[3] / "docs" / "experiments"
    files = sorted(folder.glob("*.json"))
    assert any(path.name == "paper-all-rows.json" for path in files)
    for path in files:
        data = json.loads(path.read_text())
        seen = set()
        for run in data["runs"]:
            preset = presets.get(run["preset"])
            _, problems = experiments.run_settings(run, data, preset.kind, preset)
            assert not problems, (path.name, run["id"], problems)
            model = run.get("model", "")
            assert not model.startswith("@") or model[1:] in seen, (path.name, run["id"])
            seen.add(run["id"])


def test_the_markdown_summary_has_one_line_per_run():
    rows = [
        {
            "id": "a",
            "run": 1,
            "kind": "heads",
            "preset": "ch",
            "status": "done",
            "seconds": 3.5,
            "macro_f1": {"estimate": 0.5, "low": 0.4, "high": 0.6},
            "held_out": None,
        }
    ]
    assert experiments.markdown(rows).splitlines()[-1] == "| 1 | a | ch | done | 50.0 (40.0-60.0) | - | 3.5 |"
