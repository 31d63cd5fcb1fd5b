"""Accept the rest (webapp.review.bulk): every undecided peak of the note and task shown, after a
confirmation naming how many; one audited action, undone as one."""

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.review.models import PeakDecision

from .fabricate import TEXT, query, word_span

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "note-panel"}


@pytest.fixture
def form(tasks, base, sharp):
    return query(tasks["heart"], base, sharp, k=1, sigma=1.0, lower=0.2, upper=0.4)


@pytest.fixture
def urls(note):
    return {
        "accept": reverse("review:accept_rest", args=[note.corpus_id, note.pk]),
        "decide": reverse("review:decide", args=[note.corpus_id, note.pk]),
        "undo": reverse("review:undo", args=[note.corpus_id, note.pk]),
    }


def decide(client, urls, form, word, decision):
    a, b = word_span(TEXT, word)
    return client.post(urls["decide"], {**form, "start": a, "end": b, "decision": decision, "version": 0})


def test_without_confirmation_it_asks_naming_how_many(client, clinician, maps, form, urls):
    client.force_login(clinician)
    response = client.post(urls["accept"], form)
    assert response.status_code == 200
    content = response.content.decode()
    assert "Accept the <strong>2</strong> peaks" in content and 'name="confirm" value="yes"' in content
    assert not PeakDecision.objects.exists()


def test_it_accepts_only_the_undecided_and_undo_takes_them_all_back(client, clinician, maps, form, urls):
    client.force_login(clinician)
    decide(client, urls, form, "130", "reject")
    response = client.post(urls["accept"], {**form, "confirm": "yes", "count": 1, "guideline": 0}, **HX)
    assert response.status_code == 200
    assert "You accepted the 1 undecided peak" in response.content.decode()
    rows = {TEXT[d.start : d.end]: d.decision for d in PeakDecision.objects.all()}
    assert rows == {"130": "reject", "tachycardic": "accept"}
    events = AuditEvent.objects.filter(details__op="accept-rest")
    assert events.count() == 1 and events.get().details["count"] == 1
    response = client.post(urls["undo"], form, **HX)
    assert "are undecided again" in response.content.decode()
    assert {TEXT[d.start : d.end] for d in PeakDecision.objects.all()} == {"130"}
    assert AuditEvent.objects.filter(details__op="undo-accept-rest", details__count=1).count() == 1
    client.post(urls["undo"], form)  # the next undo goes back to the decision before it
    assert not PeakDecision.objects.exists()


def test_undo_after_a_change_of_one_goes_back_through_that_change_first(client, clinician, maps, form, urls):
    client.force_login(clinician)
    client.post(urls["accept"], {**form, "confirm": "yes", "count": 2})
    assert PeakDecision.objects.filter(batch__isnull=False).count() == 2
    row = PeakDecision.objects.get(start=word_span(TEXT, "130")[0])
    a, b = word_span(TEXT, "130")
    client.post(urls["decide"], {**form, "start": a, "end": b, "decision": "reject", "version": row.version})
    client.post(urls["undo"], form)
    row.refresh_from_db()
    assert row.decision == "accept" and row.batch is not None  # back one step, in its batch again
    client.post(urls["undo"], form)
    assert not PeakDecision.objects.exists()


def test_a_stale_count_is_refused_and_nothing_is_stored(client, clinician, maps, form, urls):
    client.force_login(clinician)
    response = client.post(urls["accept"], {**form, "confirm": "yes", "count": 5}, **HX)
    assert response.status_code == 409 and "2 peaks are undecided now" in response.content.decode()
    assert not PeakDecision.objects.exists()


def test_nothing_left_to_accept_says_so(client, clinician, maps, form, urls):
    client.force_login(clinician)
    decide(client, urls, form, "130", "accept")
    decide(client, urls, form, "tachycardic", "reject")
    response = client.post(urls["accept"], {**form, "confirm": "yes", "count": 0}, **HX)
    assert "already decided by you" in response.content.decode()
    assert not AuditEvent.objects.filter(details__op="accept-rest").exists()


def test_other_reviewers_decisions_do_not_count_as_mine(client, clinician, admin_user, maps, form, urls):
    client.force_login(admin_user)
    decide(client, urls, form, "130", "reject")
    client.force_login(clinician)
    client.post(urls["accept"], {**form, "confirm": "yes", "count": 2})
    assert PeakDecision.objects.filter(reviewer=clinician, decision="accept").count() == 2
    assert PeakDecision.objects.get(reviewer=admin_user).decision == "reject"


def test_a_reader_may_not_accept(client, researcher, maps, form, urls):
    client.force_login(researcher)
    assert client.post(urls["accept"], {**form, "confirm": "yes", "count": 2}).status_code == 403
