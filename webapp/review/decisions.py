"""Peak decisions: recording them (optimistic concurrency, audit), undo, conflicts between
reviewers, and the rule that turns them into rejected spans for dataset builds.

Rules
- One row per reviewer and peak (PeakDecision's unique constraint), so two reviewers never
  overwrite each other. A reviewer changing their own decision must send the version their page
  showed (0 when the page showed no decision); a different version means the page is stale
  (another tab, a second device): the change is refused with StaleDecision, which carries the
  current row so the page can show it.
- Undo ("u") reverts the reviewer's most recent change on the note: a new decision is deleted,
  a changed one goes back to its previous state (one level; `previous` keeps it); the rows of an
  accept-the-rest (one `batch`, webapp.review.bulk) are deleted together.
- Conflict: decisions of different reviewers on the same or overlapping spans of one (note,
  task, model version, method, template, relevance configuration) whose outcomes differ (accept / reject / adjust to a
  span). Both stay stored; the page shows all of them, who and when.
- Rejected spans for dataset builds (`rejected_spans`, used by
  webapp.datasets.building.rejected_char_spans): for each (note, task) and exact character span,
  each reviewer's LATEST decision on that span counts once, whatever model version, method,
  template or configuration it was made under (a span of the note is or is not evidence for the task, whichever
  model pointed at it). The span is rejected when rejects are at least half of those reviewers:
  a majority rejects, and a tie rejects too (a disputed peak stays out of training). Adjust
  counts as keeping the peak. A curator's decision on the span (webapp.review.adjudication) is
  final: it replaces the majority, whatever the reviewers decided. The builder then drops every
  group overlapping a rejected span.

Audit: every change is an AuditEvent REVIEW_DECISION with ids, span offsets and the decision,
never note text or the comment.
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from ml.relevance import default_config_key
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.db.prepared import Prepared
from webapp.review.models import Adjudication, PeakDecision


class DecisionError(Exception):
    """A decision that cannot be stored; the message is shown as written."""


class StaleDecision(DecisionError):
    def __init__(self, message: str, current: PeakDecision | None):
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class PeakContext:
    """Which map's peak: the note, task, model version, method, template and configuration key
    (empty: the default configuration of the method and template)."""

    note: object
    task: object
    model: object
    method: str
    template: str
    config_key: str = ""

    def filter(self) -> dict:
        return {
            "note": self.note,
            "task": self.task,
            "model_version": self.model,
            "method": self.method,
            "template": self.template,
            "config_key": self.config_key or default_config_key(self.method, self.template),
        }


def decide(
    ctx: PeakContext,
    reviewer,
    *,
    start: int,
    end: int,
    decision: str,
    expected_version: int,
    adjusted_start: int | None = None,
    adjusted_end: int | None = None,
    comment: str = "",
    profile=None,
    params: dict | None = None,
    guideline_version: int | None = None,
    active_ms: int | None = None,
) -> PeakDecision:
    """Store the reviewer's decision on the peak [start, end) (see module rules), with the task's
    guideline version it was made under and the active time it took (both None: not known)."""
    length = len(ctx.note.text)
    if not 0 <= start < end <= length:
        raise DecisionError(
            _("The peak [%(start)s, %(end)s) is not inside this %(length)s-character note.")
            % {"start": start, "end": end, "length": length}
        )
    if decision == PeakDecision.Decision.ADJUST:
        if adjusted_start is None or adjusted_end is None or not 0 <= adjusted_start < adjusted_end <= length:
            raise DecisionError(_("The adjusted boundaries must be a non-empty span inside the note."))
    else:
        adjusted_start = adjusted_end = None
    values = {
        "decision": decision,
        "adjusted_start": adjusted_start,
        "adjusted_end": adjusted_end,
        "comment": comment.strip(),
        "profile": profile,
        "params": params or {},
        "guideline_version": guideline_version,
        "active_ms": active_ms,
    }
    with transaction.atomic():
        found = _MINE.rows(None, **_ids(ctx), start=start, end=end, reviewer_id=reviewer.pk)  # locked
        row = PeakDecision.objects.get(pk=found[0][0]) if found else None
        if row is None:
            if expected_version != 0:
                raise StaleDecision(
                    _(
                        "Your earlier decision on this peak was undone in another window; nothing was saved. "
                        "Decide again."
                    ),
                    None,
                )
            try:
                with transaction.atomic():
                    row = PeakDecision.objects.create(
                        **ctx.filter(), start=start, end=end, reviewer=reviewer, version=1, **values
                    )
            except IntegrityError:
                current = PeakDecision.objects.filter(**ctx.filter(), start=start, end=end, reviewer=reviewer).first()
                raise StaleDecision(
                    _(
                        "You decided on this peak in another window a moment ago; nothing was saved. "
                        "Your current decision is shown."
                    ),
                    current,
                ) from None
            op = "create"
        else:
            if row.version != expected_version:
                raise StaleDecision(
                    _(
                        "This page was out of date: you changed this decision elsewhere (now version %(now)s, "
                        "the page showed version %(shown)s). Nothing was saved; your current decision is shown."
                    )
                    % {"now": row.version, "shown": expected_version},
                    row,
                )
            row.previous = row.state()
            for field, value in values.items():
                setattr(row, field, value)
            row.version += 1
            row.save()
            op = "update"
        _audit(reviewer, row, op)  # in the decision's transaction: no decision without its audit row
    return row


def _ids(ctx: PeakContext) -> dict:
    f = ctx.filter()
    pk = lambda value: getattr(value, "pk", value)  # noqa: E731  (an object or its id)
    return {"note_id": pk(f["note"]), "task_id": pk(f["task"]), "model_id": pk(f["model_version"]),
            "method": f["method"], "template": f["template"], "config": f["config_key"]}  # fmt: skip


def _mine(_shape, *, note_id, task_id, model_id, method, template, config, start, end, reviewer_id):
    """The reviewer's row on the peak, locked (FOR UPDATE) until the transaction ends."""
    rows = PeakDecision.objects.select_for_update().filter(
        note_id=note_id, task_id=task_id, model_version_id=model_id, method=method, template=template
    )
    rows = rows.filter(config_key=config, start=start, end=end, reviewer_id=reviewer_id)
    return rows.order_by("pk").values_list("pk")[:1]


