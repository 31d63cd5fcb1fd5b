"""A decision records the guideline version it was made under and its active time (validated);
the note page and the validation round show the guideline."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.corpus.tasks import edit_task
from webapp.review.forms import MAX_ACTIVE_MS
from webapp.review.models import PeakDecision

from .fabricate import query
from .test_views_note import HX, post, url


@pytest.fixture
def guided(tasks, researcher):
    edit_task(tasks["heart"], {"guideline": "Count the **rate**.\n<script>alert(1)</script>"}, actor=researcher)
    edit_task(tasks["heart"], {"guideline": "Only the **current** rate."}, actor=researcher)
    return tasks


def test_the_note_page_shows_the_guideline_and_its_version(client, clinician, note, guided, base, sharp, maps):
    client.force_login(clinician)
    content = client.get(url(note), query(guided["heart"], base, sharp)).content.decode()
    assert '<details id="guideline"' in content and "version 2" in content
    assert "Only the <strong>current</strong> rate." in content
    assert '<input type="hidden" name="guideline" value="2">' in content
    assert '<input type="hidden" name="active_ms" value="">' in content


def test_a_task_without_a_guideline_says_so(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    content = client.get(url(note), query(tasks["heart"], base, sharp), **HX).content.decode()
    assert "has no guideline yet" in content
    assert '<input type="hidden" name="guideline" value="0">' in content


def test_a_decision_records_the_version_the_page_showed(client, clinician, note, guided, base, sharp, maps):
    client.force_login(clinician)
    assert post(client, note, guided, base, sharp, guideline=1, active_ms=4200).status_code == 200
    row = PeakDecision.objects.get()
    assert (row.guideline_version, row.active_ms) == (1, 4200)


def test_a_decision_without_or_with_a_made_up_version_records_the_current_one(
    client, clinician, note, guided, base, sharp, maps
):
    client.force_login(clinician)
    post(client, note, guided, base, sharp, guideline=99)
    post(client, note, guided, base, sharp, word="tachycardic")
    assert list(PeakDecision.objects.values_list("guideline_version", flat=True)) == [2, 2]


def test_the_current_version_shown_is_recorded_without_reading_the_guidelines_again(
    client, clinician, researcher, note, guided, base, sharp, maps
):
    client.force_login(clinician)
    client.get(url(note), query(guided["heart"], base, sharp))  # the page keeps the current guideline
    with CaptureQueriesContext(connection) as queries:
        post(client, note, guided, base, sharp, guideline=2)
    assert PeakDecision.objects.get().guideline_version == 2
    assert not [q for q in queries if "corpus_taskguideline" in q["sql"]]
    edit_task(guided["heart"], {"guideline": "A third version."}, actor=researcher)  # now version 3 is current
    post(client, note, guided, base, sharp, word="tachycardic", guideline=2)  # a page opened before: still 2
    post(client, note, guided, base, sharp, decision="reject", version=1, guideline=99)  # made up: the current
    assert list(PeakDecision.objects.order_by("pk").values_list("guideline_version", flat=True)) == [3, 2]


def test_a_page_that_showed_no_guideline_records_none(client, clinician, note, tasks, base, sharp, maps):
    client.force_login(clinician)
    post(client, note, tasks, base, sharp, guideline=0)
    assert PeakDecision.objects.get().guideline_version is None


@pytest.mark.parametrize(
    "sent, stored",
    [
        ("0", 0),
        ("1500", 1500),
        (str(MAX_ACTIVE_MS), MAX_ACTIVE_MS),
        (str(MAX_ACTIVE_MS + 1), None),
        ("-5", None),
        ("abc", None),
        ("1.5", None),
        ("", None),
    ],
)
def test_active_time_is_kept_between_zero_and_an_hour_else_stored_as_not_measured(
    client, clinician, note, tasks, base, sharp, maps, sent, stored
):
    client.force_login(clinician)
    response = post(client, note, tasks, base, sharp, active_ms=sent)
    assert response.status_code == 200  # never refused for its time
    assert PeakDecision.objects.get().active_ms == stored


def test_undo_brings_back_the_earlier_version_and_time(client, clinician, note, guided, base, sharp, maps):
    client.force_login(clinician)
    post(client, note, guided, base, sharp, guideline=1, active_ms=1000)
    post(client, note, guided, base, sharp, decision="reject", version=1, guideline=2, active_ms=3000)
    assert PeakDecision.objects.get().guideline_version == 2
    client.post(reverse("review:undo", args=[note.corpus_id, note.pk]), query(guided["heart"], base, sharp), **HX)
    row = PeakDecision.objects.get()
    assert (row.decision, row.guideline_version, row.active_ms) == ("accept", 1, 1000)


def test_the_decision_audit_names_the_version_and_time(client, clinician, note, guided, base, sharp, maps):
    from webapp.audit.models import AuditEvent

    client.force_login(clinician)
    post(client, note, guided, base, sharp, active_ms=800)
    details = AuditEvent.objects.get(action=AuditEvent.Action.REVIEW_DECISION).details
    assert (details["guideline_version"], details["active_ms"]) == (2, 800)
    assert "current" not in str(details)  # never the guideline's text


def test_the_validation_round_shows_the_guideline(client, clinician, corpus, guided, base):
    from webapp.corpus.models import Note

    from .fabricate import TEXT, add_map
    from .test_views_validation import draw

    for i in range(2):
        add_map(Note.objects.create(corpus=corpus, external_id=f"v{i}", text=TEXT), guided["heart"], base, {"130": 0.9})
    client.force_login(clinician)
    draw(client, corpus, base)
    content = client.get(reverse("review:validation_round", args=[corpus.validation_sets.get().pk])).content.decode()
    assert "Only the <strong>current</strong> rate." in content and "version 2" in content
    assert "<kbd>g</kbd>" in content
