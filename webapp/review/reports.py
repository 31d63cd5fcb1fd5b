"""Review reports per task: notes reviewed, decisions (accepted, rejected, adjusted), and
inter-reviewer agreement where two reviewers decided on the same peak.

A peak is (note, model version, method, template, character span); agreement is Cohen's kappa
on kept (accept or adjust) vs rejected, for each pair of reviewers over the peaks both decided
(ml.agreement.cohen_kappa). Beside it, per task and over all tasks (a peak of each task is one
item), `ml.agreement` gives Krippendorff's alpha, mean pairwise kappa, Gwet's AC1 and observed
agreement on the same kept/rejected labels, each with a 95% bootstrap CI over peaks, and the
diagnostics that say when a coefficient misleads (accept-heavy decisions make kappa and alpha
collapse while reviewers agree). Decisions are made by people, so there are at most some
hundred thousand: they are read once and tallied in Python.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from django.contrib.auth import get_user_model

from ml.agreement import Agreement, AgreementSettings, agreement, cohen_kappa
from webapp.corpus.models import Task
from webapp.lib import csv_export
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
    study: Agreement | None = None  # alpha, kappa, AC1, observed with CIs and diagnostics
    votes: dict = field(default_factory=dict, repr=False)  # peak -> reviewer -> kept


#: Labels of a decision for the agreement coefficients (accept and adjust both keep a peak).
KEPT, REJECTED = "kept", "rejected"
CATEGORIES = (KEPT, REJECTED)
SETTINGS = AgreementSettings()


def task_reports(user, corpus=None, model=None, method: str | None = None) -> list[TaskReport]:
    """Per task, the decisions `user` may see (of one corpus, model and method when given)."""
    return reports_of(PeakDecision.objects.visible_to(user), corpus, model, method)


def reports_of(rows, corpus=None, model=None, method: str | None = None) -> list[TaskReport]:
    """Per task, the decisions of the queryset `rows` (of one corpus, model and method when given)."""
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
    names = _names({r[7] for rs in by_task.values() for r in rs})
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
        report.votes = dict(peaks)
        report.study = study_agreement(peaks, names)
        reports.append(report)
    return sorted(reports, key=lambda r: r.task.slug)


def overall_agreement(reports: list[TaskReport], names: dict | None = None) -> Agreement | None:
    """The coefficients over every task's peaks together (one item per task and peak)."""
    votes = {(report.task.pk, *peak): v for report in reports for peak, v in report.votes.items()}
    if not votes:
        return None
    if names is None:
        names = _names({r for v in votes.values() for r in v})
    return study_agreement(votes, names)


def study_agreement(votes: dict, names: dict) -> Agreement:
    """`ml.agreement` on peaks x reviewers, kept or rejected."""
    reviewers = sorted({r for v in votes.values() for r in v})
    table = [[_label(v.get(r)) for r in reviewers] for v in votes.values()]
    return agreement(table, [names.get(r, str(r)) for r in reviewers], categories=CATEGORIES, settings=SETTINGS)


def _label(kept: bool | None) -> str | None:
    return None if kept is None else KEPT if kept else REJECTED


def _names(pks) -> dict:
    return dict(get_user_model().objects.filter(pk__in=pks).values_list("pk", "username"))


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


COEFFICIENTS = ("alpha", "kappa", "ac1", "observed")
CSV_COLUMNS = (
    "task",
    "peaks",
    "peaks_seen_by_two",
    "reviewers",
    "judgements",
    "kept",
    "rejected",
    *(f"{name}{part}" for name in COEFFICIENTS for part in ("", "_ci_low", "_ci_high")),
    "diagnostics",
)


def agreement_csv(reports: list[TaskReport], overall: Agreement | None):
    """CSV lines (webapp.lib.csv_export) of each task's coefficients and then the overall ones."""
    rows = [(report.task.slug, report.study) for report in reports if report.study is not None]
    if overall is not None:
        rows.append(("(all tasks)", overall))
    return csv_export.csv_lines(CSV_COLUMNS, (_csv_row(name, study) for name, study in rows))


def _csv_row(name: str, study: Agreement) -> list:
    figures = []
    for coefficient in COEFFICIENTS:
        low, high = getattr(study, f"{coefficient}_ci")
        figures += [_figure(getattr(study, coefficient)), _figure(low), _figure(high)]
    counts = [study.items, study.pairable_items, study.reviewers, study.judgements]
    labels = [study.labels.get(KEPT, 0), study.labels.get(REJECTED, 0)]
    return [name, *counts, *labels, *figures, " ".join(study.diagnostics)]


def _figure(value: float):
    return None if value != value else csv_export.figure(value, ".4f")


@dataclass(frozen=True)
class ReviewerAccuracy:
    reviewer: str
    peaks: int  # adjudicated peaks the reviewer decided
    agreed: int  # of which their keep/reject matched the curator's

    @property
    def accuracy(self) -> float:
        return self.agreed / self.peaks if self.peaks else float("nan")


def reviewer_accuracy(user, corpus=None, model=None, method: str | None = None) -> list[ReviewerAccuracy]:
    """Each reviewer against the adjudicated result (review.Adjudication, the curator's final
    decision): over the adjudicated peaks (note, task, span) they decided, how often their latest
    decision kept or rejected the peak as the curator did. Only disputed peaks are adjudicated, so
    this is accuracy on the hard cases, lower than on all peaks."""
    from webapp.review.models import Adjudication

    return accuracy_of(Adjudication.objects.visible_to(user), corpus, model, method)


def accuracy_of(adjudications, corpus=None, model=None, method: str | None = None) -> list[ReviewerAccuracy]:
    """reviewer_accuracy over the queryset of adjudications `adjudications`."""
    if corpus is not None:
        adjudications = adjudications.filter(note__corpus=corpus)
    final = {(a[0], a[1], a[2], a[3]): a[4] == "accept" for a in
             adjudications.values_list("note_id", "task_id", "start", "end", "decision")}  # fmt: skip
    if not final:
        return []
    rows = PeakDecision.objects.filter(note_id__in={k[0] for k in final}, task_id__in={k[1] for k in final})
    if model is not None:
        rows = rows.filter(model_version=model)
    if method:
        rows = rows.filter(method=method)
    latest: dict[tuple, bool] = {}
    for note_id, task_id, start, end, reviewer_id, decision in rows.order_by("updated", "id").values_list(
        "note_id", "task_id", "start", "end", "reviewer_id", "decision"
    ):
        if (note_id, task_id, start, end) in final:
            latest[(note_id, task_id, start, end, reviewer_id)] = decision != PeakDecision.Decision.REJECT
    tally: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for (*peak, reviewer_id), kept in latest.items():
        tally[reviewer_id][0] += 1
        tally[reviewer_id][1] += kept == final[tuple(peak)]
    names = _names(tally)
    return sorted((ReviewerAccuracy(names.get(r, str(r)), n, ok) for r, (n, ok) in tally.items()),
                  key=lambda a: a.reviewer)  # fmt: skip
