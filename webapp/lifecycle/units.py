"""Transitions of a unit of work (a WorkUnit row), each one atomic conditional UPDATE.

    claim(Model, pk, worker)   queued, or held by a lost worker -> running, attempts + 1
    beat(unit)                 heartbeat = now, while the unit is still this attempt's
    finish / fail / cancelled  end the attempt (only the attempt that holds it)
    release(unit)              back to queued (a temporary problem; a retry follows)
    request_cancel(Model, pk)  queued -> cancelled at once; running -> cancelling
    requeue(Model, pk)         cancelled | failed | lost -> queued (Resume)
    fate(unit)                 what became of a unit this attempt no longer holds, in words

`owned(unit)` is the guard of every write a worker makes: the row, with this unit's attempt
number, still held. A worker whose unit was taken over (its heartbeat went stale and another
worker claimed it) or cancelled finds nothing to update and stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import DateTimeField, ExpressionWrapper, F, Q
from django.db.models.functions import Coalesce, Now

from webapp.lifecycle import signals
from webapp.lifecycle.models import WorkUnit, stall_seconds
from webapp.lifecycle.status import HELD, RESUMABLE, JobStatus


@dataclass
class Released:
    """A unit its worker gave back because it cannot do it (a model it cannot load:
    webapp.pipeline.releases), returned by a kind's function: the runner sends it again after
    `delay` seconds, unless it `failed` (every live worker gave it back often enough)."""

    failed: bool
    delay: float  # seconds before sending it again (when not failed)
    message: str


def stale_before(now=None):
    """The heartbeat before which a worker counts as lost. Without `now`: measured on the
    database's clock (heartbeats are written with it), so a worker whose own clock is off
    neither takes live units for lost nor misses lost ones."""
    return before(stall_seconds(), now)


def before(seconds: float, now=None):
    """`seconds` ago, on the database's clock unless `now` is given."""
    if now is None:
        return ExpressionWrapper(Now() - timedelta(seconds=seconds), output_field=DateTimeField())
    return now - timedelta(seconds=seconds)


def lost(now=None, held=HELD) -> Q:
    """Held by a worker that stopped beating WORK_STALL_SECONDS ago (killed, machine lost)."""
    stale = stale_before(now)
    return Q(status__in=held) & (
        Q(heartbeat__lt=stale)
        | Q(heartbeat__isnull=True, started__lt=stale)
        | Q(heartbeat__isnull=True, started__isnull=True)
    )


def claim(model: type[WorkUnit], pk: int, worker: str = "", *, select_related=(), **changes) -> WorkUnit | None:
    """Take the unit for this worker: a queued one, or one whose worker is lost (a redelivered
    message, or one sent again by the sweeper). None when there is nothing to do: it is held by a
    live worker, ended, or cancelled meanwhile. (A lost unit that was being cancelled is left to
    the sweeper, which ends it cancelled with its kind's clean-up.)"""
    rows = model.objects.filter(pk=pk)
    claimed = rows.filter(Q(status=JobStatus.QUEUED) | (lost() & Q(status=JobStatus.RUNNING))).update(
        status=JobStatus.RUNNING,
        attempts=F("attempts") + 1,
        worker=worker[:200],
        heartbeat=Now(),
        started=Coalesce(F("started"), Now()),
        finished=None,
        **changes,
    )
    if not claimed:
        return None
    queryset = model.objects.select_related(*select_related) if select_related else model.objects
    return queryset.get(pk=pk)


def fate(unit: WorkUnit) -> str:
    """What became of `unit` once this attempt lost it, for the stopping worker's log: only queued
    again (the sweeper found its heartbeat stale; no worker holds it yet), taken over by a later
    attempt, or ended (cancelled, failed, done)."""
    row = type(unit).objects.filter(pk=unit.pk).values("status", "attempts", "worker").first()
    if row is None:
        return "deleted"
    if row["attempts"] > unit.attempts:
        return f"taken over by attempt {row['attempts']} ({row['worker'] or 'a worker'}), now {row['status']}"
    if row["status"] == JobStatus.QUEUED:
        return "queued again after its heartbeat went stale; no other worker holds it yet"
    return f"ended {row['status']}"


def owned(unit: WorkUnit, held=HELD):
    """The unit's row, if this attempt still holds it. `held`: the statuses in which a worker
    holds this kind of unit (a relevance job is held only while planning)."""
    return type(unit).objects.filter(pk=unit.pk, attempts=unit.attempts, status__in=held)


def beat(unit: WorkUnit, held=HELD, **fields) -> str | None:
    """Record a sign of life (and any progress fields). Returns the status the unit is in
    (running, or cancelling: stop at the next safe point), None if this attempt lost it."""
    for status in held:
        if owned(unit, held).filter(status=status).update(heartbeat=Now(), **fields):
            return status
    return None


def finish(unit: WorkUnit, **fields) -> bool:
    return owned(unit).update(status=JobStatus.DONE, finished=Now(), heartbeat=Now(), error="", **fields) == 1


def fail(unit: WorkUnit, message: str, **fields) -> bool:
    return owned(unit).update(status=JobStatus.FAILED, finished=Now(), heartbeat=Now(), error=message, **fields) == 1


def cancelled(unit: WorkUnit, **fields) -> bool:
    """The worker stopped at a safe point after a cancel."""
    return owned(unit).update(status=JobStatus.CANCELLED, finished=Now(), heartbeat=Now(), **fields) == 1


def release(unit: WorkUnit, message: str = "") -> bool:
    """Back to the queue (a temporary problem; the task's retry claims it again)."""
    return owned(unit).update(status=JobStatus.QUEUED, heartbeat=Now(), error=message) == 1


def request_cancel(model: type[WorkUnit], pk: int, **changes) -> str | None:
    """queued (or held by a lost worker) -> cancelled at once; running -> cancelling, the worker
    stops at its next safe point. Returns the new status, None if the unit could not be cancelled."""
    rows = model.objects.filter(pk=pk)
    if rows.filter(Q(status=JobStatus.QUEUED) | lost()).update(status=JobStatus.CANCELLED, finished=Now(), **changes):
        signals.announce_after_commit(model, pk)  # no task of its will run to announce it
        return JobStatus.CANCELLED
    if rows.filter(status=JobStatus.RUNNING).update(status=JobStatus.CANCELLING, **changes):
        return JobStatus.CANCELLING
    return None


def requeue(model: type[WorkUnit], pk: int, **changes) -> bool:
    """Resume: a cancelled or failed unit, or one held by a lost worker, is queued again."""
    return (
        model.objects.filter(Q(status__in=RESUMABLE) | lost(), pk=pk).update(
            status=JobStatus.QUEUED, finished=None, error="", heartbeat=Now(), **changes
        )
        == 1
    )
