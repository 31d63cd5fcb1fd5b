"""`manage.py run_experiment` runs an experiment file in-process, the worker's code path without
the queue: a CH run on a tiny random model, then the same on the DSM model a DSM run produced."""

import json

import pytest
from django.core.management import call_command

from tests.webapp.training.factories import make_dataset, make_labeled_corpus, make_model_version
from webapp.training.models import TrainingRun


@pytest.fixture
def tiny_model_dir(tmp_path):
    from tests.ml.conftest import build_model, build_tokenizer

    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny"


@pytest.mark.slow
def test_an_experiment_file_runs_headless_and_chains_a_produced_model(db, tmp_path, settings, tiny_model_dir, capsys):
    settings.DATA_DIR = tmp_path / "data"
    corpus = make_labeled_corpus(12)
    model = make_model_version(tiny_model_dir)
    make_dataset(corpus, model, n_examples=4)
    path = tmp_path / "experiment.json"
    path.write_text(
        json.dumps(
            {
                "name": "t",
                "model": model.name,
                "split": {"corpus": corpus.name},
                "defaults": {
                    "train": {
                        "max_steps": 1,
                        "warmup_ratio": 0.0,
                        "effective_batch_size": 2,
                        "micro_batch_size": 2,
                        "max_length": 160,
                    },
                    "heads": {"epochs": 1},
                    "evaluation": {"n_resamples": 20},
                },
                "runs": [
                    {"id": "dsm", "preset": "dsm-full", "dataset": {"name": "ward-dsm"}},
                    {"id": "dsm-ch", "preset": "ch", "model": "@dsm"},
                    {"id": "base-ch", "preset": "ch"},
                ],
            }
        )
    )
    call_command("run_experiment", str(path))
    out = capsys.readouterr().out
    summary = json.loads(out[: out.rindex("}") + 1])
    assert [(row["id"], row["status"]) for row in summary["runs"]] == [
        ("dsm", "done"),
        ("dsm-ch", "done"),
        ("base-ch", "done"),
    ]
    assert "| run | id | kind | status |" in out
    dsm, dsm_ch, base_ch = (TrainingRun.objects.get(pk=row["run"]) for row in summary["runs"])
    assert dsm_ch.model_version == dsm.produced_model and base_ch.model_version == model
    assert dsm_ch.split_id == base_ch.split_id and base_ch.macro_f1 is not None
    assert dsm.provenance["code_version"] and dsm.worker == "run_experiment"


@pytest.mark.slow
def test_train_run_executes_one_queued_run_here(db, tmp_path, settings, tiny_model_dir, capsys):
    from webapp.training import runs
    from webapp.training.models import RunKind

    settings.DATA_DIR = tmp_path / "data"
    corpus = make_labeled_corpus(8)
    model = make_model_version(tiny_model_dir)
    run = runs.launch(
        runs.RunSpec(
            kind=RunKind.HEADS,
            preset="ch",
            model_version=model,
            split_corpus=corpus,
            config={"heads": {"epochs": 1}, "evaluation": {"n_resamples": 20}},
        ),
        enqueue=False,
    )
    call_command("train_run", str(run.pk))
    assert f"run {run.pk}: done" in capsys.readouterr().out
    run.refresh_from_db()
    assert run.status == "done" and run.worker.startswith("train_run@")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="is not queued"):
        call_command("train_run", str(run.pk))
