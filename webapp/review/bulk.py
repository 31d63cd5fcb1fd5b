"""Accept the rest: one action accepts every peak of the note and task shown (under the map and
peak setting shown) that the reviewer has not decided yet.

Rules
- "Undecided" is the reviewer's own state: a peak someone else decided is still the reviewer's to
  decide. Peaks the reviewer decided (accept, reject or adjust) are left as they are.
- The rows it creates share one `batch` id (PeakDecision.batch); `decisions.undo_last` undoes the
  whole batch at once when it is the reviewer's latest change on the note, so "u" after accepting
  the rest takes every one of them back. A later decision on one of them is undone first (one
  step back, to accepted), then the batch; a row changed since and not undone stays.
- One audit event for the action (REVIEW_DECISION, `details.op` = "accept-rest", with the count and
  the spans), one for its undo ("undo-accept-rest").
- Each row stores the guideline version the page showed; active time is not measured for a
  peak that was never selected (stored empty).
"""

from __future__ import annotations

import uuid

from django.db import transaction

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.review.decisions import PeakContext
from webapp.review.models import PeakDecision


def undecided(ctx: PeakContext, reviewer, spans) -> list[tuple[int, int]]:
    """The peaks `spans` ([(start, end)]) the reviewer has not decided under the context's map."""
    decided = set(PeakDecision.objects.filter(**ctx.filter(), reviewer=reviewer).values_list("start", "end"))
    return [tuple(span) for span in spans if tuple(span) not in decided]


def accept_rest(
    ctx: PeakContext,
    reviewer,
    spans,
    *,
    expected: int | None = None,
    profile=None,
    params: dict | None = None,
    guideline_version: int | None = None,
) -> list[PeakDecision]:
    """Accept every peak of `spans` the reviewer has not decided (module rules); the rows made.
    `expected`: the count the confirmation named; a different count (the page is out of date)
    raises StaleCount and stores nothing."""
    with transaction.atomic():
        # the reviewer's rows on the map, locked: a decision in another tab waits for this one
        list(PeakDecision.objects.select_for_update().filter(**ctx.filter(), reviewer=reviewer).values_list("pk"))
        rest = undecided(ctx, reviewer, spans)
        if expected is not None and expected != len(rest):
            raise StaleCount(len(rest))
        if not rest:
            return []
        batch = uuid.uuid4()
        rows = PeakDecision.objects.bulk_create(
            [
                PeakDecision(
                    **ctx.filter(),
                    start=a,
                    end=b,
                    reviewer=reviewer,
                    decision=PeakDecision.Decision.ACCEPT,
                    profile=profile,
                    params=params or {},
                    guideline_version=guideline_version,
                    batch=batch,
                )
                for a, b in rest
            ]
        )
        record(
            reviewer,
            AuditEvent.Action.REVIEW_DECISION,
            ctx.note,
            op="accept-rest",
            batch=str(batch),
            note=ctx.note.pk,
            task=ctx.task.pk,
            model_version=ctx.model.pk,
            method=ctx.method,
            count=len(rows),
            spans=[list(span) for span in rest],
            profile=getattr(profile, "pk", None),
            guideline_version=guideline_version,
        )
    return rows


class StaleCount(Exception):
    def __init__(self, now: int):
        super().__init__(now)
        self.now = now
