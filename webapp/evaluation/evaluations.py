"""Relevance evaluations: what one asks for, launch, cancel, resume, claim, and how one ends.

Status moves only through atomic conditional updates (`filter(pk=, status__in=).update()`):

    queued --claimed by a worker--> running --> done | failed
    queued --cancel--> cancelled                (its message will find nothing to do)
    running --cancel--> cancelling --the worker stops between two batches--> cancelled
    cancelled | failed | queued/running/cancelling with no heartbeat for STALL_SECONDS
        --resume--> queued --> the worker skips every map already stored

Each claim increments `attempts`; the worker writes progress and the end only while `attempts`
is still its own, so a worker presumed dead that wakes up cannot overwrite an evaluation another
worker has taken over. A redelivered message (acks late: its worker died) takes back a RUNNING
evaluation only once its heartbeat is older than STALL_SECONDS; a fresh heartbeat means the first
worker is alive, and the message is dropped. Where the broker cannot redeliver (the embedded
filesystem broker), the Resume button does the same.

The pairs are planned once, at launch: the distinct (note, task) pairs of the corpus with at
least one annotation holding evidence spans (restricted to the chosen tasks), at most
`max_pairs` of them drawn with `seed`, sorted. The configurations are method x explain variant,
one template, run in ORDER of method: AttnLRP patches its process with lxt for good, and gradient
x input refuses a patched process, so AttnLRP comes last.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from ml.prompts import TEMPLATES
from ml.relevance import EXPLAIN, METHODS, ConfigError, RelevanceConfig
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Task
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus, ModelVersion, PeakProfile

RUN_TASK = "workers.evaluation.run_evaluation"
ORDER = ("attention", "grad_input", "attnlrp")  # AttnLRP last: it patches the process (lxt)
# No heartbeat for this long: the worker is presumed dead (Resume is offered, a redelivered
# message may take the evaluation back). Heartbeats come after every batch of prompts.
STALL_SECONDS = getattr(settings, "EVALUATION_STALL_SECONDS", 15 * 60)
RESUMABLE = (JobStatus.CANCELLED, JobStatus.FAILED)


class EvaluationError(Exception):
    """A request the evaluation cannot honour, or a reason it stopped; plain words for the page."""


@dataclass
class EvaluationSpec:
    """What a researcher asks for: every method x every explain variant, one template."""

    corpus: Corpus
    model_version: ModelVersion
    methods: list[str] = field(default_factory=lambda: ["attnlrp"])
    explains: list[str] = field(default_factory=lambda: ["next"])
    template: str = "auto"  # "auto": the corpus language's built-in template (else "en"), or a name or text
    profile: PeakProfile | None = None  # None: the default peak profile
    tasks: list[Task] = field(default_factory=list)  # empty: every task with evidence annotations
    max_pairs: int | None = None
    seed: int = 0

    def resolved_template(self) -> str:
        if self.template == "auto":
            return self.corpus.language if self.corpus.language in TEMPLATES else "en"
        return self.template

    def resolved_profile(self) -> PeakProfile | None:
        return self.profile or PeakProfile.objects.filter(is_default=True).first()

    def configs(self) -> list[RelevanceConfig]:
        """The configurations in run order (raises ConfigError for an unusable combination)."""
        methods = sorted(dict.fromkeys(self.methods), key=lambda m: ORDER.index(m) if m in ORDER else len(ORDER))
        explains = list(dict.fromkeys(self.explains))
        template = self.resolved_template()
        return [RelevanceConfig(method=m, explain=e, template=template) for m in methods for e in explains]

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the spec can be launched."""
        problems = {}
        unknown = [m for m in self.methods if m not in METHODS]
        if not self.methods or unknown:
            problems["methods"] = f"Choose methods among {', '.join(METHODS)}."
        unknown = [e for e in self.explains if e not in EXPLAIN]
        if not self.explains or unknown:
            problems["explains"] = f"Choose explain variants among {', '.join(EXPLAIN)}."
        if not problems:
            try:
                self.configs()
            except ConfigError as exc:
                problems["template" if exc.field in ("template", "neutral") else "methods"] = str(exc)
        if self.max_pairs is not None and self.max_pairs < 1:
            problems["max_pairs"] = "The number of pairs must be at least 1."
        if self.resolved_profile() is None:
            problems["profile"] = "There is no peak profile: create one first."
        if "max_pairs" not in problems and not annotated_pairs(self.corpus, self.tasks, limit=1):
            problems["corpus"] = (f"Corpus {self.corpus.name} has no annotation with evidence spans"
                                  f"{' for these tasks' if self.tasks else ''}: import annotations with evidence.")
        return problems


