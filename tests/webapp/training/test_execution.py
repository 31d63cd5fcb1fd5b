"""How a run ends: done with its fields, cancelled, or failed with a message that never quotes data;
and its heartbeat while it trains."""

import time

import pytest

from webapp.training import causal, execution, runs
from webapp.training.models import RunKind, RunLog, TrainingRun

# The fixture dataset is one optimizer step: without warmup, so the launch accepts it.
LEARNS = {"train": {"warmup_ratio": 0.0}}


@pytest.fixture
def claimed(dataset, model_version):
    run = runs.launch(runs.RunSpec(kind=RunKind.DSM, model_version=model_version, dataset=dataset, config=LEARNS))
    return runs.claim(run.pk, worker="w1")


def with_runner(monkeypatch, runner):
    monkeypatch.setitem(execution.RUNNERS, RunKind.DSM, runner)


def test_a_finished_run_stores_its_fields_provenance_and_time(monkeypatch, claimed):
    with_runner(monkeypatch, lambda run, reporter: {"results": {"x": 1}})
    assert execution.execute(claimed) == "done"
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert run.status == "done" and run.results["x"] == 1 and "seconds" in run.results
    assert run.provenance["libraries"]["transformers"] and run.provenance["attempts"][0]["worker"] == "w1"
    assert run.code_version == run.provenance["code_version"][:64]


def test_an_unexpected_error_is_reported_without_its_text(monkeypatch, claimed, caplog):
    def runner(run, reporter):
        note_text = "Patient Mario " + "Rossi, 67, pacemaker"  # the traceback shows source lines, not values
        raise RuntimeError(note_text)

    with_runner(monkeypatch, runner)
    assert execution.execute(claimed) == "failed"
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert "unexpected error (RuntimeError)" in run.error and "Rossi" not in run.error
    assert not RunLog.objects.filter(message__contains="Rossi").exists()
    assert "Rossi" not in caplog.text


def test_a_refusal_raised_inside_ml_training_is_shown(monkeypatch, claimed):
    from ml.training import CausalLMConfig

    with_runner(monkeypatch, lambda run, reporter: CausalLMConfig(lr=-1))
    assert execution.execute(claimed) == "failed"
    assert TrainingRun.objects.get(pk=claimed.pk).error == "ml.training refused the run: lr must be > 0, got -1"


def test_a_value_error_from_elsewhere_is_unexpected_and_its_text_is_not_shown(monkeypatch, claimed):
    def runner(run, reporter):
        raise ValueError("could not convert 'Rossi' to float")  # e.g. numpy quoting a value

    with_runner(monkeypatch, runner)
    assert execution.execute(claimed) == "failed"
    error = TrainingRun.objects.get(pk=claimed.pk).error
    assert "unexpected error (ValueError)" in error and "Rossi" not in error


def test_a_training_error_says_what_ml_said(monkeypatch, claimed):
    from ml.training import TrainingError

    def runner(run, reporter):
        raise TrainingError("no training example: 3 pairs given, 3 do not fit max_length 16")

    with_runner(monkeypatch, runner)
    execution.execute(claimed)
    assert TrainingRun.objects.get(pk=claimed.pk).error.startswith("no training example")


def test_a_cancel_records_the_checkpoint_step(monkeypatch, claimed):
    from ml.training import TrainingCancelled

    def runner(run, reporter):
        raise TrainingCancelled("cancelled at step 7 of 10", step=7)

    with_runner(monkeypatch, runner)
    assert execution.execute(claimed) == "cancelled"
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert (run.status, run.checkpoint_step) == ("cancelled", 7)
    assert RunLog.objects.filter(run=run, message__startswith="Cancelled at step 7").exists()


def test_another_rank_writes_nothing(monkeypatch, claimed):
    with_runner(monkeypatch, lambda run, reporter: {})
    assert execution.execute(claimed, write=False) == "done"
    assert TrainingRun.objects.get(pk=claimed.pk).status == "running"


