"""The estimate of a dataset build: relevance maps read, timed by earlier finished builds of the
same model."""

from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.datasets import estimates
from webapp.datasets.models import DatasetVersion
from webapp.lifecycle.status import JobStatus


def ago(**delta):
    return timezone.now() - timedelta(**delta)


def test_a_build_is_timed_by_earlier_finished_builds_of_the_model(corpus, model, sharp):
    assert estimates.dataset_build(model, 400).seconds is None
    DatasetVersion.objects.create(
        name="old",
        corpus=corpus,
        model_version=model,
        profile=sharp,
        status=JobStatus.DONE,
        maps_total=200,
        started=ago(seconds=110),
        finished=ago(seconds=10),
    )  # 2 maps/s
    DatasetVersion.objects.create(
        name="failed",
        corpus=corpus,
        model_version=model,
        profile=sharp,
        status=JobStatus.FAILED,
        maps_total=5,
        started=ago(seconds=1000),
        finished=ago(seconds=10),
    )  # not a measure of a build
    estimate = estimates.dataset_build(model, 400)
    assert (estimate.amount, estimate.unit, estimate.queue) == (400, "maps", "default")
    assert estimate.seconds == pytest.approx(200.0, rel=0.01)
    assert estimate.basis.startswith("measured on 1 earlier build of this model on the default queue")
