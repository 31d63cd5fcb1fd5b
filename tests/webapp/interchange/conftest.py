"""Fixtures: a corpus with notes (one holding an emoji) and two tasks."""

import pytest

from webapp.corpus.models import Corpus, Note, Task

TEXTS = {
    "n1": "Pt 😀 reports fever and chest pain. HR 120.",
    "n2": "No fever. HR 60, pacemaker in place.",
}


def make_corpus(**fields) -> Corpus:
    """A corpus, in the default project where corpora belong to projects."""
    if any(f.name == "project" for f in Corpus._meta.get_fields()):
        from tests.projects import default_project

        fields["project"] = default_project()
    return Corpus.objects.create(**fields)


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