_MINE = Prepared(_mine)  # webapp.db.prepared: built once per process, run with each decision's values


def undo_last(reviewer, note) -> tuple[str, PeakDecision] | None:
    """Revert the reviewer's latest change on the note; returns (what was done, the row) or None."""
    with transaction.atomic():
        row = (
            PeakDecision.objects.select_for_update()
            .filter(reviewer=reviewer, note=note)
            .order_by("-updated", "-id")
            .first()
        )
        if row is None:
            return None
        if row.batch is not None and row.previous is None:  # an accept-the-rest (webapp.review.bulk): undone as one
            return "undo-accept-rest", _undo_batch(reviewer, note, row)
        if row.previous is None:
            row_id = row.pk
            row.delete()
            row.pk = row_id
            op = "undo-create"
        else:
            state = row.previous
            row.decision = state["decision"]
            row.adjusted_start, row.adjusted_end = state["adjusted_start"], state["adjusted_end"]
            row.comment = state["comment"]
            row.profile_id = state.get("profile")
            row.params = state.get("params") or {}
            row.guideline_version = state.get("guideline_version")
            row.active_ms = state.get("active_ms")
            row.previous = None
            row.version += 1
            row.save()
            op = "undo-update"
        _audit(reviewer, row, op)
    return op, row


def _undo_batch(reviewer, note, row: PeakDecision) -> PeakDecision:
    """Delete the reviewer's rows of one accept-the-rest on the note, audited once; a row of it the
    reviewer changed since (and did not undo) stays, as their own decision. `row` (one of them)
    comes back with `batch_count`, how many were deleted."""
    rows = list(
        PeakDecision.objects.select_for_update().filter(
            reviewer=reviewer, note=note, batch=row.batch, previous__isnull=True
        )
    )
    PeakDecision.objects.filter(pk__in=[r.pk for r in rows]).delete()
    record(
        reviewer,
        AuditEvent.Action.REVIEW_DECISION,
        note,
        op="undo-accept-rest",
        batch=str(row.batch),
        note=note.pk,
        task=row.task_id,
        model_version=row.model_version_id,
        method=row.method,
        count=len(rows),
        spans=sorted([r.start, r.end] for r in rows),
    )
    row.batch_count = len(rows)
    return row


def _audit(reviewer, row: PeakDecision, op: str) -> None:
    record(
        reviewer,
        AuditEvent.Action.REVIEW_DECISION,
        row,
        op=op,
        note=row.note_id,
        task=row.task_id,
        model_version=row.model_version_id,
        method=row.method,
        span=[row.start, row.end],
        decision=row.decision,
        adjusted=[row.adjusted_start, row.adjusted_end] if row.adjusted_start is not None else None,
        version=row.version,
        profile=row.profile_id,
        guideline_version=row.guideline_version,
        active_ms=row.active_ms,
    )


