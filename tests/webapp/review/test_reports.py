"""Per-task review report and inter-reviewer agreement."""

import pytest

from webapp.review import decisions, reports
from webapp.review.decisions import PeakContext

from .fabricate import TEXT, word_span


@pytest.fixture
def carl(django_user_model):
    return django_user_model.objects.create_user("carl", password="x" * 12)


def test_the_report_counts_decisions_and_kappa_per_task(note, tasks, base, maps, clinician, carl, site_admin):
    ctx = PeakContext(note, tasks["heart"], base, "attnlrp", "en")
    # four fabricated spans (decisions are checked against the note only): clara keeps 1, 2, 3 and
    # rejects 4; carl keeps 1, 2 and rejects 3, 4 -> agree on 3 of 4.
    spans = [(0, 2), (3, 5), (6, 10), (11, 17)]
    clara = ["accept", "adjust", "accept", "reject"]
    carls = ["accept", "accept", "reject", "reject"]
    for (a, b), mine, his in zip(spans, clara, carls):
        extra = {"adjusted_start": a, "adjusted_end": b + 1} if mine == "adjust" else {}
        decisions.decide(ctx, clinician, start=a, end=b, decision=mine, expected_version=0, **extra)
        decisions.decide(ctx, carl, start=a, end=b, decision=his, expected_version=0)
    pm = PeakContext(note, tasks["pacemaker"], base, "attnlrp", "en")
    decisions.decide(pm, clinician, start=0, end=2, decision="reject", expected_version=0)
    rows = {r.task.slug: r for r in reports.task_reports(site_admin)}
    heart = rows["heart-rate"]
    assert (heart.notes, heart.peaks, heart.decisions) == (1, 4, 8)
    assert (heart.accepted, heart.rejected, heart.adjusted) == (4, 3, 1)
    assert heart.reviewers == 2 and heart.shared_peaks == 4
    (pair,) = heart.agreements
    assert {pair.first, pair.second} == {"clara", "carl"} and pair.peaks == 4
    assert pair.observed == pytest.approx(0.75)
    # clara kept 3 of 4, carl 2 of 4: p_e = .75*.5 + .25*.5 = .5; kappa = (.75 - .5) / .5
    assert pair.kappa == pytest.approx(0.5)
    assert rows["presence-of-pacemaker"].agreements == [] and rows["presence-of-pacemaker"].rejected == 1
    # the study coefficients on the same kept/rejected labels: kappa as above, with intervals
    study = heart.study
    assert study.kappa == pytest.approx(0.5) and study.observed == pytest.approx(0.75)
    assert study.alpha_ci[0] <= study.alpha <= study.alpha_ci[1]
    assert study.pairable_items == 4 and study.labels == {"kept": 5, "rejected": 3}
    assert any("fewer than 30" in line for line in study.diagnostics)
    overall = reports.overall_agreement(list(rows.values()))
    assert (overall.items, overall.pairable_items, overall.judgements) == (5, 4, 9)
    csv = "".join(reports.agreement_csv(list(rows.values()), overall)).splitlines()
    assert csv[0].startswith("task,peaks,peaks_seen_by_two,reviewers,judgements,kept,rejected,alpha,alpha_ci_low")
    heart_line = next(line for line in csv if line.startswith("heart-rate,"))
    assert heart_line.startswith("heart-rate,4,4,2,8,5,3,") and ",0.5000," in heart_line
    assert csv[-1].startswith("(all tasks),5,4,2,9,")


def test_the_report_filters_by_corpus_and_model(note, tasks, base, dsm, maps, clinician, corpus, site_admin):
    span = word_span(TEXT, "130")
    decisions.decide(
        PeakContext(note, tasks["heart"], dsm, "attnlrp", "en"),
        clinician,
        start=span[0],
        end=span[1],
        decision="accept",
        expected_version=0,
    )
    assert len(reports.task_reports(site_admin, corpus=corpus, model=dsm)) == 1
    assert reports.task_reports(site_admin, model=base) == []
