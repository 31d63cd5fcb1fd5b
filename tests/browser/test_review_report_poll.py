"""The review report's poll in real headless Chromium: a report made stale by a changed decision
shows its last figures with their time and that newer ones are coming; a real worker process
(queue "default", through Redis) recomputes the snapshot, and the page shows the new figures by
itself, without the reader reloading it."""

import pytest
from django.urls import reverse

from tests.conftest import _make_user
from tests.projects import default_project
from tests.webapp.review.fabricate import two_reviewers_one_note
from tests.workers.conftest import start_worker, wait_for, worker_env  # noqa: F401 - fixtures
from webapp.corpus.models import Corpus, Task
from webapp.lifecycle import units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import ModelVersion
from webapp.review import report_store
from webapp.review.models import ReportSnapshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def ward(django_user_model):
    """Two reviewers' decisions on two peaks of one note: they agree on one, not on the other."""
    corpus = Corpus.objects.create(project=default_project(), name="poll-ward", language="en")
    task = Task.objects.create(slug="p-heart", description="p heart rate", options=["y", "n"])
    model = ModelVersion.objects.create(name="tiny-poll", family="llama", path="tiny-poll")
    ana, ben = (_make_user(django_user_model, name, "clinician") for name in ("ana", "ben"))
    rows = two_reviewers_one_note(corpus, task, model, (ana, ben))
    return {"corpus": corpus, "reader": ana, "changed": rows[-1]}


def _compute_in_process(user, corpus):
    """The first figures, as the runner computes them: queue, claim, run."""
    report_store.current(user, corpus)
    snapshot = ReportSnapshot.objects.get()
    report_store.run(units.claim(ReportSnapshot, snapshot.pk, worker="test"))
    assert ReportSnapshot.objects.get().status == JobStatus.DONE


def test_a_stale_report_shows_its_last_figures_and_refreshes_itself_when_recomputed(
    login,
    ward,
    start_worker,  # noqa: F811 - a pytest fixture
    settings,
):
    settings.REPORT_STAMP_SECONDS = 0  # every load looks at the decisions
    _compute_in_process(ward["reader"], ward["corpus"])
    computed = ReportSnapshot.objects.get().computed
    ward["changed"].decision = "accept"  # ben changes his mind: now both keep both peaks
    ward["changed"].save()

    page = login(ward["reader"])
    page.goto(f"{reverse('review:report')}?corpus={ward['corpus'].pk}")
    page.evaluate("window.notReloaded = true")  # gone if the page were loaded again
    stale = page.locator("#report-stale")
    assert f"Figures of {computed.astimezone().strftime('%Y-%m-%d')}" in stale.inner_text()
    assert "newer ones, with the latest decisions, are being computed" in stale.inner_text()
    assert "ana & ben: 2 peaks, agree 50%" in page.locator("#report").inner_text()  # the last figures
    assert ReportSnapshot.objects.get().status == JobStatus.QUEUED  # the load queued the newer ones
    # no worker yet: the page keeps asking, and keeps the last figures while it waits
    with page.expect_response(lambda r: "/report" in r.url and r.request.headers.get("hx-request") == "true"):
        pass
    assert page.locator("#report-stale").is_visible()

    worker = start_worker("default")
    try:
        page.wait_for_selector("#report-computed", timeout=60_000)
    except Exception:
        raise AssertionError(f"the page never showed the new figures\n--- worker log ---\n{worker.log()}") from None
    assert page.evaluate("window.notReloaded") is True  # refreshed in place by its poll
    assert page.locator("#report-stale").count() == 0
    assert "ana & ben: 2 peaks, agree 100%" in page.locator("#report").inner_text()
    assert "Figures computed" in page.locator("#report-computed").inner_text()
    snapshot = ReportSnapshot.objects.get()
    assert snapshot.status == JobStatus.DONE and snapshot.computed > computed
    # the poll stopped with the fresh figures: no request for the report after them
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/report" in r.url else None)
    page.wait_for_timeout(2500)  # longer than one poll interval (2 s)
    assert asked == []
