"""Review reports per task: notes reviewed, decisions (accepted, rejected, adjusted), and
inter-reviewer agreement where two reviewers decided on the same peak.

A peak is (note, model version, method, template, character span); agreement is Cohen's kappa
on kept (accept or adjust) vs rejected, for each pair of reviewers over the peaks both decided
(webapp.lib.agreement). Decisions are made by people, so there are at most some hundred
thousand: they are read once and tallied in Python.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from django.contrib.auth import get_user_model

from webapp.corpus.models import Task
from webapp.lib.agreement import cohen_kappa
from webapp.review.models import PeakDecision


@dataclass
class PairAgreement:
    first: str
    second: str
    peaks: int
    observed: float
    kappa: float


@dataclass
class TaskReport:
    task: Task
    notes: int = 0
    peaks: int = 0
    decisions: int = 0
    accepted: int = 0
    rejected: int = 0
    adjusted: int = 0
    reviewers: int = 0
    shared_peaks: int = 0
    agreements: list = field(default_factory=list)


def task_reports(corpus=None, model=None, method: str | None = None) -> list[TaskReport]:
    rows = PeakDecision.objects.all()
    if corpus is not None:
        rows = rows.filter(note__corpus=corpus)
    if model is not None:
        rows = rows.filter(model_version=model)
    if method:
        rows = rows.filter(method=method)
    by_task: dict[int, list] = defaultdict(list)
    for row in rows.values_list(
        "task_id", "note_id", "model_version_id", "method", "template", "start", "end", "reviewer_id", "decision"
    ):
        by_task[row[0]].append(row)
    tasks = Task.objects.in_bulk(list(by_task))
    names = dict(
        get_user_model()
        .objects.filter(pk__in={r[7] for rs in by_task.values() for r in rs})
        .values_list("pk", "username")
    )
    reports = []
    for task_id, task_rows in by_task.items():
        report = TaskReport(tasks[task_id])
        peaks: dict[tuple, dict[int, bool]] = defaultdict(dict)  # peak -> reviewer -> kept
        for _, note_id, model_id, meth, template, start, end, reviewer_id, decision in task_rows:
            report.decisions += 1
            report.accepted += decision == PeakDecision.Decision.ACCEPT
            report.rejected += decision == PeakDecision.Decision.REJECT
            report.adjusted += decision == PeakDecision.Decision.ADJUST
            kept = decision != PeakDecision.Decision.REJECT
            peaks[(note_id, model_id, meth, template, start, end)][reviewer_id] = kept
        report.notes = len({key[0] for key in peaks})
        report.peaks = len(peaks)
        report.reviewers = len({r for votes in peaks.values() for r in votes})
        report.shared_peaks = sum(1 for votes in peaks.values() if len(votes) > 1)
        report.agreements = pair_agreements(peaks, names)
        reports.append(report)
    return sorted(reports, key=lambda r: r.task.slug)


def pair_agreements(peaks: dict, names: dict) -> list[PairAgreement]:
    """Cohen's kappa for every pair of reviewers with at least one peak in common."""
    shared: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for votes in peaks.values():
        for r1, r2 in combinations(sorted(votes), 2):
            shared[(r1, r2)][0].append(votes[r1])
            shared[(r1, r2)][1].append(votes[r2])
    out = []
    for (r1, r2), (a, b) in sorted(shared.items()):
        observed = sum(x == y for x, y in zip(a, b)) / len(a)
        out.append(PairAgreement(names.get(r1, str(r1)), names.get(r2, str(r2)), len(a), observed, cohen_kappa(a, b)))
    return out
