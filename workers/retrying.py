"""The one error policy of every kind of long work (webapp.lifecycle.kinds: Retry).

A temporary problem (TRANSIENT: the database or broker briefly away, a connection ended by the
server) puts the unit back in the queue and retries the task after a back-off, while its kind's
retries last; after that, or if the unit is no longer this attempt's, the caller records the
failure in plain words. Every other error is the caller's to record.

    try:
        unit = claim(...)
    except TRANSIENT as exc:
        retry(self, exc)                        # nothing was claimed: just try again later
    ...
    except TRANSIENT as exc:
        retry_released(self, exc, unit)         # returns only when it cannot retry
        fail(...)
"""

from __future__ import annotations

import logging

from django.db import close_old_connections, connection

from webapp.lifecycle import kinds, units
from webapp.lifecycle.ended import TRANSIENT

log = logging.getLogger(__name__)

__all__ = ["TRANSIENT", "failed_message", "options", "retry", "retry_released", "send_released"]


def options(task_name: str) -> dict:
    """Keyword arguments of @app.task for a kind's task: its name and retry limit."""
    return {"name": task_name, "max_retries": kinds.by_task(task_name).retry.max_retries}


def retry(task, exc: BaseException):
    """Raise the task's retry after its kind's back-off (Celery's Retry, or `exc` once spent)."""
    policy = kinds.by_task(task.name).retry
    raise task.retry(exc=exc, countdown=policy.countdown(task.request.retries)) from exc


def retry_released(task, exc: BaseException, unit, release=None) -> None:
    """A temporary problem during the work: put `unit` back in the queue and retry the task.
    Returns (so the caller records a failure) when the retries are spent or the unit is no
    longer this attempt's. `release(unit, message) -> bool` defaults to units.release."""
    policy = kinds.by_task(task.name).retry
    if task.request.retries >= policy.max_retries:
        return
    # The error may have ended this process's connection: open a new one rather than fail on it
    # (never inside a transaction: there the caller's rollback comes first).
    if not connection.in_atomic_block:
        close_old_connections()
    message = f"A temporary problem ({type(exc).__name__}); trying again."
    if (release or units.release)(unit, message):
        log.warning("%s %s: %s, retry %s", task.name, unit.pk, type(exc).__name__, task.request.retries + 1)
        retry(task, exc)


def send_released(task, unit, released, what: str) -> str:
    """After a worker that cannot load the model gave `unit` back (webapp.pipeline.releases.Released):
    "failed" when the release limit was reached, else "released" with the task sent again after
    the back-off; a broker that is away leaves that to the recovery sweeper."""
    if released.failed:
        log.error("%s %s failed: %s", what, unit.pk, released.message)
        return "failed"
    log.warning("%s %s released: %s Sent again in %.1f s.", what, unit.pk, released.message, released.delay)
    try:
        task.apply_async(args=[unit.pk], countdown=released.delay)
    except Exception as exc:  # noqa: BLE001 - the broker is away: the recovery sweeper sends it later
        log.warning("%s %s: could not send it again (%s); the recovery sweeper will", what, unit.pk, type(exc).__name__)
    return "released"


def failed_message(exc: BaseException, retries: int) -> str:
    return (
        f"Stopped by a temporary problem ({type(exc).__name__}) that did not go away after {retries} retries. "
        "Press Resume to try again."
    )
