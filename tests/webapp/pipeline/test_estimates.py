"""The estimate of a relevance job: prompts = notes x tasks per note, timed by the finished chunks
of earlier jobs of the same model (6 notes and 4 tasks from the conftest)."""

import pytest

from tests.webapp.pipeline.factories import make_model_version, spec
from webapp.lifecycle.estimates import RATE_SAMPLE
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import estimates, jobs
from webapp.pipeline.models import RelevanceJob


def measured_job(corpus, model, tasks, *, done, seconds):
    """A relevance job of `model` whose finished chunks computed `done` prompts in `seconds`."""
    job = jobs.launch(spec(corpus, model, tasks), enqueue=False)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, total=done, done=done, seconds_done=seconds)
    return job


def test_a_relevance_job_is_notes_times_the_tasks_sampled_per_note(corpus, tasks, model_version):
    estimate = estimates.relevance_job(spec(corpus, model_version, tasks, task_selection="sample", sample_k=3))
    assert (estimate.amount, estimate.unit, estimate.queue) == (6 * 3, "prompts", "relevance")
    listed = estimates.relevance_job(spec(corpus, model_version, tasks[:2], note_filter={"limit": 4}))
    assert listed.amount == 4 * 2


def test_without_earlier_jobs_of_the_model_there_is_no_time(corpus, tasks, model_version):
    other = make_model_version(name="other-model")
    measured_job(corpus, other, tasks, done=100, seconds=10.0)  # another model's rate says nothing
    estimate = estimates.relevance_job(spec(corpus, model_version, tasks))
    assert estimate.seconds is None and estimate.duration == "unknown"
    assert estimate.basis == "no measured rate yet for jobs of this model on the relevance queue"


def test_the_rate_comes_from_the_finished_chunks_of_earlier_jobs_of_the_model(corpus, tasks, model_version):
    measured_job(corpus, model_version, tasks, done=100, seconds=50.0)
    measured_job(corpus, model_version, tasks, done=300, seconds=150.0)  # 2 prompts/s over both
    estimate = estimates.relevance_job(spec(corpus, model_version, tasks))  # 6 notes x 4 tasks
    assert estimate.amount == 24 and estimate.seconds == pytest.approx(12.0)
    assert estimate.basis.startswith("measured on 2 earlier jobs of this model on the relevance queue")


def test_only_the_most_recent_jobs_make_the_rate(corpus, tasks, model_version):
    measured_job(corpus, model_version, tasks, done=1, seconds=1000.0)  # old and slow: out of the sample
    for _ in range(RATE_SAMPLE):
        measured_job(corpus, model_version, tasks, done=10, seconds=1.0)
    assert estimates.relevance_job(spec(corpus, model_version, tasks)).seconds == pytest.approx(2.4)


def test_the_estimate_costs_a_few_queries_whatever_the_history(
    corpus, tasks, model_version, django_assert_max_num_queries
):
    for _ in range(8):
        measured_job(corpus, model_version, tasks, done=10, seconds=1.0)
    job_spec = spec(corpus, model_version, tasks)
    with django_assert_max_num_queries(3):
        estimates.relevance_job(job_spec)
