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


def finished_build(corpus, model, profile, name, status, maps, seconds):
    """A build of `model` that read `maps` maps and ended `seconds` after it started."""
    return DatasetVersion.objects.create(
        name=name,
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=status,
        maps_total=maps,
        started=ago(seconds=10 + seconds),
        finished=ago(seconds=10),
    )


def test_a_build_is_timed_by_earlier_finished_builds_of_the_model(corpus, model, sharp):
    assert estimates.dataset_build(model, 400).seconds is None
    finished_build(corpus, model, sharp, "old", JobStatus.DONE, 200, 100)  # 2 maps/s
    finished_build(corpus, model, sharp, "failed", JobStatus.FAILED, 5, 990)  # not a measure of a build
    estimate = estimates.dataset_build(model, 400)
    assert (estimate.amount, estimate.unit, estimate.queue) == (400, "maps", "default")
    assert estimate.seconds == pytest.approx(200.0, rel=0.01)
    assert estimate.basis.startswith("measured on 1 earlier build of this model on the default queue")
