"""Recovery of work whose worker or message was lost, without waiting for the broker.

Every worker process runs `sweep()` every WORK_SWEEP_SECONDS in a thread (started when the
worker is ready, see workers.celery_app), for every kind of work in webapp.lifecycle.kinds.KINDS:

1. lost workers: a unit held by a worker that has not beaten for WORK_STALL_SECONDS goes back to
   queued (one conditional UPDATE, so two sweepers never both take it) and is sent again; its
   `error` says which worker was lost and when. A lost unit that was being cancelled ends
   cancelled. Either way the lost worker's database sessions are ended (a hung process's open
   transaction would otherwise block the next attempt for ever: webapp.lifecycle.sessions).
2. lost messages: a unit queued (or sent again) more than WORK_REQUEUE_GRACE_SECONDS ago while
   its queue holds no message at all was lost with its message (a broker restarted without
   persistence, a send that failed): it is sent again.

3. outboxes (webapp.lifecycle.kinds.OUTBOXES, webhook deliveries): each row that is due and
   has no live message is sent again.

All are harmless when wrong: a claim is atomic and a unit held by a live worker is never
claimed twice (webapp.lifecycle.units.claim), so an extra message finds nothing to do.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import connection
from django.db.models import F, Value
from django.db.models.functions import Concat, Now
from django.utils import timezone

from webapp.lifecycle import queue, sessions, units
from webapp.lifecycle.kinds import KINDS, OUTBOXES, Kind, resolve  # noqa: F401 - Kind is named here by the sweeps of some kinds
from webapp.lifecycle.status import JobStatus

log = logging.getLogger(__name__)

BATCH = 1000  # units handled per kind per sweep (a later sweep takes the rest)


def _kinds():
    for kind in KINDS:
        try:
            kind.model_class()
        except LookupError:  # a kind whose model this installation lacks
            continue
        yield kind


def requeue_lost_workers(kind: Kind, now=None) -> list[int]:
    """Queue again the units of this kind whose worker stopped beating; returns their ids. One
    lost while cancelling ends cancelled (and its kind cleans up after it)."""
    model = kind.model_class()
    requeued, cancelled = [], []
    for pk, worker, heartbeat, status in model.objects.filter(units.lost(now)).values_list(
        "pk", "worker", "heartbeat", "status"
    )[:BATCH]:
        if status == JobStatus.CANCELLING:
            if model.objects.filter(units.lost(now), pk=pk).update(status=JobStatus.CANCELLED, finished=Now()):
                cancelled.append(pk)
                sessions.end_sessions_of(worker)
            continue
        when = f" at {timezone.localtime(heartbeat):%H:%M:%S}" if heartbeat else ""
        moved = model.objects.filter(units.lost(now), pk=pk, status=JobStatus.RUNNING).update(
            status=JobStatus.QUEUED,
            heartbeat=Now(),
            error=f"Worker {worker or '?'} was lost{when} (no heartbeat for {settings.WORK_STALL_SECONDS} s); "
            "queued again automatically.",
        )
        if moved:
            requeued.append(pk)
            # a hung worker's open transaction would block the next attempt for ever: end it, and say so
            if sessions.end_sessions_of(worker):
                model.objects.filter(pk=pk).update(
                    error=Concat(F("error"), Value(" Its open database sessions were ended."))
                )
    if cancelled and kind.on_cancelled:
        resolve(kind.on_cancelled)(cancelled)
    if requeued:
        log.warning(
            "%s: %s units queued again after their worker was lost: %s", kind.name, len(requeued), requeued[:20]
        )
        send(kind, requeued)
    return requeued


def resend_lost_messages(kind: Kind, now=None) -> list[int]:
    """Send again the units of this kind that have waited longer than the grace period while
    their queue is empty (their message is gone); returns their ids."""
    model = kind.model_class()
    waiting = model.objects.filter(
        status=JobStatus.QUEUED, heartbeat__lt=units.before(settings.WORK_REQUEUE_GRACE_SECONDS, now)
    )
    if not waiting.exists():
        return []
    if queue.waiting_messages(kind.queue) != 0:  # messages still wait (or the broker cannot say)
        return []
    pks = list(waiting.values_list("pk", flat=True)[:BATCH])
    model.objects.filter(pk__in=pks, status=JobStatus.QUEUED).update(heartbeat=Now())
    log.warning("%s: queue %s is empty but %s units wait: sent again", kind.name, kind.queue, len(pks))
    send(kind, pks)
    return pks


def send(kind: Kind, pks: list[int]) -> None:
    try:
        queue.send(kind.task, *pks)
    except queue.QueueUnavailable:
        pass  # they stay queued; the next sweep sends them once the broker is back


def sweep(now=None) -> dict[str, dict[str, list[int]]]:
    """One pass over every kind: {kind: {"lost_workers": [ids], "lost_messages": [ids]}}, and over
    every outbox: {outbox: {"sent": [ids]}} (non-empty only)."""
    report = {}
    for outbox in OUTBOXES:
        sent = resolve(outbox.send_due)(now)
        if sent:
            report[outbox.name] = {"sent": sent}
    for kind in _kinds():
        if kind.sweep:
            lost_workers, lost_messages = resolve(kind.sweep)(kind, now)
        else:
            lost_workers = requeue_lost_workers(kind, now)
            lost_messages = resend_lost_messages(kind, now)
        if lost_workers or lost_messages:
            report[kind.name] = {"lost_workers": lost_workers, "lost_messages": lost_messages}
    return report


# ---------------------------------------------------------------- the sweeper thread

_stop = threading.Event()
_thread: threading.Thread | None = None


def start_sweeper(worker: str = "") -> None:
    """Sweep now and then every WORK_SWEEP_SECONDS, in a daemon thread of this process."""
    global _thread
    if settings.WORK_SWEEP_SECONDS <= 0 or (_thread is not None and _thread.is_alive()):
        return
    _stop.clear()
    _thread = threading.Thread(target=_loop, args=(worker,), name="lifecycle-sweeper", daemon=True)
    _thread.start()


def stop_sweeper() -> None:
    _stop.set()


def _loop(worker: str) -> None:
    from webapp.lifecycle import visibility

    log.info(
        "recovery sweeper started in %s (every %s s, stall after %s s)",
        worker or "this process",
        settings.WORK_SWEEP_SECONDS,
        settings.WORK_STALL_SECONDS,
    )
    try:
        while True:
            started = time.monotonic()
            try:
                visibility.announce()
                sweep()
            except Exception as exc:  # noqa: BLE001 - the database or broker may be away: sweep again later
                log.warning("recovery sweep failed (%s)", type(exc).__name__)
                connection.close()
            if _stop.wait(max(0.5, settings.WORK_SWEEP_SECONDS - (time.monotonic() - started))):
                return
    finally:
        connection.close()
