"""The task catalog page: every task with its review decisions, read from the task row."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from ml.relevance import default_config_key
from webapp.corpus.models import Note
from webapp.pipeline.models import ModelVersion
from webapp.review.models import PeakDecision

pytestmark = pytest.mark.django_db


def test_it_shows_each_tasks_review_decisions_without_counting_them(client_for, researcher, clinician, corpus, tasks):
    note = Note.objects.create(corpus=corpus, external_id="n1", text="Heart rate 130 bpm, tachycardic.")
    model = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
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
            decision="reject",
            reviewer=clinician,
        )
        for start in range(0, 22, 3)
    )
    client = client_for(researcher)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("corpus:tasks"))
    assert response.status_code == 200
    assert [(row.task, row.decisions) for row in response.context["tasks"]] == [
        (tasks["pacemaker"], 8),  # no group sorts first
        (tasks["heart"], 0),
    ]
    html = response.content.decode()
    assert "Review decisions" in html and '<td class="num">8</td>' in html
    if connection.vendor == "postgresql":  # elsewhere the page counts them (webapp.corpus.stats)
        assert not any("review_peakdecision" in q["sql"] for q in queries.captured_queries)
