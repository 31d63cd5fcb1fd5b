"""The one task of every kind of long work (webapp.lifecycle.kinds.KINDS): claim, beat, retry, fail.

    run_unit(task, kind, pk):
        unit = claim                    atomic: queued (or held by a lost worker) -> running;
                                        None: a duplicate message, held by a live worker, ended
        with Heartbeat(unit) as heart:  beats every WORK_HEARTBEAT_SECONDS, tells cancels and take-overs
            kind.function(unit, heart)  the app's domain function ends the unit (done, cancelled)
        a temporary problem             back to the queue, the task retried after the kind's back-off
        any other error (or retries spent)   kind.fail(unit, exc): recorded in plain words

Each kind's messages keep their own Celery name (kind.task, args=[pk]; the older kinds' names from
before this runner, so messages waiting in a broker, the fault drill and scripts keep working):
every name is this one function, registered from the registry with the kind's retry limit and
time limit, so routes (by name), retries and the webhooks' and the sweeper's lookups
(kinds.by_task) all derive from KINDS. A unit whose worker dies mid-work is queued again by the
recovery sweeper (webapp.lifecycle.recovery) and claimed afresh; a task that ends on an error it
could not record is requeued at once (webapp.lifecycle.ended, via workers.celery_app).

Logs and task results carry kind names, ids, statuses and stack frames, never note text: a
database error's message can quote the failing row, so an error is logged by its type, its frames
and the kind's own plain words; a task's result is the function's status string, else the unit's
fate ("ended done"), never what the function returned (a build's statistics name its labels).
"""

from __future__ import annotations

import logging
import traceback

from django.conf import settings
from django.db import close_old_connections, connection

from webapp.lifecycle import kinds, units
from webapp.lifecycle.ended import TRANSIENT
from webapp.lifecycle.heartbeat import Heartbeat
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)

TASKS = {}  # kind name -> its registered Celery task


def run_unit(task, kind: kinds.Kind, pk: int):
    """Claim unit `pk` of `kind` for this worker, run its work inside its heartbeat, and end it."""
    try:
        unit = _claim(kind, pk, worker_name(task))
    except TRANSIENT as exc:
        retry(task, exc)  # nothing was claimed: just try again later
    if unit is None:
        log.info("%s %s: nothing to do (held by a live worker, ended, cancelled or deleted)", kind.name, pk)
        return "nothing to do"
    log.info("%s %s: attempt %s", kind.name, pk, unit.attempts)
    try:
        with Heartbeat(unit, held=kind.held) as heart:
            outcome = kinds.resolve(kind.function)(unit, heart=heart)
    except TRANSIENT as exc:
        retry_released(task, exc, unit, kinds.resolve(kind.release) if kind.release else units.release)
        return _failed(kind, unit, exc)  # retries spent, or the unit is no longer this attempt's
    except Exception as exc:  # noqa: BLE001 - recorded in plain words; the open transaction was rolled back
        return _failed(kind, unit, exc)
    if isinstance(outcome, units.Released):
        return send_released(task, unit, outcome, kind.name)
    if not isinstance(outcome, str):  # what a function returns may hold data: only the unit's fate is said
        outcome = units.fate(unit)
    log.info("%s %s: %s", kind.name, pk, outcome)
    return outcome


def _claim(kind: kinds.Kind, pk: int, worker: str):
    if kind.claim:
        return kinds.resolve(kind.claim)(pk, worker)
    return units.claim(kind.model_class(), pk, worker)


def _failed(kind: kinds.Kind, unit, exc: BaseException) -> str:
    """Record the failure (the kind's `fail`, else in words naming the error's type only) and log it:
    the type and the frames, and the plain words when the kind's `fail` returns them."""
    if kind.fail:
        said = kinds.resolve(kind.fail)(unit, exc)
    elif isinstance(exc, TRANSIENT):
        units.fail(unit, said := kind.retry.gave_up(exc))
    else:
        said = (
            f"The {kind.name} stopped on an unexpected error ({type(exc).__name__}); the worker log has the "
            f"details under {kind.name} {unit.pk}. Press Resume to try again."
        )
        units.fail(unit, said)
    frames = "".join(traceback.format_tb(exc.__traceback__))
    plain = f": {said}" if isinstance(said, str) else ""
    log.error("%s %s failed%s (%s)\n%s", kind.name, unit.pk, plain, type(exc).__name__, frames)
    return "failed"


# ---------------------------------------------------------------- the one retry policy (kinds.Retry)


def retry(task, exc: BaseException):
    """Raise the task's retry after its kind's back-off (Celery's Retry, or `exc` once spent)."""
    policy = kinds.by_task(task.name).retry
    raise task.retry(exc=exc, countdown=policy.countdown(task.request.retries)) from exc


def retry_released(task, exc: BaseException, unit, release) -> None:
    """A temporary problem during the work: put `unit` back in the queue (`release(unit, message)
    -> bool`) and retry the task. Returns (so the caller records a failure) when the retries are
    spent or the unit is no longer this attempt's."""
    policy = kinds.by_task(task.name).retry
    if task.request.retries >= policy.max_retries:
        return
    # The error may have ended this process's connection: open a new one rather than fail on it
    # (never inside a transaction: there the caller's rollback comes first).
    if not connection.in_atomic_block:
        close_old_connections()
    message = f"A temporary problem ({type(exc).__name__}); trying again."
    if release(unit, message):
        log.warning("%s %s: %s, retry %s", task.name, unit.pk, type(exc).__name__, task.request.retries + 1)
        retry(task, exc)


def send_released(task, unit, released: units.Released, what: str) -> str:
    """After a worker that cannot load the model gave `unit` back: "failed" when the release limit
    was reached, else "released" with the task sent again after the back-off; a broker that is
    away leaves that to the recovery sweeper."""
    if released.failed:
        log.error("%s %s failed: %s", what, unit.pk, released.message)
        return "failed"
    log.warning("%s %s released: %s Sent again in %.1f s.", what, unit.pk, released.message, released.delay)
    try:
        task.apply_async(args=[unit.pk], countdown=released.delay)
    except Exception as exc:  # noqa: BLE001 - the broker is away: the recovery sweeper sends it later
        log.warning("%s %s: could not send it again (%s); the recovery sweeper will", what, unit.pk, type(exc).__name__)
    return "released"


# ---------------------------------------------------------------- one task name per kind


def _time_limit(kind: kinds.Kind) -> int:
    return getattr(settings, kind.time_limit) if isinstance(kind.time_limit, str) else kind.time_limit


def register(kind: kinds.Kind):
    """The kind's Celery task: run_unit under the kind's name, with its retry and time limits."""
    limits = {}
    if seconds := _time_limit(kind):
        limits = {"soft_time_limit": seconds, "time_limit": seconds + 600}

    def run(self, pk: int):
        return run_unit(self, kind, pk)

    run.__name__ = run.__qualname__ = kind.task.rsplit(".", 1)[-1]
    run.__doc__ = f"One unit of {kind.name} (webapp.lifecycle.kinds), through workers.runner.run_unit."
    TASKS[kind.name] = app.task(bind=True, name=kind.task, max_retries=kind.retry.max_retries, **limits)(run)
    return TASKS[kind.name]


for _kind in kinds.KINDS:
    register(_kind)
