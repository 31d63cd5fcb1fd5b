"""The Celery app of the workers (defined in webapp.taskqueue) and what every worker process
does beside its tasks: filter every log handler, refuse a visibility timeout that differs from
the other workers', set torch's thread count (settings.WORKER_TORCH_THREADS) and run the
recovery sweeper (webapp.lifecycle.recovery) in a thread; name its database sessions and record a
unit whose task ended on an error it could not record."""

import os
import sys

from celery import signals

from webapp.taskqueue import app

__all__ = ["app"]


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
@signals.worker_process_init.connect
def _filter_every_log_handler(**kwargs):
    """Celery adds handlers of its own after Django's LOGGING (the `multiprocessing` logger of a
    worker): they get the filter that keeps note text out of logs (webapp.logs) too."""
    from webapp.logs import filter_every_handler

    filter_every_handler()


@signals.worker_init.connect
@signals.worker_process_init.connect
def _set_torch_threads(**kwargs):
    """Before any task (and so any model) runs: the main process (worker_init; the solo pool's
    only process) and each prefork child (worker_process_init)."""
    from django.conf import settings

    set_torch_threads(settings.WORKER_TORCH_THREADS)


def set_torch_threads(threads: int) -> None:
    """torch's intra-op threads in this process and its children; 0: leave them as they are.
    torch is not imported for this: OMP_NUM_THREADS is what it reads when a task first imports
    it (a default/training worker that never loads a model never pays for torch at start);
    when it is already imported, torch.set_num_threads."""
    if threads <= 0:
        return
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(threads)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)


@signals.worker_init.connect
def _name_database_sessions(sender=None, **kwargs):
    """Every database session this worker's processes open carries their name (prefork children
    inherit the hostname), so the sweeper can end a hung one's sessions (webapp.lifecycle.sessions)."""
    from django.db.backends.signals import connection_created

    from webapp.lifecycle import sessions

    sessions.set_worker(getattr(sender, "hostname", "") or "")
    connection_created.connect(sessions.name_session, weak=False, dispatch_uid="lifecycle-sessions")


@signals.task_failure.connect
def _record_a_task_ended_by_an_error(sender=None, args=None, exception=None, **kwargs):
    """A task of long work that ended on an error it could not record itself (the database was
    away when it tried) leaves its unit "running": record the failure now, once the database
    answers again, rather than after a stall period (webapp.lifecycle.ended)."""
    from webapp.lifecycle import ended

    ended.record_task_error(getattr(sender, "name", ""), (args or [None])[0], exception)


def worker_name(task) -> str:
    """What a unit claimed by `task` records as its worker: this worker and this process."""
    from webapp.lifecycle import sessions

    return sessions.worker_name(task.request.hostname or "")


@signals.worker_init.connect
def _check_visibility_timeout(**kwargs):
    from webapp.lifecycle import visibility

    visibility.check_or_refuse(app)


@signals.worker_ready.connect
def _start_sweeper(sender=None, **kwargs):
    from webapp.lifecycle import recovery

    recovery.start_sweeper(worker=getattr(sender, "hostname", "") or "")


@signals.worker_shutdown.connect
def _stop_sweeper(**kwargs):
    from webapp.lifecycle import recovery

    recovery.stop_sweeper()
