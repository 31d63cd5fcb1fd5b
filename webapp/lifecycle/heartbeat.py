"""A worker's heartbeat for the unit it holds, beaten from a thread.

    with Heartbeat(unit) as heart:
        for batch in work:
            ...
            heart.report(done=n)          # progress, written with the next beat
            if heart.cancelling: break    # a person asked to cancel: stop at a safe point
            if heart.lost: return         # another worker took the unit over: write nothing more

The thread has its own database connection, so beats and progress are committed and visible
even while the work runs inside one long transaction (an atomic import). A beat that fails (the
database is briefly away) is retried at the next one; the unit only looks lost once beats have
failed for WORK_STALL_SECONDS.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager

from django.conf import settings
from django.db import connection

from webapp.lifecycle import units
from webapp.lifecycle.status import HELD, JobStatus

log = logging.getLogger(__name__)


class Heartbeat:
    def __init__(self, unit, every: float | None = None, held=HELD):
        self.unit = unit
        self.held = held
        self.every = settings.WORK_HEARTBEAT_SECONDS if every is None else every
        self.cancelling = False
        self.lost = False
        self._pending: dict = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"heartbeat-{type(unit).__name__}-{unit.pk}", daemon=True
        )

    def report(self, **fields) -> None:
        """Progress fields (e.g. done=120) to write with the next beat."""
        with self._lock:
            self._pending.update(fields)

    def _beat(self, in_thread: bool = False) -> None:
        with self._lock:
            fields, self._pending = self._pending, {}
        try:
            status = units.beat(self.unit, self.held, **fields)
        except Exception as exc:  # noqa: BLE001 - the database may be briefly away: beat again later
            log.warning("%s %s: heartbeat failed (%s)", type(self.unit).__name__, self.unit.pk, type(exc).__name__)
            with self._lock:
                self._pending = {**fields, **self._pending}
            if in_thread:  # a dropped connection is never reopened by Django in this thread: reopen it
                connection.close()
            return
        if status is None:
            self.lost = True
        elif status == JobStatus.CANCELLING:
            self.cancelling = True

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every):
                self._beat(in_thread=True)
                if self.lost:
                    return
        finally:
            connection.close()  # this thread's own connection

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=max(self.every, 1) * 2 + 30)
        if self._pending and not self.lost:
            self._beat()


@contextmanager
def beating(unit, heart: Heartbeat | None = None, held=HELD):
    """`heart` when the caller beats for `unit` already (the runner, workers.runner), else a
    Heartbeat of its own for the time of the block (a script or a test running the work in-process)."""
    if heart is not None:
        yield heart
        return
    with Heartbeat(unit, held=held) as own:
        yield own