def test_a_patched_process_refuses_to_train(monkeypatch, claimed):
    import ml.lrp

    monkeypatch.setattr(ml.lrp, "_PATCHED", {"llama"})
    with_runner(monkeypatch, lambda run, reporter: pytest.fail("a patched process trained"))
    assert execution.execute(claimed) == "failed"
    assert "must not train" in TrainingRun.objects.get(pk=claimed.pk).error


def test_dsm_pairs_use_the_papers_prompt_and_cpt_the_notes(dataset):
    from ml.masking import DSM_INSTRUCTION

    pairs = causal.dataset_pairs(dataset, RunKind.DSM)
    example = dataset.examples.order_by("pk").first()
    assert pairs[0].prompt == f"{DSM_INSTRUCTION} {example.masked_text}" and pairs[0].answer == example.label
    notes = causal.dataset_pairs(dataset, RunKind.CPT)
    assert len(notes) == dataset.examples.values("note").distinct().count()
    assert notes[0].prompt == "" and notes[0].answer == example.note.text


@pytest.mark.django_db(transaction=True)  # the heartbeat thread's own connection sees committed rows only
def test_a_step_longer_than_the_stall_time_does_not_make_the_run_look_lost(
    monkeypatch, settings, dataset, model_version
):
    settings.WORK_HEARTBEAT_SECONDS, settings.WORK_STALL_SECONDS = 0.2, 1
    run = runs.launch(
        runs.RunSpec(kind=RunKind.DSM, model_version=model_version, dataset=dataset, config=LEARNS), enqueue=False
    )
    claimed = runs.claim(run.pk, worker="w1")
    seen = []

    def one_slow_step(run, reporter):  # nothing reported for 3 x the stall time, as a long CPU step
        for _ in range(6):
            time.sleep(0.5)
            seen.append(TrainingRun.objects.get(pk=run.pk).status_text())
        return {}

    with_runner(monkeypatch, one_slow_step)
    assert execution.execute(claimed) == "done"
    assert seen == ["Running"] * 6


@pytest.fixture
def tiny_model_dir(tmp_path):
    from tests.ml.conftest import build_model, build_tokenizer

    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    return tmp_path / "tiny"


@pytest.mark.parametrize("warmup_ratio,outcome", [(0.1, "failed"), (0.0, "done")])
def test_a_run_forced_past_the_launch_checks_whose_weights_do_not_change_registers_no_model(
    db, tmp_path, settings, tiny_model_dir, warmup_ratio, outcome
):
    from tests.webapp.training.factories import make_dataset, make_labeled_corpus, make_model_version
    from webapp.pipeline.models import ModelVersion

    settings.DATA_DIR = tmp_path / "data"
    base = make_model_version(tiny_model_dir)
    dataset = make_dataset(make_labeled_corpus(4), base, n_examples=4)
    one_step = {
        "max_steps": 1,
        "effective_batch_size": 2,
        "micro_batch_size": 2,
        "max_length": 160,
        "precision": "fp32",
        "lr": 1e-3,
        "warmup_ratio": 0.0,
    }
    run = runs.launch(
        runs.RunSpec(kind=RunKind.DSM, model_version=base, dataset=dataset, config={"train": one_step}), enqueue=False
    )
    # past the launch checks: the stored configuration is changed afterwards (one step, all warmup: lr 0)
    TrainingRun.objects.filter(pk=run.pk).update(
        config={"train": {**run.config["train"], "warmup_ratio": warmup_ratio}}
    )
    assert execution.execute(runs.claim(run.pk, worker="w1")) == outcome
    run.refresh_from_db()
    if outcome == "failed":
        assert "the weights did not change" in run.error and "No model version was registered" in run.error
        assert run.produced_model is None and not ModelVersion.objects.filter(parent=base).exists()
    else:
        assert run.produced_model is not None and run.produced_model.parent == base
