"""The Celery app of the workers (defined in webapp.taskqueue) and what every worker process
does beside its tasks: filter every log handler, refuse a visibility timeout that differs from
the other workers', and run the recovery sweeper (webapp.lifecycle.recovery) in a thread."""
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
