"""Time per review on the report: median active seconds per reviewer and per task, and the
estimate of what the undecided pairs would cost, on constructed decisions."""

import pytest
from django.urls import reverse

from webapp.corpus.models import Note
from webapp.review import timing
from webapp.review.models import PeakDecision

from .fabricate import TEXT, add_map, word_span


@pytest.fixture
def timed(note, tasks, base, maps, clinician, django_user_model):
    """(n1, heart) decided by clara (60 s, 120 s) and bob (180 s, one untimed); n2 and n3 have heart
    maps and no decision; (n1, pacemaker) has a map and no decision."""
    bob = django_user_model.objects.create_user("bob")
    for external_id in ("n2", "n3"):
        add_map(Note.objects.create(corpus=note.corpus, external_id=external_id, text=TEXT), tasks["heart"], base, {})
    spans = [word_span(TEXT, "130"), word_span(TEXT, "tachycardic")]
    for reviewer, seconds in ((clinician, [60, 120]), (bob, [180, None])):
        for (start, end), s in zip(spans, seconds):
            PeakDecision.objects.create(
                note=note,
                task=tasks["heart"],
                model_version=base,
                method="attnlrp",
                template="en",
                start=start,
                end=end,
                decision="accept",
                reviewer=reviewer,
                active_ms=None if s is None else s * 1000,
            )
    return tasks


def test_medians_per_reviewer_and_task_leave_untimed_decisions_out(timed, site_admin):
    time = timing.review_time(site_admin)
    assert [(r.name, r.timed, r.median_s) for r in time.reviewers] == [("bob", 1, 180), ("clara", 2, 90)]
    heart = next(t for t in time.tasks if t.name == "heart rate")
    assert (heart.timed, heart.median_s, heart.undecided_pairs, heart.peaks_per_pair) == (3, 120, 2, 2.0)


def test_the_estimate_is_judgements_left_times_peaks_times_median(timed, site_admin):
    time = timing.review_time(site_admin, reviewers=3)
    heart = next(t for t in time.tasks if t.name == "heart rate")
    # 3 pairs x 3 reviewers, less clara and bob on n1
    assert heart.judgements_left == 7
    assert heart.hours == pytest.approx(7 * 2.0 * 120 / 3600)
    pacemaker = next(t for t in time.tasks if t.name == "presence of pacemaker")
    assert (pacemaker.undecided_pairs, pacemaker.hours) == (1, None)  # no timed decision: no estimate
    assert time.hours == pytest.approx(7 * 2.0 * 120 / 3600) and time.untimed_tasks == ["presence of pacemaker"]
    assert time.shown == "28 min"


def test_estimate_hours():
    assert timing.estimate_hours(200, 3.0, 12.0) == pytest.approx(2.0)
    assert timing.estimate_hours(0, 3.0, 12.0) == 0
    assert timing.judgements_left(4, [1, 3], 2) == 8 - 1 - 2
    assert [timing.duration_text(h) for h in (0, 0.001, 0.5, 2.25)] == ["0.0 h", "1 min", "30 min", "2.2 h"]


def test_a_pair_one_reviewer_decided_on_a_3_reviewer_round_still_needs_two(timed, note, base, clinician, site_admin):
    """The report said "about 0.0 h of review for 2 reviewers" on a 3-reviewer round whose pairs
    each had one decision: it counted only pairs nobody had decided, for 2 reviewers by default."""
    from webapp.review.models import ReviewRound

    Note.objects.exclude(pk=note.pk).delete()  # n1 only, decided by clara and bob
    PeakDecision.objects.filter(reviewer__username="bob").delete()  # now by clara alone
    ReviewRound.objects.create(
        corpus=note.corpus, model_version=base, method="attnlrp", template="en", name="r", k=3, created_by=clinician
    )
    time = timing.review_time(site_admin, note.corpus)
    heart = next(t for t in time.tasks if t.name == "heart rate")
    assert time.reviewer_count == 3 and heart.undecided_pairs == 0 and heart.judgements_left == 2
    assert heart.hours == pytest.approx(2 * 2.0 * 90 / 3600)
    assert timing.review_time(site_admin, note.corpus, reviewers=1).tasks[0].judgements_left == 0


def test_a_retired_task_has_no_undecided_pairs(timed, site_admin):
    timed["pacemaker"].retired = True
    timed["pacemaker"].save()
    assert "presence of pacemaker" not in [t.name for t in timing.review_time(site_admin).tasks]


def test_the_report_page_shows_the_figures_and_the_estimate(client, clinician, timed):
    client.force_login(clinician)
    _computed(client)
    content = client.get(reverse("review:report"), {"reviewers": 3}).content.decode()
    assert "About 28 min of review, 3 reviewers per pair" in content
    assert "not counting presence of pacemaker" in content
    assert '<td>clara</td><td class="num">2</td><td class="num">90.0</td>' in content
    assert "those who decided a pair already are taken off" in content


def test_the_report_without_decisions_has_no_estimate(client, clinician):
    client.force_login(clinician)
    _computed(client)
    assert "No estimate yet" in client.get(reverse("review:report")).content.decode()


def _computed(client):
    """The report's page queues its figures; compute them as the worker would (workers.reports)."""
    from webapp.lifecycle import units
    from webapp.review import report_store
    from webapp.review.models import ReportSnapshot

    assert "being computed" in client.get(reverse("review:report")).content.decode()
    report_store.run(units.claim(ReportSnapshot, ReportSnapshot.objects.get().pk))