def annotated_pairs(corpus: Corpus, tasks=(), *, limit: int | None = None) -> list[tuple[int, int]]:
    """Sorted distinct (note id, task id) of the corpus's annotations with evidence spans."""
    rows = Annotation.objects.filter(note__corpus=corpus).exclude(evidence=[])
    if tasks:
        rows = rows.filter(task__in=list(tasks))
    rows = rows.values_list("note_id", "task_id").distinct().order_by("note_id", "task_id")
    return [tuple(pair) for pair in (rows[:limit] if limit else rows)]


def plan_pairs(spec: EvaluationSpec) -> list[list[int]]:
    pairs = annotated_pairs(spec.corpus, spec.tasks)
    if spec.max_pairs is not None and len(pairs) > spec.max_pairs:
        pairs = sorted(random.Random(spec.seed).sample(pairs, spec.max_pairs))
    return [list(pair) for pair in pairs]


@transaction.atomic
def launch(spec: EvaluationSpec, actor=None, *, enqueue: bool = True) -> RelevanceEvaluation:
    """Create the evaluation with its pairs and configurations; after the commit, enqueue it.
    enqueue=False leaves it queued (the command's --inline runs it in this process)."""
    problems = spec.problems()
    if problems:
        raise EvaluationError(" ".join(problems.values()))
    configs = [config.to_dict() for config in spec.configs()]
    pairs = plan_pairs(spec)
    evaluation = RelevanceEvaluation.objects.create(
        corpus=spec.corpus, model_version=spec.model_version, configs=configs, profile=spec.resolved_profile(),
        max_pairs=spec.max_pairs, seed=spec.seed, pairs=pairs, total=len(pairs) * len(configs),
        created_by=_user(actor),
    )
    evaluation.tasks.set(spec.tasks)
    record(actor, AuditEvent.Action.LAUNCH_JOB, evaluation, what="relevance evaluation", corpus=spec.corpus.pk,
           model=spec.model_version.name, configurations=len(configs), pairs=len(pairs))
    if enqueue:
        transaction.on_commit(partial(send, evaluation.pk))
    return evaluation


def send(evaluation_id: int) -> None:
    """Hand the evaluation to the relevance queue (by task name: the web process never imports torch)."""
    from workers.celery_app import app

    app.send_task(RUN_TASK, args=[evaluation_id])


@transaction.atomic
def cancel(evaluation: RelevanceEvaluation, actor=None) -> RelevanceEvaluation:
    """A queued (or stalled) evaluation is cancelled at once; a running one stops after its batch."""
    stalled = is_stalled(evaluation)
    if _move(evaluation.pk, (JobStatus.QUEUED,), status=JobStatus.CANCELLED, finished=Now()) or (
            stalled and _move(evaluation.pk, (JobStatus.RUNNING, JobStatus.CANCELLING), status=JobStatus.CANCELLED,
                              finished=Now())):
        status = JobStatus.CANCELLED
    elif _move(evaluation.pk, (JobStatus.RUNNING,), status=JobStatus.CANCELLING):
        status = JobStatus.CANCELLING
    else:
        evaluation.refresh_from_db(fields=["status"])
        raise EvaluationError(f"Only a queued or running evaluation can be cancelled; this one is "
                              f"{evaluation.get_status_display().lower()}.")
    record(actor, AuditEvent.Action.CANCEL_JOB, evaluation, what="relevance evaluation", done=evaluation.done)
    evaluation.status = status
    return evaluation


def is_stalled(evaluation: RelevanceEvaluation, now=None) -> bool:
    """Active, yet no sign of life for STALL_SECONDS (its worker died, or none is listening)."""
    if evaluation.status not in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING):
        return False
    latest = evaluation.heartbeat or max(filter(None, [evaluation.started, evaluation.created]))
    return (now or timezone.now()) - latest > timedelta(seconds=STALL_SECONDS)