# ---------------------------------------------------------------- reading


def decisions_on(ctx: PeakContext) -> list[PeakDecision]:
    return list(PeakDecision.objects.filter(**ctx.filter()).select_related("reviewer").order_by("start", "updated"))


@dataclass(eq=False)
class ShownDecision:
    """A reviewer's decision as the note page shows it: the PeakDecision fields its rows read and
    the reviewer's name, from one query built once per process (`shown_decisions`), not a model
    instance and its reviewer's."""

    Decision = PeakDecision.Decision

    pk: int
    reviewer_id: int
    username: str
    decision: str
    start: int
    end: int
    adjusted_start: int | None
    adjusted_end: int | None
    comment: str
    updated: object
    version: int
    span_text: str = ""
    adjusted_text: str = ""

    outcome = PeakDecision.outcome

    @property
    def reviewer(self):
        return self  # d.reviewer.get_username(), as for a PeakDecision

    def get_username(self) -> str:
        return self.username

    def get_decision_display(self) -> str:
        return str(dict(PeakDecision.Decision.choices).get(self.decision, self.decision))


def shown_decisions(ctx: PeakContext) -> list[ShownDecision]:
    """`decisions_on` as the note page reads them (the same rows and order)."""
    shown = [ShownDecision(*row) for row in _SHOWN.rows(None, **_ids(ctx))]
    for d in shown:
        d.updated = _aware(d.updated)
    return shown


def _aware(value):
    """A time as the ORM gives it: SQLite's rows (the embedded database) hold it as naive UTC text."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if value is not None and settings.USE_TZ and timezone.is_naive(value):
        value = timezone.make_aware(value, datetime.UTC)
    return value


def _shown(_shape, *, note_id, task_id, model_id, method, template, config):
    rows = PeakDecision.objects.filter(
        note_id=note_id, task_id=task_id, model_version_id=model_id, method=method, template=template
    )
    return (
        rows.filter(config_key=config)
        .order_by("start", "updated")
        .values_list(
            "pk",
            "reviewer_id",
            "reviewer__username",
            "decision",
            "start",
            "end",
            "adjusted_start",
            "adjusted_end",
            "comment",
            "updated",
            "version",
        )  # fmt: skip
    )


_SHOWN = Prepared(_shown)


def overlapping(decisions: Iterable[PeakDecision], start: int, end: int) -> list[PeakDecision]:
    return [d for d in decisions if d.start < end and start < d.end]


def is_conflict(decisions: Iterable[PeakDecision]) -> bool:
    """Two reviewers' decisions with different outcomes."""
    by_reviewer = {}
    for d in decisions:
        by_reviewer.setdefault(d.reviewer_id, set()).add(d.outcome)
    outcomes = set().union(*by_reviewer.values()) if by_reviewer else set()
    return len(by_reviewer) > 1 and len(outcomes) > 1


def rejected_spans(note_ids, task_ids) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """{(note_id, task_id): [(start, end), ...]} of spans rejected under the module's rule, a
    curator's decision (review.Adjudication) on a span replacing its reviewers' majority."""
    rows = (
        PeakDecision.objects.filter(note_id__in=list(note_ids), task_id__in=list(task_ids))
        .order_by("updated", "id")
        .values_list("note_id", "task_id", "start", "end", "reviewer_id", "decision")
    )
    latest: dict[tuple, dict[int, str]] = defaultdict(dict)
    for note_id, task_id, start, end, reviewer_id, decision in rows:
        latest[(note_id, task_id, start, end)][reviewer_id] = decision  # ordered by time: the last one stays
    final = {  # a curator's decision on a span overrides its reviewers'
        (note_id, task_id, start, end): decision == Adjudication.Decision.REJECT
        for note_id, task_id, start, end, decision in Adjudication.objects.filter(
            note_id__in=list(note_ids), task_id__in=list(task_ids)
        ).values_list("note_id", "task_id", "start", "end", "decision")
    }
    out: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for (note_id, task_id, start, end), by_reviewer in latest.items():
        rejects = sum(1 for d in by_reviewer.values() if d == PeakDecision.Decision.REJECT)
        if (note_id, task_id, start, end) not in final and rejects and 2 * rejects >= len(by_reviewer):
            out[(note_id, task_id)].append((start, end))
    for (note_id, task_id, start, end), rejected in final.items():
        if rejected:
            out[(note_id, task_id)].append((start, end))
    return {key: sorted(spans) for key, spans in out.items()}
