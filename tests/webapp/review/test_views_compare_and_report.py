"""The comparison page and the review report page."""
from django.urls import reverse

from webapp.review import decisions
from webapp.review.decisions import PeakContext

from .fabricate import TEXT, query, word_span


def test_the_comparison_shows_both_maps_and_their_difference(client, clinician, note, tasks, base, dsm, sharp, maps,
                                                             gold):
    client.force_login(clinician)
    content = client.get(reverse("review:compare", args=[note.corpus_id, note.pk]),
                         query(tasks["heart"], base, sharp)).content.decode()
    assert "base-model vs dsm-model" in content
    assert 'id="first-map"' in content and 'id="second-map"' in content and 'id="diff-text"' in content
    assert "hatched red" in content and "+11.8%" in content


def test_the_summary_fragment_gives_the_relative_change(client, researcher, note, tasks, base, dsm, sharp, maps, gold):
    client.force_login(researcher)
    content = client.get(reverse("review:compare_summary", args=[note.corpus_id]),
                         {**query(tasks["heart"], base, sharp), "a": base.pk, "b": dsm.pk},
                         HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in content and 'id="mean-change">+11.8%' in content and "+37.2%" in content


def test_the_report_lists_tasks_with_decisions(client, researcher, clinician, note, tasks, base, maps):
    a, b = word_span(TEXT, "130")
    decisions.decide(PeakContext(note, tasks["heart"], base, "attnlrp", "en"), clinician, start=a, end=b,
                     decision="reject", expected_version=0)
    client.force_login(researcher)
    content = client.get(reverse("review:report"), {"corpus": note.corpus_id}).content.decode()
    assert "heart rate" in content and "no shared peak" in content
