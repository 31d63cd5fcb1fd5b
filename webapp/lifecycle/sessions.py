"""Which database sessions belong to which worker process, so a lost worker's can be ended.

A worker process that hangs (stopped, swapped out, stuck in a driver) keeps its database sessions
open, and with them any transaction it had begun and the locks it holds: the attempt that takes
its unit over would wait on those locks for ever (an import's new corpus row, a COPY that never
ends) while the page shows live work. So every worker process names itself in each session it
opens (PostgreSQL's application_name, a digest of its `worker_name`, which is what its units
record as their worker), and when the recovery sweeper finds that worker lost it ends that
worker's sessions: their transactions roll back and the locks go with them.

The web app's sessions carry no such name and are never ended here. SQLite has no sessions.
"""

from __future__ import annotations

import hashlib
import logging
import os

from django.db import connection

log = logging.getLogger(__name__)

PREFIX = "dsm-worker "
_hostname = ""  # set when a worker starts (workers.celery_app); empty in the web app


def set_worker(hostname: str) -> None:
    global _hostname
    _hostname = hostname or ""


def this_worker() -> str:
    """This worker process's `worker_name` (empty outside a worker)."""
    return worker_name(_hostname) if _hostname else ""


def worker_name(hostname: str) -> str:
    """What a unit records as its worker: the Celery worker and this process."""
    return f"{hostname} pid {os.getpid()}"[:200]


def application_name(worker: str) -> str:
    """The session name of `worker` (at most 63 bytes, as PostgreSQL keeps)."""
    return PREFIX + hashlib.sha256(worker.encode()).hexdigest()[:32]


def name_session(sender=None, connection=None, **kwargs) -> None:
    """connection_created receiver: name this worker process's new session."""
    if _hostname and connection is not None and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('application_name', %s, false)", [application_name(worker_name(_hostname))]
            )


def end_sessions_of(worker: str) -> int:
    """End every open session of the lost `worker` in this database; returns how many."""
    if connection.vendor != "postgresql" or not worker:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s AND pid <> pg_backend_pid()",
            [application_name(worker)],
        )
        ended = cursor.fetchone()[0]
    if ended:
        log.warning("ended %s database sessions of the lost worker %s", ended, worker)
    return ended
