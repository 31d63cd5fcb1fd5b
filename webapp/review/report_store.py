"""The review report, computed once per change and stored: the page and its CSV read figures a
worker computed (review.ReportSnapshot), never the 1,000 bootstrap resamples per coefficient.

A report's SCOPE is what its figures are computed from: the projects its reader sees (their ids;
every project for a site admin) and its filters (corpus, model version, method); readers with the
same projects share one snapshot. Its STAMP is a fingerprint of the rows the figures come from:
for the peak decisions, the curators' adjudications, the imported gold annotations and the spans
reviewers added in the app (when that model is there), each the count and the latest change
time. A decision made, changed or undone changes its table's count or latest time, so the stamp
moves; the figures were computed from the stamp they store.

`current(user, ...)` (the page): the snapshot of the reader's scope with whether its figures are
fresh; a stale or missing one is queued (one unit per scope, under the one lifecycle, so two pages
loading at once queue it once) and the page shows the last figures with their time meanwhile.
`run(snapshot)` (the worker, workers.reports): the stamp first, then the figures (reports.py and
ml.span_agreement), stored with that stamp, so decisions made while it computes leave the stamp
stale and the next page load queues it again. Cost per page: the snapshot (1 query) and the stamp
(one aggregate per table over the scope's rows), whatever the number of decisions; the stamp is
looked at once per REPORT_STAMP_SECONDS per scope (the cache), so a change shows as "newer
figures coming" at most that late.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Max, Q
from django.utils import timezone

from ml.span_agreement import Span, SpanSettings, span_agreement
from webapp.corpus.models import Annotation, Note, Task
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import ACTIVE, JobStatus
from webapp.pipeline.models import RelevanceMap
from webapp.projects.roles import Capability, projects_with
from webapp.review import reports, timing
from webapp.review.models import AddedSpan, Adjudication, PeakDecision, ReportSnapshot

TASK = "workers.reports.compute_report"
VERSION = 3  # of the figures' layout: figures stored by another version are recomputed
SPAN_SETTINGS = SpanSettings()


@dataclass
class ReportState:
    snapshot: ReportSnapshot
    fresh: bool  # the stored figures were computed from the rows as they are now

    @property
    def figures(self) -> dict | None:
        """The last figures stored in this version's layout, None before any."""
        figures = self.snapshot.figures
        return figures if (figures or {}).get("version") == VERSION else None

    @property
    def coming(self) -> bool:
        """Figures newer than those shown are being computed."""
        return not self.fresh


def scope_of(project_ids, corpus=None, model=None, method: str | None = None) -> str:
    projects = "all" if project_ids is None else ",".join(map(str, sorted(project_ids)))
    corpus_id, model_id = getattr(corpus, "pk", None) or "", getattr(model, "pk", None) or ""
    return f"projects={projects}|corpus={corpus_id}|model={model_id}|method={method or ''}"


def current(user, corpus=None, model=None, method: str | None = None) -> ReportState:
    """The stored report `user` may read under these filters; queues its computation when stale."""
    project_ids = projects_with(user, Capability.VIEW)
    snapshot, _ = ReportSnapshot.objects.get_or_create(
        scope=scope_of(project_ids, corpus, model, method),
        defaults={
            "project_ids": project_ids,
            "corpus": corpus,
            "model_version": model,
            "method": method or "",
            "status": JobStatus.DONE,
        },
    )
    looked = recent_stamp(snapshot)
    fresh = (snapshot.figures or {}).get("version") == VERSION and snapshot.stamp == looked
    if not fresh:
        refresh(snapshot)
    return ReportState(snapshot, fresh)


def refresh(snapshot: ReportSnapshot) -> bool:
    """Queue the snapshot's computation unless one is queued or running (a lost worker's is the
    sweeper's to recover); True when this call queued it."""
    if snapshot.status in ACTIVE and not snapshot.is_stalled:
        return False
    queued = (
        ReportSnapshot.objects.filter(pk=snapshot.pk)
        .exclude(status__in=ACTIVE)
        .update(status=JobStatus.QUEUED, finished=None, error="", heartbeat=timezone.now())
    )
    if queued:
        snapshot.status = JobStatus.QUEUED
        queue.send_on_commit(TASK, snapshot.pk)
    return bool(queued)


def _in_projects(model, snapshot: ReportSnapshot):
    """The rows of `model` in the snapshot's projects (the scoping of webapp.projects.scoping)."""
    rows = model.objects.all()
    if snapshot.project_ids is not None:
        condition = Q(pk__in=[])
        for path in model.project_paths:
            condition |= Q(**{f"{path}__in": snapshot.project_ids})
        rows = rows.filter(condition)
    return rows


def _scoped(model, snapshot: ReportSnapshot):
    """The rows of `model` in the snapshot's projects and corpus."""
    rows = _in_projects(model, snapshot)
    if snapshot.corpus_id is not None:
        rows = rows.filter(note__corpus_id=snapshot.corpus_id)
    return rows


