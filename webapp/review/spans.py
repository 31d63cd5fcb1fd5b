"""Spans the model missed: words a reviewer marks as evidence for the task under review.

Rules
- A span is snapped to whole words as a peak is (`ml.peaks.words.snap_to_words`, shared with missed
  identifiers): widened to the words it touches, then
  trimmed to letters and digits at both ends; a caret gives the word at it. What is stored is
  always the snapped span, whatever offsets the page posted.
- One row per (note, task, reviewer, span): adding the same words twice keeps one row. A
  reviewer's spans never change another reviewer's (edit and remove find the row by its id AND
  its reviewer: another reviewer's id is unknown, as for a span of another project).
- Each row keeps the task's guideline version the page showed and the active time it took
  (stored empty when not measured or implausible, never refused), and the review round the page
  was in (None outside rounds). In a round, the pair's added spans are part of its judgement
  (webapp.review.span_rounds).
- Every add, edit and removal is audited (REVIEW_DECISION, `details.kind` = "added_span", with ids
  and offsets, never the note's words or the comment).
"""

from __future__ import annotations

from django.db import transaction
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from ml.peaks.words import snap_to_words
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.review.models import AddedSpan

MAX_SPAN_CHARS = 2_000  # a span longer than this is not evidence words but a paragraph


class SpanError(Exception):
    """A span that cannot be stored; the message is shown as written."""


def _snapped(note, start: int, end: int) -> tuple[int, int]:
    length = len(note.text)
    if not (0 <= start <= length and 0 <= end <= length):
        raise SpanError(
            _("The span [%(start)s, %(end)s) is not inside this %(length)s-character note.")
            % {"start": start, "end": end, "length": length}
        )
    a, b = snap_to_words(note.text, start, end)
    if a >= b:
        raise SpanError(_("There is no word there: select the words to add."))
    if b - a > MAX_SPAN_CHARS:
        raise SpanError(
            _("A span is at most %(count)s characters; select fewer words.")
            % {"count": number_format(MAX_SPAN_CHARS, force_grouping=True)}
        )
    return a, b


def add(
    note,
    task,
    reviewer,
    *,
    start: int,
    end: int,
    round=None,
    guideline_version: int | None = None,
    active_ms: int | None = None,
    comment: str = "",
) -> tuple[AddedSpan, bool]:
    """Store the reviewer's span (snapped); (row, created). The same words again: the row there."""
    a, b = _snapped(note, start, end)
    with transaction.atomic():
        row, created = AddedSpan.objects.get_or_create(
            note=note,
            task=task,
            reviewer=reviewer,
            start=a,
            end=b,
            defaults={
                "round": round,
                "guideline_version": guideline_version,
                "active_ms": active_ms,
                "comment": comment.strip(),
            },
        )
        if created:
            _audit(reviewer, row, "create")
    return row, created


def edit(row: AddedSpan, reviewer, *, start: int, end: int, active_ms: int | None = None, comment=None) -> AddedSpan:
    """Move the row's bounds (snapped) and/or its comment; refused when the reviewer already has
    a span on exactly those words."""
    a, b = _snapped(row.note, start, end)
    with transaction.atomic():
        row = AddedSpan.objects.select_for_update().select_related("note").get(pk=row.pk)
        clash = AddedSpan.objects.filter(note_id=row.note_id, task_id=row.task_id, reviewer=reviewer, start=a, end=b)
        if clash.exclude(pk=row.pk).exists():
            raise SpanError(_("You already added a span on exactly these words."))
        before = [row.start, row.end]
        row.start, row.end = a, b
        if comment is not None:
            row.comment = comment.strip()
        if active_ms is not None:
            row.active_ms = (row.active_ms or 0) + active_ms
        row.version += 1
        row.save()
        _audit(reviewer, row, "update", before=before)
    return row


def remove(row: AddedSpan, reviewer) -> None:
    with transaction.atomic():
        row_id = row.pk
        row.delete()
        row.pk = row_id
        _audit(reviewer, row, "delete")


def _audit(reviewer, row: AddedSpan, op: str, **extra) -> None:
    record(
        reviewer,
        AuditEvent.Action.REVIEW_DECISION,
        row,
        kind="added_span",
        op=op,
        note=row.note_id,
        task=row.task_id,
        span=[row.start, row.end],
        round=row.round_id,
        version=row.version,
        guideline_version=row.guideline_version,
        active_ms=row.active_ms,
        **extra,
    )


# ---------------------------------------------------------------- reading


def of_pair(note, task):
    """Every reviewer's added spans on the note for the task, in order."""
    if task is None:
        return AddedSpan.objects.none()
    return AddedSpan.objects.filter(note=note, task=task).select_related("reviewer").order_by("start", "end", "id")


def mine(user, span_id) -> AddedSpan:
    """The user's own span by id (AddedSpan.DoesNotExist for another's, or none)."""
    return AddedSpan.objects.select_related("note", "task").get(pk=span_id, reviewer=user)
