"""The estimate of a training run: optimizer steps as the trainer counts them, timed by earlier
finished runs of the same kind and model."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.webapp.training.factories import make_dataset, make_labeled_corpus
from webapp.lifecycle.status import JobStatus
from webapp.training import estimates, runs
from webapp.training.models import TrainingRun


def ago(**delta):
    return timezone.now() - timedelta(**delta)


@pytest.fixture
def training_dataset(db, model_version):
    return make_dataset(make_labeled_corpus(12), model_version, n_examples=12)


def test_a_training_run_counts_optimizer_steps_as_the_trainer_does(training_dataset, model_version):
    run_spec = runs.RunSpec(
        kind="dsm",
        model_version=model_version,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4, "epochs": 3.0}},
    )
    estimate = estimates.training_run(run_spec)
    assert (estimate.amount, estimate.unit, estimate.queue) == (9, "steps", "training")  # 3 epochs x 12/4
    capped = runs.RunSpec(
        kind="dsm",
        model_version=model_version,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4, "max_steps": 2}},
    )
    assert estimates.training_run(capped).amount == 2


def test_a_training_run_is_timed_by_earlier_runs_of_the_same_kind_and_model(training_dataset, model_version):
    def finished_run(kind, steps, seconds):
        TrainingRun.objects.create(
            kind=kind,
            model_version=model_version,
            dataset=training_dataset,
            status=JobStatus.DONE,
            step=steps,
            total_steps=steps,
            started=ago(seconds=seconds + 5),
            finished=ago(seconds=5),
        )

    finished_run("cpt", 100, 1.0)  # another kind: not this run's rate
    run_spec = runs.RunSpec(
        kind="dsm",
        model_version=model_version,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4}},
    )
    assert estimates.training_run(run_spec).seconds is None
    finished_run("dsm", 10, 50.0)  # 0.2 steps/s
    estimate = estimates.training_run(run_spec)
    assert estimate.seconds == pytest.approx(15.0, rel=0.01)  # 3 steps
    assert estimate.basis.startswith("measured on 1 earlier dsm run of this model on the training queue")


def test_kinds_without_optimizer_steps_get_no_estimate(model_version):
    assert estimates.training_run(runs.RunSpec(kind="prompting", model_version=model_version)) is None