def _decisions(snapshot):
    rows = _scoped(PeakDecision, snapshot)
    if snapshot.model_version_id is not None:
        rows = rows.filter(model_version_id=snapshot.model_version_id)
    if snapshot.method:
        rows = rows.filter(method=snapshot.method)
    return rows


def _inputs(snapshot) -> list[tuple[str, object, str]]:
    """(name, queryset, its latest-change field) of every table the figures come from."""
    return [
        ("decisions", _decisions(snapshot), "updated"),
        ("adjudications", _scoped(Adjudication, snapshot), "updated"),
        ("gold", _scoped(Annotation, snapshot), "created"),
        ("added", _scoped(AddedSpan, snapshot), "updated"),
    ]


def recent_stamp(snapshot: ReportSnapshot) -> str:
    """The stamp as looked at within REPORT_STAMP_SECONDS (kept in the cache every web worker
    shares, so a page load costs a cache read and not a count over the decisions)."""
    seconds = settings.REPORT_STAMP_SECONDS
    if seconds <= 0:
        return stamp(snapshot)
    key = f"review-report-stamp:{VERSION}:{snapshot.pk}"
    value = cache.get(key)
    if value is None:
        value = stamp(snapshot)
        cache.set(key, value, seconds)
    return value


def stamp(snapshot: ReportSnapshot) -> str:
    """The fingerprint of the rows the figures come from: each table's count and latest change,
    and the newest relevance map's id (maps are only added, or erased with their notes'
    decisions; their count would cost a scan of the largest table)."""
    parts = []
    for name, rows, changed in _inputs(snapshot):
        got = rows.aggregate(n=Count("pk"), last=Max(changed))
        parts.append(f"{name}={got['n']}@{got['last'].timestamp() if got['last'] else ''}")
    newest_map = _scoped(RelevanceMap, snapshot).aggregate(last=Max("pk"))["last"]
    parts.append(f"maps={newest_map or ''}")
    return ";".join(parts)


def run(snapshot: ReportSnapshot, heart=None) -> None:
    """Compute and store the snapshot's figures (the worker's work; idempotent)."""
    started = time.perf_counter()
    now_stamp = stamp(snapshot)
    figures = compute(snapshot)
    units.finish(
        snapshot,
        stamp=now_stamp,
        figures=figures,
        computed=timezone.now(),
        compute_seconds=round(time.perf_counter() - started, 3),
    )


def compute(snapshot: ReportSnapshot) -> dict:
    """Every figure the page and the CSV show, as JSON."""
    corpus = snapshot.corpus
    task_rows = reports.reports_of(_decisions(snapshot))
    overall = reports.overall_agreement(task_rows)
    accuracy = reports.accuracy_of(
        _scoped(Adjudication, snapshot), corpus, snapshot.model_version, snapshot.method or None
    )
    return {
        "version": VERSION,
        "tasks": [_task(r) for r in task_rows],
        "overall": overall.to_dict() if overall is not None else None,
        "accuracy": [
            {"reviewer": a.reviewer, "peaks": a.peaks, "agreed": a.agreed, "accuracy": _num(a.accuracy)}
            for a in accuracy
        ],
        "spans": {
            "gold": gold_span_agreement(_scoped(Annotation, snapshot)),
            "added": added_span_agreement(snapshot),
        },
        "time": timing.time_parts(
            _in_projects(PeakDecision, snapshot),
            _in_projects(RelevanceMap, snapshot),
            corpus,
            snapshot.model_version,
            snapshot.method or None,
        ),
    }


def _task(report: reports.TaskReport) -> dict:
    return {
        "slug": report.task.slug,
        "description": report.task.description,
        **{k: getattr(report, k) for k in ("notes", "peaks", "decisions", "accepted", "rejected", "adjusted")},
        "reviewers": report.reviewers,
        "shared_peaks": report.shared_peaks,
        "agreements": [
            {"first": a.first, "second": a.second, "peaks": a.peaks, "observed": a.observed, "kappa": _num(a.kappa)}
            for a in report.agreements
        ],
        "study": report.study.to_dict() if report.study is not None else None,
    }


def _num(value: float):
    return None if value != value else value


def gold_span_agreement(annotations) -> dict | None:
    """Span agreement of imported gold: each annotation's evidence ranges are its annotator's
    spans (the import keeps each file's annotator apart, corpus.gold); a document is a (note,
    task) pair, a span's label its task, so per_label is per task. None without two annotators
    on one pair."""
    spans, annotated = [], defaultdict(set)
    for note_id, task_id, name, evidence in annotations.values_list("note_id", "task_id", "annotator_name", "evidence"):
        annotated[(note_id, task_id)].add(name)
        spans += [(note_id, task_id, name, start, end) for start, end in evidence]
    return _span_figures(spans, annotated)


