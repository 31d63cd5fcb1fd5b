"""A unit whose task ended on an error says so at once.

A task records how its work ended (done, failed, queued for a retry). When it cannot, because
the error was the database going away and the record needs the database too, the task ends with
that error and its unit would read "running" until its heartbeat goes stale (WORK_STALL_SECONDS,
then a sweep). The worker calls `record_task_error` when such a task ends (Celery's task_failure):
once the database answers again (it waits at most WORK_STALL_SECONDS; after that the sweeper's
rule takes over anyway) the unit goes back to the queue with the error in its `error`, and is
sent again, as the sweeper would have done a stall period later. Only a running unit still held
by this very worker process is touched: one that ended, is being cancelled, or that another
worker took over is left alone. Errors other than a temporary problem are the task's to record.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connection
from django.db.models.functions import Now

from webapp.lifecycle import kinds, recovery, sessions
from webapp.lifecycle.status import JobStatus

log = logging.getLogger(__name__)

RETRY_EVERY = 1.0  # seconds between tries while the database is away


# The temporary problems of every kind of long work (workers.runner retries on the same).
TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


def record_task_error(task_name: str, pk, exc: BaseException | None) -> bool:
    """Queue again (and send) the unit of a kind's task that ended on the temporary problem `exc`,
    if this worker process still holds it. Returns True when it did."""
    try:
        kind = kinds.by_task(task_name)
    except LookupError:
        return False
    worker = sessions.this_worker()
    if not isinstance(pk, int) or not isinstance(exc, TRANSIENT) or not worker:
        return False
    message = (
        f"The worker stopped on a temporary problem ({type(exc).__name__}) it could not record at the time; "
        "queued again automatically."
    )
    deadline = time.monotonic() + settings.WORK_STALL_SECONDS
    waited = False
    while True:
        try:
            close_old_connections()  # the error may have ended this process's connection
            marked = (
                kind.model_class()
                .objects.filter(pk=pk, worker=worker, status=JobStatus.RUNNING)
                .update(status=JobStatus.QUEUED, heartbeat=Now(), error=message)
            )
        except (OperationalError, InterfaceError) as error:
            connection.close()
            if time.monotonic() > deadline:
                log.warning(
                    "%s %s: could not record its end (%s); the sweeper will", kind.name, pk, type(error).__name__
                )
                return False
            if not waited:
                log.warning(
                    "%s %s: task ended on %s; the database is away, waiting to record it",
                    kind.name,
                    pk,
                    type(exc).__name__,
                )
                waited = True
            time.sleep(RETRY_EVERY)
            continue
        if marked:
            log.warning("%s %s: queued again after its task ended on %s", kind.name, pk, type(exc).__name__)
            recovery.send(kind, [pk])  # a broker away: the sweeper sends it once the queue is found empty
        return bool(marked)
