"""A site admin opens the audit page in Chromium while it holds an event of every kind the app logs
(sign-ins belong to no project, so only a site admin's page lists every kind)."""

import pytest

from tests.projects import default_project
from webapp.audit.log import record, record_anonymous
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus

pytestmark = pytest.mark.django_db(transaction=True)

# Details some callers store under names that are also dict methods ("validation set drawn": items).
AWKWARD_DETAILS = {"items": 40, "keys": 2, "values": 3, "get": 4}


def test_the_audit_page_shows_an_event_of_every_kind(page, login, site_admin, researcher):
    page.set_default_timeout(30_000)  # the live server's first page can be slow on a busy machine
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    kinds = list(AuditEvent.Action)  # a kind added later is covered without touching this test
    for number, action in enumerate(kinds):
        if action in (AuditEvent.Action.LOGIN_FAILED, AuditEvent.Action.LOCKED_OUT):
            record_anonymous("", action, ip="203.0.113.5", path="/login/", n=number, **AWKWARD_DETAILS)
        else:
            record(researcher, action, corpus, n=number, **AWKWARD_DETAILS)
    page = login(site_admin)
    response = page.goto("/audit/")
    assert response.status == 200
    rows = page.locator("tbody tr")
    shown = {rows.nth(i).locator("td").nth(2).inner_text(): rows.nth(i).inner_text() for i in range(rows.count())}
    for number, action in enumerate(kinds):
        assert action.label in shown, action
        assert f"n {number}" in shown[action.label] and "items 40" in shown[action.label]