def added_span_agreement(snapshot) -> dict | None:
    """Span agreement of the spans reviewers added in the app (review.AddedSpan): a reviewer who
    decided a peak of a (note, task) pair or added a span there has read it."""
    annotated = defaultdict(set)
    spans = []
    names = _usernames(_scoped(AddedSpan, snapshot), _decisions(snapshot))
    for note_id, task_id, reviewer_id, start, end in _scoped(AddedSpan, snapshot).values_list(
        "note_id", "task_id", "reviewer_id", "start", "end"
    ):
        annotated[(note_id, task_id)].add(names[reviewer_id])
        spans.append((note_id, task_id, names[reviewer_id], start, end))
    if not spans:
        return None
    pairs = set(annotated)
    for note_id, task_id, reviewer_id in (
        _decisions(snapshot).values_list("note_id", "task_id", "reviewer_id").distinct()
    ):
        if (note_id, task_id) in pairs:
            annotated[(note_id, task_id)].add(names.get(reviewer_id, str(reviewer_id)))
    return _span_figures(spans, annotated)


def _usernames(*querysets) -> dict:
    from django.contrib.auth import get_user_model

    ids = set()
    for rows in querysets:
        ids |= set(rows.values_list("reviewer_id", flat=True).distinct())
    return dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))


def _span_figures(spans, annotated) -> dict | None:
    paired = {doc for doc, names in annotated.items() if len(names) >= 2}
    if not paired:
        return None
    slugs = dict(Task.objects.filter(pk__in={t for _, t in annotated}).values_list("pk", "slug"))
    texts = dict(Note.objects.filter(pk__in={n for n, _ in paired}).values_list("pk", "text"))
    result = span_agreement(
        [Span((n, t), who, slugs[t], start, end) for n, t, who, start, end in spans],
        annotated,
        {(n, t): texts[n] for n, t in paired},
        SPAN_SETTINGS,
        labels_of={(n, t): (slugs[t],) for n, t in annotated},  # a task's alpha on its own notes
    )
    return result.to_dict()


#: The span agreement's columns, after the peaks' (reports.CSV_COLUMNS), named as the keys of
#: `python -m ml agreement --spans`; a row fills either the peaks' figures or these.
SPAN_FIGURES = ("f1_exact", "f1_overlap", "alpha_tokens")
SPAN_COLUMNS = (
    "source",  # peak_decisions, imported_gold or added_spans
    "annotators",
    "paired_documents",
    "spans",
    "tokens",
    *(f"{name}{part}" for name in SPAN_FIGURES for part in ("", "_ci_low", "_ci_high")),
)
CSV_COLUMNS = (*reports.CSV_COLUMNS, *SPAN_COLUMNS)
SPAN_SOURCES = (("gold", "imported_gold"), ("added", "added_spans"))  # figures' key, CSV's source


def agreement_csv(figures: dict):
    """The report's CSV (CSV_COLUMNS) from stored figures: each task's peak coefficients and all
    tasks', then the span agreement of each source per task (a span's label is its task) and
    over all tasks; the diagnostics of a task's row are those that name it."""
    rows = [(t["slug"], t["study"]) for t in figures["tasks"] if t["study"] is not None]
    if figures.get("overall") is not None:
        rows.append(("(all tasks)", figures["overall"]))
    lines = [_csv_row(name, study) for name, study in rows]
    for key, source in SPAN_SOURCES:
        lines += _span_rows(source, (figures.get("spans") or {}).get(key))
    return reports.csv_export.csv_lines(CSV_COLUMNS, lines)


def _csv_row(name: str, study: dict) -> list:
    figures = []
    for coefficient in reports.COEFFICIENTS:
        low, high = study[f"{coefficient}_ci"]
        figures += [_figure(study[coefficient]), _figure(low), _figure(high)]
    counts = [study["items"], study["pairable_items"], study["reviewers"], study["judgements"]]
    labels = [study["labels"].get(reports.KEPT, 0), study["labels"].get(reports.REJECTED, 0)]
    spans = [None] * (len(SPAN_COLUMNS) - 1)
    return [name, *counts, *labels, *figures, " ".join(study["diagnostics"]), "peak_decisions", *spans]


def _span_rows(source: str, result: dict | None) -> list[list]:
    if result is None:
        return []
    blank = [None] * (len(reports.CSV_COLUMNS) - 2)  # the peaks' figures, between task and diagnostics
    out = []
    for label, figures in result["per_label"].items():
        said = " ".join(line for line in result["diagnostics"] if line.startswith(f"Label {label!r} "))
        counts = [None, None, figures["spans"], figures.get("tokens")]
        out.append([label, *blank, said, source, *counts, *_span_figures_of(figures)])
    counts = [result["annotators"], result["paired_documents"], result["spans"], result["tokens"]]
    out.append(["(all tasks)", *blank, " ".join(result["diagnostics"]), source, *counts, *_span_figures_of(result)])
    return out


def _span_figures_of(figures: dict) -> list:
    out = []
    for name in SPAN_FIGURES:
        low, high = figures.get(f"{name}_ci") or (None, None)
        out += [_figure(figures.get(name)), _figure(low), _figure(high)]
    return out


def _figure(value):
    return None if value is None else reports.csv_export.figure(value, ".4f")
