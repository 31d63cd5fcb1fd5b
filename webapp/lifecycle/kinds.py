"""Every kind of long work, registered once: the WorkUnit model that records it, the domain
function that does one claimed unit's work, the queue it runs on, its retry policy, the webhook
event its end is announced as and how the API shows it and cancels or resumes it. Derived from
KINDS, so they cannot disagree: Celery's task modules (CELERY_IMPORTS) and routes
(CELERY_TASK_ROUTES), the one generic task that claims, beats, retries and fails every kind
(workers.runner), the recovery sweeper (webapp.lifecycle.recovery), the webhook events
(webapp.integrations: Webhook.Event and the payloads) and the API's cancel and resume
(webapp.lifecycle.actions).

Read by the settings module: imports nothing of Django here (models and functions are named by
"app_label.Model" and "module:function", looked up when used), so the web app never imports
workers/. Adding a kind: one module (its model and function) and one entry (docs/development.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from webapp.lib.messages import gettext_noop  # an event's label: the webhooks page shows it translated

RUNNER = "workers.runner"  # the module of the one task every kind runs through


@dataclass(frozen=True)
class Retry:
    """What a task does on a temporary problem (the database or broker briefly away): its unit
    goes back to the queue and the task is retried after `backoff_seconds` x 2^retry, at most
    `max_retries` times; then the unit fails, saying so."""

    max_retries: int = 3
    backoff_seconds: int = 5  # 5, 10, 20 s: longer than a PostgreSQL or Redis restart

    def countdown(self, retries: int) -> int:
        return self.backoff_seconds * 2**retries

    def gave_up(self, exc: BaseException) -> str:
        """The failure recorded once the retries are spent (in plain words, the error's type only)."""
        return (
            f"Stopped by a temporary problem ({type(exc).__name__}) that did not go away after "
            f"{self.max_retries} retries. Press Resume to try again."
        )


RETRY = Retry()  # the one policy of every kind today


@dataclass(frozen=True)
class Event:
    """The webhook event a kind's end is announced as (webapp.integrations.events): its value in
    Webhook.Event and a delivery's payload, its label on the webhooks page, and the unit's fields
    sent as counts (ids, statuses and counts only, never note text)."""

    value: str
    label: str  # English, marked for the catalogs; Webhook.Event's choices translate it where shown
    counts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Kind:
    """One kind of long work. Every "module:function" is looked up when used (import_string).

    The runner (workers.runner) does for every kind: claim the unit (`claim(pk, worker)`, default
    webapp.lifecycle.units.claim), run `function(unit, heart)` inside the unit's Heartbeat (the
    function ends the unit itself: done, cancelled, or None when this attempt lost it; it may
    return a webapp.lifecycle.units.Released to be sent again later), and on an error: a temporary
    problem puts the unit back with `release(unit, message)` (default units.release) and retries
    with `retry`, any other error (or retries spent) is recorded by `fail(unit, exc)` in plain words
    (default: units.fail with a message naming only the error's type)."""

    name: str
    model: str  # "app_label.Model", a WorkUnit
    function: str  # "module:function(unit, heart=...) -> outcome": one claimed unit's work (heart by keyword)
    queue: str  # relevance (lxt-patched model holders), training (never patched), default (CPU, database)
    # The Celery name of its messages (args=[pk]): the names of kinds older than the runner are kept,
    # so messages waiting in a broker and scripts that send them by name keep working.
    task: str = ""  # default: workers.runner.<name>
    claim: str = ""
    fail: str = ""
    release: str = ""
    held: tuple[str, ...] = ("running", "cancelling")  # the statuses a worker beats in (planning: "planning")
    time_limit: int | str = 0  # seconds, or the name of a setting holding them; 0: no limit of its own
    event: Event | None = None  # announced to webhooks when it ends
    api: str = ""  # "module:Schema" (or a function of the unit -> dict): the unit as the API answers it
    cancel: str = ""  # "module:function(unit, actor=...)": what the page's and the API's Cancel do
    resume: str = ""  # "module:function(unit, actor=...)": Resume
    refusal: str = ""  # "module:Exception" that cancel/resume raise when the unit's state forbids it
    # for a cancel / resume that says "nothing done" by returning None or False: the refusal's words
    cancel_ended: str = ""
    resume_ended: str = ""
    # "module:function(kind, now) -> (lost_workers, lost_messages)" for a kind whose statuses
    # differ from the usual queued/running (relevance planning); empty: the generic sweep
    sweep: str = ""
    # "module:function(pks)": clean up after units that ended cancelled because their worker was
    # lost while cancelling (a build's partial examples, an export's scratch folder)
    on_cancelled: str = ""
    retry: Retry = RETRY

    def __post_init__(self):
        if not self.task:
            object.__setattr__(self, "task", f"{RUNNER}.{self.name.replace(' ', '_')}")

    @property
    def module(self) -> str:
        """The module that registers its task: the runner's, for every kind."""
        return RUNNER

    def model_class(self):
        from django.apps import apps

        return apps.get_model(self.model)


def resolve(path: str):
    """The object a registry entry names as "module:attribute" (a kind's function, claim, schema),
    imported when first used, so this module imports nothing at settings time."""
    from django.utils.module_loading import import_string

    return import_string(path.replace(":", "."))


KINDS: list[Kind] = [
    # planning is database work, no model: on default
    Kind(
        "relevance plan",
        "pipeline.RelevanceJob",
        "webapp.pipeline.planning:plan",
        "default",
        task="workers.relevance.plan_job",
        claim="webapp.pipeline.planning:claim",
        fail="webapp.pipeline.planning:fail_unexpectedly",
        held=("planning",),
        sweep="webapp.pipeline.planning:sweep",
        event=Event(
            "relevance_job",
            gettext_noop("Relevance job ended"),
            ("total", "done", "chunks_done", "chunks_failed", "chunks_cancelled"),
        ),
        api="webapp.pipeline.api:JobOut",
        cancel="webapp.pipeline.jobs:cancel",
        resume="webapp.pipeline.jobs:resume",
        refusal="webapp.pipeline.jobs:JobError",
    ),
    Kind(
        "relevance chunk",
        "pipeline.RelevanceChunk",
        "webapp.pipeline.chunks:run_claimed",
        "relevance",
        task="workers.relevance.run_chunk",
        claim="webapp.pipeline.chunks:claim",
        fail="webapp.pipeline.chunks:fail_unexpectedly",
        release="webapp.pipeline.chunks:release",
        sweep="webapp.pipeline.chunks:sweep",
    ),
    Kind(
        "dataset build",
        "datasets.DatasetVersion",
        "webapp.datasets.building:build",
        "default",
        task="workers.datasets.build_dataset",
        claim="webapp.datasets.building:claim",
        fail="webapp.datasets.building:fail",
        on_cancelled="webapp.datasets.launch:builds_cancelled",
        event=Event("dataset_build", gettext_noop("Dataset build ended"), ("maps_total", "maps_done")),
        api="webapp.datasets.api:DatasetOut",
        cancel="webapp.datasets.launch:cancel_build",
        refusal="webapp.datasets.launch:LaunchError",
    ),
    Kind(
        "export",
        "datasets.DatasetExport",
        "webapp.datasets.export:run_export",
        "default",
        task="workers.datasets.export_dataset",
        claim="webapp.datasets.export:claim_export",
        fail="webapp.datasets.export:fail_export",
        on_cancelled="webapp.datasets.launch:exports_cancelled",
        event=Event("export", gettext_noop("Export ended"), ("rows", "size_bytes")),
        api="webapp.datasets.api:ExportOut",
        cancel="webapp.datasets.launch:cancel_export",
        refusal="webapp.datasets.launch:LaunchError",
    ),
    Kind(
        "training run",
        "training.TrainingRun",
        "webapp.training.execution:run_claimed",
        "training",
        task="workers.training.run_training",
        claim="webapp.training.runs:claim",
        time_limit="TRAINING_TIME_LIMIT",
        event=Event("training_run", gettext_noop("Training run ended"), ("step", "total_steps")),
        api="webapp.training.api:RunOut",
        cancel="webapp.training.runs:cancel",
        resume="webapp.training.runs:resume",
        refusal="webapp.training.runs:RunError",
    ),
    Kind(
        "evaluation",
        "evaluation.RelevanceEvaluation",
        "webapp.evaluation.running:run_claimed",
        "relevance",
        task="workers.evaluation.run_evaluation",
        claim="webapp.evaluation.evaluations:claim",
        fail="webapp.evaluation.evaluations:fail_unexpectedly",
        release="webapp.evaluation.evaluations:release",
        time_limit="EVALUATION_TIME_LIMIT",
        event=Event("evaluation", gettext_noop("Evaluation ended"), ("done", "total")),
        api="webapp.evaluation.api:EvaluationOut",
        cancel="webapp.evaluation.evaluations:cancel",
        resume="webapp.evaluation.evaluations:resume",
        refusal="webapp.evaluation.evaluations:EvaluationError",
    ),
    Kind(
        "import",
        "corpus.ImportJob",
        "webapp.corpus.import_jobs:run_claimed",
        "default",
        task="workers.imports.run_import",
        claim="webapp.corpus.import_jobs:claim",
        fail="webapp.corpus.import_jobs:fail_claimed",
        time_limit=24 * 3600,  # a file of millions of notes; a lost worker is caught by its heartbeat
        event=Event(
            "import",
            gettext_noop("Import ended"),
            ("records_total", "created_count", "updated_count", "unchanged_count", "problem_count"),
        ),
        api="webapp.corpus.api:ImportOut",
        cancel="webapp.corpus.import_jobs:cancel",
        cancel_ended="This import has already ended.",
    ),
    Kind(
        "erasure",
        "erasure.ErasureRequest",
        "webapp.erasure.erasing:run",
        "default",
        task="workers.erasure.run_erasure",
        claim="webapp.erasure.erasing:claim",
        fail="webapp.erasure.erasing:fail",
    ),
    # a corpus de-identified into a new one, or scanned for identifiers left (webapp.deid)
    Kind(
        "deidentify",
        "deid.DeidJob",
        "webapp.deid_ops.work:run",
        "default",
        task="workers.deid.run_job",
        claim="webapp.deid_ops.jobs:claim",
        fail="webapp.deid_ops.jobs:fail_unexpectedly",
        time_limit=7 * 24 * 3600,  # a corpus of millions of notes; a lost worker is caught by its heartbeat
        api="webapp.deid_ops.api:DeidJobOut",
        cancel="webapp.deid_ops.jobs:cancel",
        resume="webapp.deid_ops.jobs:resume",
        cancel_ended="This job has ended; there is nothing to cancel.",
        resume_ended="Only a cancelled or failed job, or one whose worker was lost, can be resumed.",
    ),
    # relevance maps computed elsewhere, uploaded in the app (webapp.pipeline.mapimport_jobs)
    Kind(
        "map import",
        "pipeline.MapImportJob",
        "webapp.pipeline.mapimport_jobs:run_claimed",
        "default",
        claim="webapp.pipeline.mapimport_jobs:claim",
        fail="webapp.pipeline.mapimport_jobs:fail_claimed",
        time_limit=24 * 3600,  # a file of millions of maps; a lost worker is caught by its heartbeat
        event=Event("map_import", gettext_noop("Map import ended"), ("lines_done", "problem_count")),
        api="webapp.pipeline.api:MapImportJobOut",
        cancel="webapp.pipeline.mapimport_jobs:cancel",
        resume="webapp.pipeline.mapimport_jobs:resume",
        refusal="webapp.pipeline.mapimport_jobs:MapImportJobError",
        cancel_ended="This import has already ended.",
        resume_ended="Only a cancelled or failed import, or one whose worker was lost, can be resumed.",
    ),
    # the review report's figures, once per change of the decisions (webapp.review.report_store)
    Kind(
        "review report",
        "review.ReportSnapshot",
        "webapp.review.report_store:run",
        "default",
        task="workers.reports.compute_report",
    ),
]


def register(kind: Kind) -> Kind:
    """Add a kind (before the settings derive Celery's routes from KINDS: a plugin's or a test's);
    its name and its task must be new."""
    for known in KINDS:
        if known.name == kind.name or known.task == kind.task:
            raise ValueError(f"a kind named {kind.name!r} or sent as {kind.task!r} is registered already")
    KINDS.append(kind)
    return kind


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


def by_name(name: str) -> Kind:
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise LookupError(f"{name!r} is no kind of long work; the kinds: {', '.join(k.name for k in KINDS)}")


def events() -> list[Event]:
    """The kinds' webhook events, in registry order (webapp.integrations: Webhook.Event)."""
    return [kind.event for kind in KINDS if kind.event is not None]


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