def can_resume(evaluation: RelevanceEvaluation) -> bool:
    return evaluation.status in RESUMABLE or is_stalled(evaluation)


@transaction.atomic
def resume(evaluation: RelevanceEvaluation, actor=None, *, enqueue: bool = True) -> RelevanceEvaluation:
    """Queue the evaluation again; the maps already stored are not computed again."""
    allowed = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING) if is_stalled(evaluation) else RESUMABLE
    if not _move(evaluation.pk, allowed, status=JobStatus.QUEUED, finished=None, error="", heartbeat=Now(),
                 phase="queued again"):
        evaluation.refresh_from_db(fields=["status"])
        if evaluation.status == JobStatus.DONE:
            raise EvaluationError("This evaluation is done: there is nothing to resume.")
        raise EvaluationError(f"This evaluation is {evaluation.get_status_display().lower()} and its worker is alive; "
                              f"it can be resumed once cancelled, failed, or silent for {STALL_SECONDS // 60} minutes.")
    record(actor, AuditEvent.Action.LAUNCH_JOB, evaluation, what="relevance evaluation", resumed=True,
           done=evaluation.done)
    if enqueue:
        transaction.on_commit(partial(send, evaluation.pk))
    evaluation.status = JobStatus.QUEUED
    return evaluation


def claim(evaluation_id: int, worker: str = "") -> RelevanceEvaluation | None:
    """Atomically take a queued evaluation, or an active one whose heartbeat is stale (its
    worker died: this is the redelivered message). None: nothing to do for this message."""
    stale = timezone.now() - timedelta(seconds=STALL_SECONDS)
    takeable = Q(status=JobStatus.QUEUED) | (Q(status__in=(JobStatus.RUNNING, JobStatus.CANCELLING)) & (
        Q(heartbeat__lt=stale) | Q(heartbeat__isnull=True, started__lt=stale)))
    claimed = RelevanceEvaluation.objects.filter(takeable, pk=evaluation_id).update(
        status=JobStatus.RUNNING, attempts=F("attempts") + 1, worker=worker[:200], heartbeat=Now(),
        started=Coalesce(F("started"), Now()), finished=None, error="", phase="starting")
    if not claimed:
        return None
    return RelevanceEvaluation.objects.select_related("corpus", "model_version", "profile").get(pk=evaluation_id)


def owned(evaluation: RelevanceEvaluation):
    """The evaluation's row while this attempt still holds it (running or cancelling)."""
    return RelevanceEvaluation.objects.filter(pk=evaluation.pk, attempts=evaluation.attempts,
                                              status__in=(JobStatus.RUNNING, JobStatus.CANCELLING))


def report(evaluation: RelevanceEvaluation, **fields) -> bool:
    """Progress from the attempt that holds the evaluation; False if it no longer does."""
    return owned(evaluation).update(heartbeat=Now(), **fields) == 1


def cancel_requested(evaluation: RelevanceEvaluation) -> bool:
    return RelevanceEvaluation.objects.filter(pk=evaluation.pk, status=JobStatus.CANCELLING).exists()


def finish(evaluation: RelevanceEvaluation, result: dict) -> bool:
    return owned(evaluation).update(status=JobStatus.DONE, result=result, finished=Now(), heartbeat=Now(),
                                    phase="done") == 1


def cancelled(evaluation: RelevanceEvaluation) -> bool:
    return owned(evaluation).update(status=JobStatus.CANCELLED, finished=Now(), heartbeat=Now(),
                                    phase="cancelled: Resume continues where it stopped") == 1


def release(evaluation: RelevanceEvaluation) -> bool:
    """Back to the queue after a temporary problem (the task retries)."""
    return owned(evaluation).filter(status=JobStatus.RUNNING).update(
        status=JobStatus.QUEUED, phase="waiting to retry after a temporary problem") == 1


def fail(evaluation: RelevanceEvaluation, message: str) -> bool:
    return owned(evaluation).update(status=JobStatus.FAILED, error=message[:2000], finished=Now(),
                                    heartbeat=Now()) == 1


def _move(evaluation_id: int, from_statuses, **changes) -> bool:
    return RelevanceEvaluation.objects.filter(pk=evaluation_id, status__in=from_statuses).update(**changes) == 1


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
