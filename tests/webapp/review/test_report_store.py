"""The review report served from storage (webapp.review.report_store): computed once per change
of the decisions, queued when stale while the last figures stay on the page, read by the page and
the CSV in a number of queries that does not grow with the decisions."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from webapp.lifecycle import units
from webapp.lifecycle.status import JobStatus
from webapp.review import decisions, report_store
from webapp.review.decisions import PeakContext
from webapp.review.models import ReportSnapshot

from .fabricate import TEXT, word_span


@pytest.fixture(autouse=True)
def look_every_time(settings):
    """Every load looks at the decisions (REPORT_STAMP_SECONDS=0); the test of the cache sets it."""
    settings.REPORT_STAMP_SECONDS = 0


@pytest.fixture
def carl(django_user_model, note):
    from webapp.accounts.membership import add_member

    user = django_user_model.objects.create_user("carl", password="x" * 12)
    add_member(note.corpus.project, user, "clinician")
    return user


def _compute():
    """What the worker does (workers.reports.compute_report): claim the snapshot, run it."""
    snapshot = ReportSnapshot.objects.get()
    claimed = units.claim(ReportSnapshot, snapshot.pk, worker="test")
    assert claimed is not None, f"the snapshot was not queued ({snapshot.status})"
    report_store.run(claimed)


def _decide(note, tasks, base, user, word, decision="accept", version=0):
    a, b = word_span(TEXT, word)
    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en")
    decisions.decide(ctx, user, start=a, end=b, decision=decision, expected_version=version)


def _page(client, note, **extra):
    return client.get(reverse("review:report"), {"corpus": note.corpus_id}, **extra)


def test_a_report_never_computed_is_queued_once_and_the_page_polls_for_it(
    client, researcher, clinician, note, tasks, base, maps
):
    _decide(note, tasks, base, clinician, "130")
    client.force_login(researcher)
    content = _page(client, note).content.decode()
    assert "The figures are being computed" in content and 'hx-trigger="every 2s"' in content
    snapshot = ReportSnapshot.objects.get()
    assert snapshot.status == JobStatus.QUEUED and snapshot.figures is None and snapshot.corpus_id == note.corpus_id
    assert not report_store.refresh(snapshot)  # queued already: a second page load queues nothing
    poll = _page(client, note, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and "<html" not in poll.content.decode()
    csv = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
    assert csv.status_code == 503 and csv["Retry-After"] == "5"


def test_the_report_is_served_from_storage_in_queries_that_do_not_grow_with_decisions(
    client, researcher, clinician, note, tasks, base, maps, django_user_model
):
    client.force_login(researcher)
    _decide(note, tasks, base, clinician, "130")
    _page(client, note)
    _compute()
    with CaptureQueriesContext(connection) as few:
        page = _page(client, note)
    with CaptureQueriesContext(connection) as few_csv:
        csv = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
        lines = b"".join(csv.streaming_content).decode().splitlines()
    assert "Figures computed" in page.content.decode() and 'hx-trigger="every 2s"' not in page.content.decode()
    assert lines[1].startswith("heart-rate,1,0,1,1,1,0,")
    for n in range(6):  # more reviewers, more decisions: the same queries
        other = django_user_model.objects.create_user(f"rev{n}", password="x" * 12)
        from webapp.accounts.membership import add_member

        add_member(note.corpus.project, other, "clinician")
        _decide(note, tasks, base, other, "130", "reject" if n % 2 else "accept")
        _decide(note, tasks, base, other, "bpm")
    _page(client, note)
    _compute()
    with CaptureQueriesContext(connection) as many:
        page = _page(client, note)
    with CaptureQueriesContext(connection) as many_csv:
        csv = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
        lines = b"".join(csv.streaming_content).decode().splitlines()
    assert len(many) == len(few) <= 30 and len(many_csv) == len(few_csv) <= 12
    assert lines[1].startswith("heart-rate,2,2,7,13,")
    assert "rev0 & rev1: 2 peaks" in page.content.decode()
    poll = _page(client, note, HTTP_HX_REQUEST="true")
    assert poll.status_code == 286  # fresh: the poll stops


def test_a_decision_makes_the_report_stale_it_shows_the_last_figures_until_recomputed(
    client, researcher, clinician, note, tasks, base, maps
):
    client.force_login(researcher)
    _decide(note, tasks, base, clinician, "130")
    _page(client, note)
    _compute()
    computed = ReportSnapshot.objects.get().computed
    _decide(note, tasks, base, clinician, "bpm", "reject")
    content = _page(client, note).content.decode()
    assert f"Figures of {computed.astimezone().strftime('%Y-%m-%d')}" in content
    assert "newer ones, with the latest decisions, are being computed" in content
    assert 'hx-trigger="every 2s"' in content and "heart rate" in content
    assert ReportSnapshot.objects.get().status == JobStatus.QUEUED
    _compute()
    content = _page(client, note).content.decode()
    assert "Figures computed" in content and "being computed" not in content
    csv = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
    assert b"".join(csv.streaming_content).decode().splitlines()[1].startswith("heart-rate,2,0,1,2,1,1,")


def test_a_changed_decision_and_an_undone_one_make_it_stale(client, researcher, clinician, note, tasks, base, maps):
    client.force_login(researcher)
    _decide(note, tasks, base, clinician, "130")
    _page(client, note)
    _compute()
    snapshot = ReportSnapshot.objects.get()
    assert snapshot.stamp == report_store.stamp(snapshot)
    _decide(note, tasks, base, clinician, "130", "reject", version=1)
    assert snapshot.stamp != report_store.stamp(snapshot)


def test_readers_of_other_projects_get_their_own_snapshot(
    client, researcher, site_admin, clinician, note, tasks, base, maps
):
    _decide(note, tasks, base, clinician, "130")
    client.force_login(researcher)
    _page(client, note)
    client.force_login(site_admin)
    _page(client, note)
    scopes = sorted(ReportSnapshot.objects.values_list("scope", flat=True))
    assert len(scopes) == 2 and any(s.startswith("projects=all|") for s in scopes)


def test_spans_added_by_two_reviewers_are_compared_and_a_new_one_makes_the_report_stale(
    client, researcher, clinician, carl, note, tasks, base, maps
):
    from webapp.review import spans

    client.force_login(researcher)
    a, b = word_span(TEXT, "130")
    c, d = word_span(TEXT, "bpm")
    spans.add(note, tasks["heart"], clinician, start=a, end=d)  # "130 bpm"
    spans.add(note, tasks["heart"], carl, start=a, end=b)  # "130": overlapping, not exact
    _page(client, note)
    _compute()
    added = ReportSnapshot.objects.get().figures["spans"]["added"]
    assert added["per_label"]["heart-rate"]["f1_exact"] == 0 and added["per_label"]["heart-rate"]["f1_overlap"] == 1
    assert added["annotators"] == 2 and added["pairs"][0]["documents"] == 1
    assert 'id="span-agreement-added"' in _page(client, note).content.decode()
    spans.add(note, tasks["heart"], carl, start=c, end=d)
    assert "being computed" in _page(client, note).content.decode()
    _compute()
    added = ReportSnapshot.objects.get().figures["spans"]["added"]
    assert added["spans"] == 3 and added["per_label"]["heart-rate"]["f1_overlap"] == 1


def test_a_load_within_report_stamp_seconds_reads_the_stamp_from_the_cache(
    client, researcher, clinician, note, tasks, base, maps, settings
):
    settings.REPORT_STAMP_SECONDS = 60
    client.force_login(researcher)
    _decide(note, tasks, base, clinician, "130")
    _page(client, note)  # looks at the decisions once, and queues the figures
    _compute()
    _decide(note, tasks, base, clinician, "bpm")
    with CaptureQueriesContext(connection) as cached:
        content = _page(client, note).content.decode()
    assert not [q for q in cached.captured_queries if 'COUNT("review_peakdecision"' in q["sql"]]
    assert "Figures computed" in content  # the change is not seen yet: at most 60 s late
    settings.REPORT_STAMP_SECONDS = 0  # looked at on every load: seen at once
    assert "newer ones, with the latest decisions" in _page(client, note).content.decode()


def test_the_csv_carries_span_agreement_per_task_from_the_stored_figures(
    client, researcher, clinician, carl, note, tasks, base, maps
):
    import csv
    import re

    import krippendorff
    import numpy as np

    from webapp.corpus.models import Annotation
    from webapp.review import spans

    client.force_login(researcher)
    _decide(note, tasks, base, clinician, "130")
    a, b = word_span(TEXT, "130")
    c, d = word_span(TEXT, "bpm")
    p, q = word_span(TEXT, "Pacemaker")
    for name, heart, pacemaker in (("ann", (a, d), (p, q)), ("bob", (a, b), (p, q))):  # two annotators' files
        Annotation.objects.create(note=note, task=tasks["heart"], label="y", evidence=[heart], annotator_name=name)
        Annotation.objects.create(
            note=note, task=tasks["pacemaker"], label="y", evidence=[pacemaker], annotator_name=name
        )
    spans.add(note, tasks["heart"], clinician, start=a, end=d)  # "130 bpm"
    spans.add(note, tasks["heart"], carl, start=a, end=b)  # "130"
    _page(client, note)
    _compute()
    with CaptureQueriesContext(connection) as download:
        response = client.get(reverse("review:report"), {"corpus": note.corpus_id, "format": "csv"})
        rows = list(csv.DictReader(b"".join(response.streaming_content).decode().splitlines()))
    assert len(download) <= 12 and not [x for x in download.captured_queries if '"corpus_note"."text"' in x["sql"]]
    assert [(r["task"], r["source"]) for r in rows] == [
        ("heart-rate", "peak_decisions"),
        ("(all tasks)", "peak_decisions"),
        ("heart-rate", "imported_gold"),
        ("presence-of-pacemaker", "imported_gold"),
        ("(all tasks)", "imported_gold"),
        ("heart-rate", "added_spans"),
        ("(all tasks)", "added_spans"),
    ]
    assert rows[0]["peaks"] == "1" and rows[0]["f1_exact"] == "" and rows[2]["peaks"] == ""
    heart, pacemaker, gold = rows[2], rows[3], rows[4]
    assert (heart["spans"], heart["f1_exact"], heart["f1_overlap"]) == ("2", "0.0000", "1.0000")
    assert (pacemaker["f1_exact"], pacemaker["alpha_tokens"]) == ("1.0000", "1.0000")
    assert (gold["annotators"], gold["paired_documents"], gold["spans"], gold["f1_exact"]) == ("2", "2", "4", "0.5000")
    # heart-rate's alpha on the note's tokens, "130 bpm" against "130", by the krippendorff package
    words = [m.span() for m in re.finditer(r"\w+|[^\w\s]", TEXT)]
    data = np.array([[float(a <= s < d) for s, _ in words], [float(a <= s < b) for s, _ in words]])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert heart["alpha_tokens"] == f"{expected:.4f}" and heart["tokens"] == str(len(words))
    assert float(heart["alpha_tokens_ci_low"]) <= expected <= float(heart["alpha_tokens_ci_high"])
    assert "Label 'heart-rate' has 2 spans" in heart["diagnostics"]
    assert "Label 'presence-of-pacemaker'" not in heart["diagnostics"]
    assert rows[5]["f1_overlap"] == "1.0000" and rows[5]["f1_exact"] == "0.0000"
    assert rows[5]["alpha_tokens"] == f"{expected:.4f}"  # the same spans, added in the app
