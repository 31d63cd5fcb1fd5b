"""Which relevance configuration a dataset is built from: its jobs', or with no job chosen the one
configuration whose maps match; never a silent pick between several (form, build and stats agree)."""

import numpy as np
import pytest
from django.urls import reverse

from ml.relevance import RelevanceConfig, default_config_key
from webapp.datasets import building
from webapp.datasets.models import BuildError, DatasetVersion, MaskedExample
from webapp.pipeline.models import JobStatus, RelevanceJob, RelevanceMap

from .fabricate import PEAKS, word_offsets

SPAN = RelevanceConfig(explain="span")
# Peaks of the span maps differ from the default ones, so the labels tell which maps were read:
# heart {1, 6} -> masks "pacemaker"; pacemaker {1, 10} -> masks "bp"
SPAN_PEAKS = {"heart": {1, 6}, "pacemaker": {1, 10}}


def add_span_maps(note, tasks, model, job=None):
    for slug, peaked in SPAN_PEAKS.items():
        offsets = word_offsets(note.text)
        scores = np.zeros(len(offsets), np.float32)
        scores[list(peaked)] = 0.9
        RelevanceMap.objects.store_one(note, tasks[slug], model, offsets, scores, config_key=SPAN.key, job=job)


def span_job(corpus, model):
    return RelevanceJob.objects.create(
        corpus=corpus,
        model_version=model,
        status=JobStatus.DONE,
        explain="span",
        config=SPAN.to_dict(),
        config_key=SPAN.key,
    )


def build(dataset):
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset


def labels(dataset):
    return sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True))


def test_with_no_job_chosen_the_only_configuration_with_maps_is_built_even_if_not_the_default(
    make_dataset, note, tasks, model
):
    add_span_maps(note, tasks, model)
    dataset = build(make_dataset())
    assert dataset.status == JobStatus.DONE, dataset.error
    assert labels(dataset) == ["bp", "pacemaker"] and dataset.maps_total == 2
    assert dataset.stats["config_key"] == SPAN.key == dataset.config_key


def test_with_no_job_chosen_maps_of_two_configurations_make_the_build_fail_naming_both(
    make_dataset, maps, note, tasks, model
):
    add_span_maps(note, tasks, model)
    dataset = building.claim(make_dataset().pk)
    with pytest.raises(BuildError) as error:
        building.build(dataset)
    message = str(error.value)
    assert "2 relevance configurations" in message
    assert SPAN.key in message and default_config_key("attnlrp", "en") in message
    assert not MaskedExample.objects.exists()


def test_the_jobs_of_one_configuration_choose_it(make_dataset, maps, note, tasks, model, corpus):
    job = span_job(corpus, model)
    add_span_maps(note, tasks, model, job=job)
    dataset = make_dataset()
    dataset.jobs.set([job])
    dataset = build(dataset)
    assert labels(dataset) == ["bp", "pacemaker"] and dataset.maps_total == 2
    assert dataset.stats["config_key"] == SPAN.key


def test_the_form_asks_for_the_jobs_of_one_configuration_when_several_have_maps(
    client, researcher, corpus, model, sharp, maps, note, tasks, django_capture_on_commit_callbacks
):
    job = span_job(corpus, model)
    add_span_maps(note, tasks, model, job=job)
    form = {
        "name": "first",
        "corpus": corpus.pk,
        "model_version": model.pk,
        "method": "attnlrp",
        "template": "en",
        "profile": sharp.pk,
        "mode": "dsm",
        "seed": 0,
        "mask_token": "<mask>",
    }
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form)
    page = response.content.decode()
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert "2 relevance configurations" in page and SPAN.key in page
    assert "None chosen: every matching map, when they come from one relevance configuration" in page

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(reverse("datasets:new"), {**form, "jobs": [job.pk]})
    dataset = DatasetVersion.objects.get()
    assert response.status_code == 302 and dataset.config_key == SPAN.key


def test_the_default_configuration_alone_still_builds_as_before(make_dataset, maps):
    dataset = build(make_dataset())
    assert labels(dataset) == ["bp", "pacemaker"] and dataset.stats["config_key"] == default_config_key("attnlrp", "en")
    assert len(PEAKS) == 4 and dataset.maps_total == 3
