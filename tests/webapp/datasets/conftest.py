"""Fixtures of the dataset tests: a corpus, tasks, a model version, profiles and the hand-made
maps of tests/webapp/datasets/fabricate.py."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note, Task
from webapp.datasets.models import DatasetVersion
from webapp.pipeline.models import ModelVersion, PeakProfile

from .fabricate import PEAKS, TEXT, add_map


@pytest.fixture
def model(db):
    return ModelVersion.objects.create(name="tiny-test", family="llama", path="tiny-test")


@pytest.fixture
def sharp(db):
    return PeakProfile.objects.create(name="sharp", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def paper(db):
    return PeakProfile.objects.create(name="paper-test", version=1, kernel_size=3, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def tasks(db):
    def task(slug, held_out=False):
        return Task.objects.create(slug=slug, description=f"{slug} described", options=["y", "n"], held_out=held_out)

    return {
        "heart": task("heart"),
        "pacemaker": task("pacemaker"),
        "pressure": task("pressure"),
        "heldout": task("heldout", held_out=True),
    }


@pytest.fixture
def corpus(db):
    """De-identified, so its data may leave: these tests are of builds and exports, not of the gate
    (tests/webapp/datasets/test_gate.py, tests/webapp/deid/test_gate.py)."""
    return Corpus.objects.create(project=default_project(), name="ward", language="en", deidentified=True)


@pytest.fixture
def note(corpus):
    return Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)


@pytest.fixture
def maps(note, tasks, model):
    return {slug: add_map(note, tasks[slug], model, PEAKS[slug]) for slug in PEAKS}


@pytest.fixture
def make_dataset(corpus, model, sharp):
    def make(name="ds", **fields):
        fields = {"corpus": corpus, "model_version": model, "profile": sharp, **fields}
        return DatasetVersion.objects.create(name=name, version=DatasetVersion.next_version(name), **fields)

    return make


@pytest.fixture
def built(make_dataset, maps):
    """A DONE dsm dataset built from the hand-made maps."""
    from webapp.datasets import building

    dataset = make_dataset()
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    return dataset
