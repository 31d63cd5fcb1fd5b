"""Fixtures of the review tests: the ward note of `fabricate` with maps, tasks, two model
versions (base and its DSM child), the `sharp` profile and gold evidence."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Annotation, Corpus, Note, Task
from webapp.pipeline.models import ModelVersion, PeakProfile

from .fabricate import TEXT, add_map, word_span


@pytest.fixture
def corpus(db):
    """De-identified, so the team's export may leave (its gate: tests/webapp/review/test_gate.py)."""
    return Corpus.objects.create(project=default_project(), name="ward", language="en", deidentified=True)


@pytest.fixture
def note(corpus):
    return Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)


@pytest.fixture
def tasks(db):
    return {
        "heart": Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"]),
        "pacemaker": Task.objects.create(
            slug="presence-of-pacemaker", description="presence of pacemaker", options=["y", "n"]
        ),
    }


@pytest.fixture
def base(db):
    return ModelVersion.objects.create(name="base-model", family="llama", path="base-model")


@pytest.fixture
def dsm(base):
    return ModelVersion.objects.create(name="dsm-model", family="llama", path="dsm-model", parent=base)


@pytest.fixture
def sharp(db):
    return PeakProfile.objects.create(name="sharp", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def maps(note, tasks, base, dsm):
    return {
        "heart": add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.8, "febrile": 0.1}),
        "pacemaker": add_map(note, tasks["pacemaker"], base, {"Pacemaker": 1.0, "2019": 0.5}),
        "heart-dsm": add_map(note, tasks["heart"], dsm, {"130": 1.0, "tachycardic": 0.9, "Pacemaker": 0.5}),
    }


@pytest.fixture
def gold(note, tasks):
    return Annotation.objects.create(
        note=note,
        task=tasks["heart"],
        label="y",
        annotator_name="import:gold",
        evidence=[list(word_span(TEXT, "130")), list(word_span(TEXT, "tachycardic"))],
    )
