"""Which ends of work are announced to webhooks, and with what. A unit of long work
(webapp.lifecycle.kinds) that ended (done, failed, cancelled) is announced once per status: the
workers' Celery `task_postrun` signal looks at the unit its task held (a relevance chunk: its job,
which ends with its last chunk); the API's cancel endpoints announce what they ended at once.
Payloads hold ids, statuses and counts only. An ended training run is also logged to MLflow
when MLFLOW_TRACKING_URI is set (webapp.api.mlflow_log)."""

from __future__ import annotations

import logging

from webapp.lifecycle.status import ENDED

log = logging.getLogger(__name__)

# kind name (webapp.lifecycle.kinds) -> (event, counts read from the unit)
EVENTS = {
    "relevance plan": ("relevance_job", ("total", "done", "chunks_done", "chunks_failed", "chunks_cancelled")),
    "relevance chunk": ("relevance_job", ("total", "done", "chunks_done", "chunks_failed", "chunks_cancelled")),
    "dataset build": ("dataset_build", ("maps_total", "maps_done")),
    "export": ("export", ("rows", "size_bytes")),
    "training run": ("training_run", ("step", "total_steps")),
    "evaluation": ("evaluation", ("done", "total")),
    "import": ("import", ("records_total", "created_count", "updated_count", "unchanged_count", "problem_count")),
}


def unit_ended(kind_name: str, unit) -> int:
    """Queue the deliveries for `unit` if it has ended; returns how many were made."""
    from webapp.api import webhooks
    from webapp.projects.models import Project
    from webapp.projects.scoping import project_id_of

    if kind_name == "relevance chunk":
        kind_name, unit = "relevance plan", unit.job
    if kind_name not in EVENTS or unit.status not in ENDED:
        return 0
    project_id = project_id_of(unit)
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return 0
    event, fields = EVENTS[kind_name]
    payload = {
        "event": event,
        "project": {"id": project.pk, "slug": project.slug},
        "object": {"type": unit._meta.label, "id": unit.pk},
        "status": unit.status,
        "counts": {field: getattr(unit, field) for field in fields},
    }
    key = f"{unit._meta.label}:{unit.pk}:{unit.status}"
    return len(webhooks.queue_event(project, event, key, payload))


def _after_task(sender=None, args=None, **kwargs) -> None:
    from webapp.lifecycle import kinds

    try:
        kind = kinds.by_task(getattr(sender, "name", ""))
    except LookupError:
        return
    pk = (args or [None])[0]
    if not isinstance(pk, int):
        return
    try:
        unit = kind.model_class().objects.filter(pk=pk).first()
        if unit is not None:
            unit_ended(kind.name, unit)
            if kind.name == "training run":
                from webapp.api import mlflow_log

                mlflow_log.log_run(unit)  # nothing unless MLFLOW_TRACKING_URI is set
    except Exception:  # a webhook or the tracking server must never make work fail
        log.exception("webhooks/MLflow: could not announce the end of %s %s", kind.name, pk)


def connect() -> None:
    """Called by the app's ready(): every worker process announces the work its tasks ended."""
    from celery import signals

    signals.task_postrun.connect(_after_task, weak=False, dispatch_uid="api-webhook-events")
    signals.worker_init.connect(_load_delivery_task, weak=False, dispatch_uid="api-webhook-task")


def _load_delivery_task(**kwargs) -> None:
    """Every worker knows the delivery task (CELERY_IMPORTS holds the kinds of long work only);
    it runs on the default queue."""
    import workers.webhooks  # noqa: F401
