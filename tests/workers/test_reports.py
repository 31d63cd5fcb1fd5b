"""The review report's figures through a REAL worker process (queue "default") on PostgreSQL +
Redis: the page queues the computation, the worker stores the figures, the page reads them; a
changed decision makes the page show the last figures and queue the newer ones, which arrive."""

import pytest
from django.test import Client
from django.urls import reverse

from tests.webapp.review.fabricate import two_reviewers_one_note
from tests.workers.conftest import wait_for
from webapp.accounts.membership import add_member
from webapp.corpus.models import Corpus, Task
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import ModelVersion
from webapp.projects.models import Project
from webapp.review.models import ReportSnapshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _done(stamp_before=""):
    snapshot = ReportSnapshot.objects.get()
    return snapshot.status == JobStatus.DONE and snapshot.figures is not None and snapshot.stamp != stamp_before


def test_the_page_queues_the_report_and_a_worker_computes_and_recomputes_it(start_worker, django_user_model, settings):
    settings.REPORT_STAMP_SECONDS = 0  # every load looks at the decisions
    project = Project.objects.create(name="Report ward", slug="report-ward")
    corpus = Corpus.objects.create(project=project, name="report-ward", language="en")
    task = Task.objects.create(slug="r-heart", description="r heart rate", options=["y", "n"], project=project)
    model = ModelVersion.objects.create(name="tiny-report", family="llama", path="tiny-report")
    users = []
    for name in ("ana", "ben"):
        user = django_user_model.objects.create_user(name, password="x" * 12)
        add_member(project, user, "clinician")
        users.append(user)
    rows = two_reviewers_one_note(corpus, task, model, users)
    start_worker("default")
    client = Client()
    client.force_login(users[0])
    url = reverse("review:report")
    assert "being computed" in client.get(url, {"corpus": corpus.pk}).content.decode()
    wait_for(_done, timeout=60, message="the worker to compute the report")
    content = client.get(url, {"corpus": corpus.pk}).content.decode()
    assert "Figures computed" in content and "r heart rate" in content and "ana & ben: 2 peaks" in content

    stamp = ReportSnapshot.objects.get().stamp
    rows[-1].decision = "accept"
    rows[-1].save()
    content = client.get(url, {"corpus": corpus.pk}).content.decode()
    assert "newer ones, with the latest decisions, are being computed" in content and "ana & ben" in content
    wait_for(lambda: _done(stamp), timeout=60, message="the worker to recompute the report")
    csv = client.get(url, {"corpus": corpus.pk, "format": "csv"})
    assert b"".join(csv.streaming_content).decode().splitlines()[1].startswith("r-heart,2,2,2,4,4,0,")
