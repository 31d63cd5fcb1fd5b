"""Every kind of long work, registered once: its task, the queue it runs on, the WorkUnit model
that records it and its retry policy. Celery's task modules (CELERY_IMPORTS) and routes
(CELERY_TASK_ROUTES), the recovery sweeper (webapp.lifecycle.recovery) and the tasks' retries
(workers.retrying) are all derived from KINDS, so they cannot disagree.

Read by the settings module: imports nothing of Django here (models are looked up by name).
A new kind of work adds one entry (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Retry:
    """What a task does on a temporary problem (the database or broker briefly away): its unit
    goes back to the queue and the task is retried after `backoff_seconds` x 2^retry, at most
    `max_retries` times; then the unit fails, saying so."""

    max_retries: int = 3
    backoff_seconds: int = 5  # 5, 10, 20 s: longer than a PostgreSQL or Redis restart

    def countdown(self, retries: int) -> int:
        return self.backoff_seconds * 2**retries


RETRY = Retry()  # the one policy of every kind today


@dataclass(frozen=True)
class Kind:
    name: str
    model: str  # "app_label.Model", a WorkUnit
    task: str  # the Celery task that runs one unit (args=[pk]); its module is a task module
    queue: str  # relevance (lxt-patched model holders), training (never patched), default (CPU, database)
    # "module:function(kind, now) -> (lost_workers, lost_messages)" for a kind whose statuses
    # differ from the usual queued/running (relevance planning); empty: the generic sweep
    sweep: str = ""
    # "module:function(pks)": clean up after units that ended cancelled because their worker was
    # lost while cancelling (a build's partial examples, an export's scratch folder)
    on_cancelled: str = ""
    retry: Retry = RETRY

    @property
    def module(self) -> str:
        return self.task.rsplit(".", 1)[0]

    def model_class(self):
        from django.apps import apps

        return apps.get_model(self.model)


KINDS = (
    # planning is database work, no model: on default
    Kind(
        "relevance plan",
        "pipeline.RelevanceJob",
        "workers.relevance.plan_job",
        "default",
        "webapp.pipeline.planning:sweep",
    ),
    Kind(
        "relevance chunk",
        "pipeline.RelevanceChunk",
        "workers.relevance.run_chunk",
        "relevance",
        "webapp.pipeline.chunks:sweep",
    ),
    Kind(
        "dataset build",
        "datasets.DatasetVersion",
        "workers.datasets.build_dataset",
        "default",
        on_cancelled="webapp.datasets.launch:builds_cancelled",
    ),
    Kind(
        "export",
        "datasets.DatasetExport",
        "workers.datasets.export_dataset",
        "default",
        on_cancelled="webapp.datasets.launch:exports_cancelled",
    ),
    Kind("training run", "training.TrainingRun", "workers.training.run_training", "training"),
    Kind("evaluation", "evaluation.RelevanceEvaluation", "workers.evaluation.run_evaluation", "relevance"),
    Kind("import", "corpus.ImportJob", "workers.imports.run_import", "default"),
    Kind("erasure", "erasure.ErasureRequest", "workers.erasure.run_erasure", "default"),
    # a corpus de-identified into a new one, or scanned for identifiers left (webapp.deid)
    Kind("deidentify", "deid.DeidJob", "workers.deid.run_job", "default"),
    # the review report's figures, once per change of the decisions (webapp.review.report_store)
    Kind("review report", "review.ReportSnapshot", "workers.reports.compute_report", "default"),
)


@dataclass(frozen=True)
class Outbox:
    """Rows waiting to be sent somewhere outside (webhook deliveries): not units of long work,
    but held to the same promise. The row is the message: its task (args=[pk]) runs on `queue`;
    the recovery sweeper calls `send_due` ("module:function(now) -> [pks]") on every pass, which
    sends again each row that is due and has no live message (lost with the broker or a killed
    worker), so nothing waits in the broker for hours as a countdown message."""

    name: str
    task: str
    queue: str
    send_due: str

    @property
    def module(self) -> str:
        return self.task.rsplit(".", 1)[0]


OUTBOXES = (
    Outbox("webhook delivery", "workers.webhooks.deliver", "webhooks", "webapp.integrations.webhooks:send_due"),
)


@dataclass(frozen=True)
class Periodic:
    """A task Celery beat sends every `every_setting` seconds (a setting's name): a round that
    starts long work of the kinds above (retention requests erasures), idempotent, so a round
    run twice or late does no harm."""

    name: str
    task: str
    queue: str
    every_setting: str

    @property
    def module(self) -> str:
        return self.task.rsplit(".", 1)[0]


PERIODIC = (Periodic("retention", "workers.retention.apply_retention", "default", "RETENTION_INTERVAL_SECONDS"),)


def by_task(task_name: str) -> Kind:
    for kind in KINDS:
        if kind.task == task_name:
            return kind
    raise LookupError(f"{task_name} is no kind of long work; the kinds' tasks: {', '.join(k.task for k in KINDS)}")


def by_model(model) -> Kind:
    """The first kind whose unit is `model` (a relevance job: its plan)."""
    for kind in KINDS:
        if kind.model == model._meta.label:
            return kind
    raise LookupError(f"{model._meta.label} is no unit of long work")


def task_modules() -> list[str]:
    """CELERY_IMPORTS: every kind's, outbox's and periodic task's module, once, in registry order."""
    return list(dict.fromkeys(entry.module for entry in (*KINDS, *OUTBOXES, *PERIODIC)))


def task_routes() -> dict[str, dict[str, str]]:
    """CELERY_TASK_ROUTES: each kind's, outbox's and periodic task by its exact name."""
    return {entry.task: {"queue": entry.queue} for entry in (*KINDS, *OUTBOXES, *PERIODIC)}


def beat_schedule(seconds: dict[str, float]) -> dict[str, dict]:
    """CELERY_BEAT_SCHEDULE from the periodic tasks, `seconds` mapping each one's every_setting to
    its value (the settings module passes its own); a value of 0 or less leaves the task out."""
    return {
        entry.name: {"task": entry.task, "schedule": seconds[entry.every_setting]}
        for entry in PERIODIC
        if seconds[entry.every_setting] > 0
    }
