"""Which ends of work are announced to webhooks, and with what. A unit of long work
(webapp.lifecycle.kinds, as its `event`) that ended (done, failed, cancelled) is announced once per status: the
workers' Celery `task_postrun` signal looks at the unit its task held; a unit that ends where no
task of its ends is announced through webapp.lifecycle.signals.unit_ended (a queued unit
cancelled at once by a page or the API; a relevance job, which ends when webapp.pipeline.jobs.settle
counts its last chunk, in a chunk's task or in a cancel); a review round
when the decision that gives its last pair its k-th judgement is committed
(webapp.lifecycle.signals.round_completed, sent by webapp.review.rounds).
Payloads hold ids, statuses and counts only. An ended training run or relevance evaluation is
also logged to MLflow when MLFLOW_TRACKING_URI is set (webapp.integrations.mlflow_log)."""

from __future__ import annotations

import logging

from webapp.lifecycle import kinds
from webapp.lifecycle.status import ENDED

log = logging.getLogger(__name__)


def unit_ended(kind_name: str, unit) -> int:
    """Queue the deliveries for `unit` if it has ended; returns how many were made."""
    event = kinds.by_name(kind_name).event
    if event is None or unit.status not in ENDED:
        return 0
    return _announce(event.value, unit, unit.status, {field: getattr(unit, field) for field in event.counts})


def round_completed(rnd) -> int:
    """A review round whose every pair has its k judgements; announced once."""
    return _announce("review_round", rnd, "done", {"pairs": rnd.pairs.count(), "reviewers_per_pair": rnd.k})


def _announce(event: str, obj, status: str, counts: dict) -> int:
    from webapp.integrations import webhooks
    from webapp.projects.models import Project
    from webapp.projects.scoping import project_id_of

    project = Project.objects.filter(pk=project_id_of(obj)).first()
    if project is None:
        return 0
    payload = {
        "event": event,
        "project": {"id": project.pk, "slug": project.slug},
        "object": {"type": obj._meta.label, "id": obj.pk},
        "status": status,
        "counts": counts,
    }
    key = f"{obj._meta.label}:{obj.pk}:{status}"
    return len(webhooks.queue_event(project, event, key, payload))


def _after_task(sender=None, args=None, **kwargs) -> None:
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
            from webapp.integrations import mlflow_log

            # training runs and evaluations only, and nothing unless MLFLOW_TRACKING_URI is set
            mlflow_log.log_unit(kind.name, unit)
    except Exception:  # a webhook or the tracking server must never make work fail
        log.exception("webhooks/MLflow: could not announce the end of %s %s", kind.name, pk)


def _ended_outside_a_task(sender, pk=None, **kwargs) -> None:
    try:
        unit = sender.objects.filter(pk=pk).first()
        if unit is not None:
            unit_ended(kinds.by_model(sender).name, unit)
    except Exception:  # a webhook must never make a cancel fail
        log.exception("webhooks: could not announce the end of %s %s", sender._meta.label, pk)


def _round_completed(sender, round=None, **kwargs) -> None:
    try:
        round_completed(round)
    except Exception:  # a webhook must never make a decision fail
        log.exception("webhooks: could not announce the end of review round %s", getattr(round, "pk", None))


def connect() -> None:
    """Called by the app's ready(): every worker process announces the work its tasks ended, and
    every process the work it cancelled before any task of it ran."""
    from celery import signals

    from webapp.lifecycle.signals import round_completed as review_round_completed
    from webapp.lifecycle.signals import unit_ended as ended_without_task

    ended_without_task.connect(_ended_outside_a_task, weak=False, dispatch_uid="api-webhook-cancels")
    review_round_completed.connect(_round_completed, weak=False, dispatch_uid="api-webhook-rounds")
    signals.task_postrun.connect(_after_task, weak=False, dispatch_uid="api-webhook-events")
