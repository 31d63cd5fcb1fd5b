"""Estimates before work: amounts, rates measured on earlier work of the same model and queue,
the confirmation threshold, and the confirmation a form posts back."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.webapp.evaluation.factories import make_annotated_corpus
from tests.webapp.evaluation.factories import spec as evaluation_spec
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from tests.webapp.training.factories import make_dataset
from webapp.datasets.models import DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import estimates
from webapp.lifecycle.estimates import Estimate
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import jobs
from webapp.pipeline.models import PeakProfile, RelevanceJob
from webapp.training import runs
from webapp.training.models import TrainingRun


@pytest.fixture
def corpus(db):
    return make_corpus(6)


@pytest.fixture
def tasks(db):
    return make_tasks()


@pytest.fixture
def model(db):
    return make_model_version()


def measured_job(corpus, model, tasks, *, done, seconds):
    """A relevance job of `model` whose finished chunks computed `done` prompts in `seconds`."""
    job = jobs.launch(spec(corpus, model, tasks), enqueue=False)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, total=done, done=done, seconds_done=seconds)
    return job


def ago(**delta):
    return timezone.now() - timedelta(**delta)


# --- the estimate itself -------------------------------------------------------------------------


def test_it_asks_for_a_confirmation_above_the_seconds_threshold(settings):
    settings.LAUNCH_CONFIRM_SECONDS = 600
    assert Estimate(10, "prompts", 601.0, "measured").needs_confirmation
    assert not Estimate(10_000_000, "prompts", 600.0, "measured").needs_confirmation


def test_without_a_rate_it_asks_above_the_amount_threshold(settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 1000
    assert Estimate(1001, "prompts", None, "none").needs_confirmation
    assert not Estimate(1000, "prompts", None, "none").needs_confirmation


def test_a_confirmation_holds_only_for_at_least_the_amount_confirmed(settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 10
    large = Estimate(500, "prompts", None, "none")
    assert not large.confirmed_by({})
    assert not large.confirmed_by({"confirmed": "499"})  # the form grew after the confirmation
    assert not large.confirmed_by({"confirmed": "yes"})
    assert large.confirmed_by({"confirmed": "500"})
    assert Estimate(5, "prompts", None, "none").confirmed_by({})  # small: no confirmation needed
    assert not estimates.waits_for_confirmation(None, {})  # no estimate: launches as before


def test_the_question_says_the_amount_the_time_and_the_worker():
    estimate = Estimate(12_400, "prompts", 7500.0, "measured on 2 earlier jobs", queue="relevance")
    assert estimate.question == (
        "This is 12,400 prompts, about 2 h 05 min on one worker of the relevance queue. Launch it?"
    )
    unknown = Estimate(12_400, "prompts", None, "no measured rate yet for jobs of this model", queue="relevance")
    assert "no time can be estimated yet (no measured rate yet" in unknown.question


@pytest.mark.parametrize(
    "seconds, words", [(42, "42 s"), (61, "2 min"), (3600, "1 h 00 min"), (7500, "2 h 05 min"), (3 * 86400, "3.0 days")]
)
def test_durations_read_in_words(seconds, words):
    assert estimates.in_words(seconds) == words


# --- relevance jobs ------------------------------------------------------------------------------


def test_a_relevance_job_is_notes_times_the_tasks_sampled_per_note(corpus, tasks, model):
    estimate = estimates.relevance_job(spec(corpus, model, tasks, task_selection="sample", sample_k=3))
    assert (estimate.amount, estimate.unit, estimate.queue) == (6 * 3, "prompts", "relevance")
    listed = estimates.relevance_job(spec(corpus, model, tasks[:2], note_filter={"limit": 4}))
    assert listed.amount == 4 * 2


def test_without_earlier_jobs_of_the_model_there_is_no_time(corpus, tasks, model):
    other = make_model_version(name="other-model")
    measured_job(corpus, other, tasks, done=100, seconds=10.0)  # another model's rate says nothing
    estimate = estimates.relevance_job(spec(corpus, model, tasks))
    assert estimate.seconds is None and estimate.duration == "unknown"
    assert estimate.basis == "no measured rate yet for jobs of this model on the relevance queue"


def test_the_rate_comes_from_the_finished_chunks_of_earlier_jobs_of_the_model(corpus, tasks, model):
    measured_job(corpus, model, tasks, done=100, seconds=50.0)
    measured_job(corpus, model, tasks, done=300, seconds=150.0)  # 2 prompts/s over both
    estimate = estimates.relevance_job(spec(corpus, model, tasks))  # 6 notes x 4 tasks
    assert estimate.amount == 24 and estimate.seconds == pytest.approx(12.0)
    assert estimate.basis.startswith("measured on 2 earlier jobs of this model on the relevance queue")


def test_only_the_most_recent_jobs_make_the_rate(corpus, tasks, model):
    measured_job(corpus, model, tasks, done=1, seconds=1000.0)  # old and slow: out of the sample
    for _ in range(estimates.RATE_SAMPLE):
        measured_job(corpus, model, tasks, done=10, seconds=1.0)
    assert estimates.relevance_job(spec(corpus, model, tasks)).seconds == pytest.approx(2.4)


def test_the_estimate_costs_a_few_queries_whatever_the_history(corpus, tasks, model, django_assert_max_num_queries):
    for _ in range(8):
        measured_job(corpus, model, tasks, done=10, seconds=1.0)
    job_spec = spec(corpus, model, tasks)
    with django_assert_max_num_queries(3):
        estimates.relevance_job(job_spec)


# --- dataset builds ------------------------------------------------------------------------------


def test_a_build_is_timed_by_earlier_finished_builds_of_the_model(corpus, model):
    profile = PeakProfile.objects.create(name="p", version=1)
    assert estimates.dataset_build(model, 400).seconds is None
    DatasetVersion.objects.create(
        name="old",
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=JobStatus.DONE,
        maps_total=200,
        started=ago(seconds=110),
        finished=ago(seconds=10),
    )  # 2 maps/s
    DatasetVersion.objects.create(
        name="failed",
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=JobStatus.FAILED,
        maps_total=5,
        started=ago(seconds=1000),
        finished=ago(seconds=10),
    )  # not a measure of a build
    estimate = estimates.dataset_build(model, 400)
    assert (estimate.amount, estimate.unit, estimate.queue) == (400, "maps", "default")
    assert estimate.seconds == pytest.approx(200.0, rel=0.01)
    assert estimate.basis.startswith("measured on 1 earlier build of this model on the default queue")


# --- training runs -------------------------------------------------------------------------------


@pytest.fixture
def training_dataset(db, model):
    from tests.webapp.training.factories import make_labeled_corpus

    return make_dataset(make_labeled_corpus(12), model, n_examples=12)


def test_a_training_run_counts_optimizer_steps_as_the_trainer_does(training_dataset, model):
    run_spec = runs.RunSpec(
        kind="dsm",
        model_version=model,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4, "epochs": 3.0}},
    )
    estimate = estimates.training_run(run_spec)
    assert (estimate.amount, estimate.unit, estimate.queue) == (9, "steps", "training")  # 3 epochs x 12/4
    capped = runs.RunSpec(
        kind="dsm",
        model_version=model,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4, "max_steps": 2}},
    )
    assert estimates.training_run(capped).amount == 2


def test_a_training_run_is_timed_by_earlier_runs_of_the_same_kind_and_model(training_dataset, model):
    def finished_run(kind, steps, seconds):
        TrainingRun.objects.create(
            kind=kind,
            model_version=model,
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
        model_version=model,
        dataset=training_dataset,
        config={"train": {"effective_batch_size": 4, "micro_batch_size": 4}},
    )
    assert estimates.training_run(run_spec).seconds is None
    finished_run("dsm", 10, 50.0)  # 0.2 steps/s
    estimate = estimates.training_run(run_spec)
    assert estimate.seconds == pytest.approx(15.0, rel=0.01)  # 3 steps
    assert estimate.basis.startswith("measured on 1 earlier dsm run of this model on the training queue")


def test_kinds_without_optimizer_steps_get_no_estimate(model):
    assert estimates.training_run(runs.RunSpec(kind="prompting", model_version=model)) is None


# --- evaluations ---------------------------------------------------------------------------------


def test_an_evaluation_is_pairs_times_configurations_timed_by_earlier_evaluations(db):
    from tests.webapp.evaluation.factories import annotated_pairs_count

    corpus, _ = make_annotated_corpus()
    model = make_model_version()
    pairs = annotated_pairs_count(corpus)
    two_configs = evaluation_spec(corpus, model, methods=["grad_input", "attnlrp"])
    estimate = estimates.evaluation(two_configs)
    assert (estimate.amount, estimate.unit, estimate.seconds) == (2 * pairs, "prompts", None)
    assert estimates.evaluation(evaluation_spec(corpus, model, max_pairs=1)).amount == 1
    profile = PeakProfile.objects.create(name="p", version=1)
    RelevanceEvaluation.objects.create(
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=JobStatus.DONE,
        done=40,
        total=40,
        seconds_per_prompt=0.5,
    )
    assert estimates.evaluation(two_configs).seconds == pytest.approx(pairs * 2 * 0.5)
