"""Fixtures: a corpus with notes (one holding an emoji) and two tasks."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Corpus, Note, Task

TEXTS = {
    "n1": "Pt 😀 reports fever and chest pain. HR 120.",
    "n2": "No fever. HR 60, pacemaker in place.",
}


def make_corpus(**fields) -> Corpus:
    """A corpus of the project the test users belong to (tests/projects.py)."""
    return Corpus.objects.create(project=default_project(), **fields)


@pytest.fixture
def ward(db):
    corpus = make_corpus(name="ward", language="en")
    for external_id, text in TEXTS.items():
        Note.objects.create(corpus=corpus, external_id=external_id, text=text)
    return corpus


@pytest.fixture
def tasks(db):
    return {
        "heart": Task.objects.create(
            slug="heart-rate", description="heart rate", options=["bradycardic", "normocardic", "tachycardic"]
        ),
        "fever": Task.objects.create(slug="fever", description="fever", options=["present", "absent"]),
    }
