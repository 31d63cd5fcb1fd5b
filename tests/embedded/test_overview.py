"""The corpus list and the task list on SQLite, in a fixed number of queries (webapp.corpus.stats):
the corpus counters are kept by SQLite's triggers too (corpus migration 0016); review decisions,
whose task counter only PostgreSQL keeps, are counted."""

import pytest
from django.urls import reverse

from ml.relevance import default_config_key
from tests.projects import default_project
from webapp.corpus.models import Annotation, Corpus, Note
from webapp.corpus.stats import corpus_summaries, task_summaries
from webapp.review.models import PeakDecision

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


@pytest.fixture
def two_corpora(tasks):
    ward = Corpus.objects.create(project=default_project(), name="ward", language="en")
    clinic = Corpus.objects.create(project=default_project(), name="clinic", language="it")
    notes = [Note.objects.create(corpus=ward, external_id=f"w{i}", text=f"Note {i}.") for i in range(3)]
    Note.objects.create(corpus=clinic, external_id="c1", text="Nota.")
    Annotation.objects.create(note=notes[0], task=tasks["heart"], label="y", evidence=[], annotator_name="gold")
    Annotation.objects.create(note=notes[1], task=tasks["heart"], label="n", evidence=[], annotator_name="gold")
    return ward, clinic


def test_the_corpus_list_counts_notes_and_annotations(
    two_corpora, client, researcher, django_assert_max_num_queries, site_admin
):
    with django_assert_max_num_queries(3):
        counted = {s.corpus.name: (s.notes, s.annotations) for s in corpus_summaries(site_admin)}
    assert counted == {"ward": (3, 2), "clinic": (1, 0)}
    Note.objects.filter(external_id="w0").delete()  # its annotation goes with it
    assert {s.corpus.name: (s.notes, s.annotations) for s in corpus_summaries(site_admin)}["ward"] == (2, 1)
    client.force_login(researcher)
    page = client.get(reverse("corpus:list"))
    shown = {s.corpus.name: s.notes for s in page.context["corpora"]}
    assert page.status_code == 200 and shown == {"ward": 2, "clinic": 1}


def test_the_task_list_counts_review_decisions(note, tasks, model, clinician, client, site_admin):
    PeakDecision.objects.bulk_create(
        PeakDecision(
            note=note,
            task=tasks["pacemaker"],
            model_version=model,
            method="attnlrp",
            template="en",
            config_key=default_config_key("attnlrp", "en"),
            start=start,
            end=start + 2,
            decision="accept",
            reviewer=clinician,
        )
        for start in (0, 3, 6)
    )
    counted = {"heart": 0, "pacemaker": 3, "pressure": 0, "heldout": 0}
    assert {s.task.slug: s.decisions for s in task_summaries(site_admin)} == counted
    client.force_login(clinician)
    page = client.get(reverse("corpus:tasks"))
    assert {s.task.slug: s.decisions for s in page.context["tasks"]} == counted
