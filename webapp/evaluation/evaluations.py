"""Relevance evaluations: what one asks for, launch, cancel, resume, claim, and how one ends.

An evaluation is a unit of long work (webapp.lifecycle): its status moves only through the atomic
conditional updates of webapp.lifecycle.units; this module adds its phase and result:

    queued --claimed by a worker--> running --> done | failed
    queued --cancel--> cancelled                (its message will find nothing to do)
    running --cancel--> cancelling --the worker stops between two batches--> cancelled
    cancelled | failed | held by a lost worker --resume--> queued
        --> the worker skips every map already stored
    running --the worker cannot load the model--> queued for another worker (release_unloadable)
        | failed once every live worker released it RELEVANCE_RELEASE_LIMIT times

Each claim increments `attempts`; the worker writes progress and the end only while `attempts`
is still its own, so a worker presumed dead that wakes up cannot overwrite an evaluation another
worker has taken over. The worker beats from a thread while it computes (webapp.evaluation.running);
one that stopped beating for WORK_STALL_SECONDS is lost: the evaluation is shown as stalled and
the recovery sweeper of any live worker queues it again.

The pairs are planned once, at launch. `pairs_from="evidence"`: the distinct (note, task) pairs
of the corpus with gold evidence (restricted to the chosen tasks): an annotation holding evidence
spans, or gold made in the app (webapp.evaluation.gold_sources: the peaks reviewers kept, the
spans they added), at most `max_pairs` of them drawn with `seed`, sorted. `pairs_from="notes"` (any
corpus, gold or not): notes drawn with `seed` x EVERY chosen task, as many notes as keep the
pairs within `max_pairs` (at least one), so each note is asked about all its tasks and
task-specificity can compare them. Faithfulness (`faithfulness=True`) costs
ml.faithfulness.PASSES_PER_PAIR forward passes per pair and configuration beyond the maps, and
explains one prompt: not with the "contrastive" variant. The configurations are method x explain variant,
one template, run in ml.relevance.methods.run_order: AttnLRP patches its process with lxt for good, and gradient
x input refuses a patched process, so AttnLRP comes last.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from django.utils.translation import gettext as _

from ml.prompts import TEMPLATES
from ml.relevance import EXPLAIN, IMPORTED, METHODS, ConfigError, RelevanceConfig
from ml.relevance.methods import run_order
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.evaluation import gold_sources
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import releases
from webapp.pipeline.jobs import ml_reason
from webapp.pipeline.models import ModelVersion, PeakProfile

RUN_TASK = "workers.evaluation.run_evaluation"
PAIRS_FROM = ("evidence", "notes")
# an attempt starts from the maps: a stage left by an earlier attempt is not shown as this one's
NO_STAGE = {"stage": "", "stage_done": 0, "stage_total": 0, "stage_seconds": None}


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
    pairs_from: str = "evidence"  # or "notes": drawn notes x every chosen task, gold or not
    faithfulness: bool = False  # also measure faithfulness (PASSES_PER_PAIR forward passes a pair and configuration)

    def resolved_template(self) -> str:
        if self.template == "auto":
            return self.corpus.language if self.corpus.language in TEMPLATES else "en"
        return self.template

    def resolved_profile(self) -> PeakProfile | None:
        return self.profile or PeakProfile.objects.filter(is_default=True).first()

    def configs(self) -> list[RelevanceConfig]:
        """The configurations in run order (raises ConfigError for an unusable combination)."""
        methods = run_order(self.methods)
        explains = list(dict.fromkeys(self.explains))
        template = self.resolved_template()
        return [RelevanceConfig(method=m, explain=e, template=template) for m in methods for e in explains]

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the spec can be launched."""
        problems = {}
        unknown = [m for m in self.methods if m not in (*METHODS, IMPORTED)]  # imported: maps stored, never computed
        if not self.methods or unknown:
            problems["methods"] = _("Choose methods among %(methods)s.") % {"methods": ", ".join((*METHODS, IMPORTED))}
        unknown = [e for e in self.explains if e not in EXPLAIN]
        if not self.explains or unknown:
            problems["explains"] = _("Choose explain variants among %(explains)s.") % {"explains": ", ".join(EXPLAIN)}
        if not problems:
            try:
                self.configs()
            except ConfigError as exc:
                problems["template" if exc.field in ("template", "neutral") else "methods"] = ml_reason(exc)
        if self.max_pairs is not None and self.max_pairs < 1:
            problems["max_pairs"] = _("The number of pairs must be at least 1.")
        if self.resolved_profile() is None:
            problems["profile"] = _("There is no peak profile: create one first.")
        if self.faithfulness and "contrastive" in self.explains:
            problems["explains"] = _(
                "Faithfulness explains one prompt: leave out the contrastive variant, or faithfulness."
            )
        if self.pairs_from not in PAIRS_FROM:
            problems["pairs_from"] = _("Pairs come from %(sources)s.") % {"sources": " or ".join(PAIRS_FROM)}
        elif self.pairs_from == "notes":
            if not self.tasks:
                problems["tasks"] = _("Choose the tasks to ask about each drawn note.")
            elif not Note.objects.filter(corpus=self.corpus).exists():
                problems["corpus"] = _("Corpus %(corpus)s has no notes.") % {"corpus": self.corpus.name}
        elif "max_pairs" not in problems and not gold_sources.has_gold(self.corpus, self.tasks):
            if self.tasks:
                message = _(
                    "Corpus %(corpus)s has no annotation with evidence spans for these tasks, nor peaks kept or "
                    "spans added in review: import annotations with evidence, or review the notes first."
                )
            else:
                message = _(
                    "Corpus %(corpus)s has no annotation with evidence spans, nor peaks kept or spans added in "
                    "review: import annotations with evidence, or review the notes first."
                )
            problems["corpus"] = message % {"corpus": self.corpus.name}
        return problems


def annotated_pairs(corpus: Corpus, tasks=(), *, limit: int | None = None) -> list[tuple[int, int]]:
    """Sorted distinct (note id, task id) of the corpus with gold evidence: its annotations with
    evidence spans and the registered sources' (webapp.evaluation.gold_sources)."""
    return gold_sources.gold_pairs(corpus, tasks, limit=limit)


def plan_pairs(spec: EvaluationSpec) -> list[list[int]]:
    if spec.pairs_from == "notes":
        return [list(pair) for pair in note_pairs(spec.corpus, spec.tasks, spec.max_pairs, spec.seed)]
    pairs = annotated_pairs(spec.corpus, spec.tasks)
    if spec.max_pairs is not None and len(pairs) > spec.max_pairs:
        pairs = sorted(random.Random(spec.seed).sample(pairs, spec.max_pairs))
    return [list(pair) for pair in pairs]


def note_pairs(corpus: Corpus, tasks, max_pairs: int | None, seed: int) -> list[tuple[int, int]]:
    """Notes drawn with `seed` x every task, sorted: max(1, max_pairs // tasks) notes (all
    without max_pairs). Reads note ids only."""
    task_ids = sorted(t.pk for t in tasks)
    note_ids = list(Note.objects.filter(corpus=corpus).order_by("pk").values_list("pk", flat=True))
    if max_pairs is not None:
        wanted = max(1, max_pairs // max(1, len(task_ids)))
        if len(note_ids) > wanted:
            note_ids = sorted(random.Random(seed).sample(note_ids, wanted))
    return [(n, t) for n in note_ids for t in task_ids]


def n_planned(spec: EvaluationSpec) -> int:
    """How many pairs `plan_pairs` gives, counted in the database (for the estimate)."""
    if spec.pairs_from == "notes":
        notes = Note.objects.filter(corpus=spec.corpus).count()
        if spec.max_pairs is not None:
            notes = min(notes, max(1, spec.max_pairs // max(1, len(spec.tasks))))
        return notes * len(spec.tasks)
    pairs = gold_sources.count_pairs(spec.corpus, spec.tasks)  # the union of every source's, in the database
    return pairs if spec.max_pairs is None else min(pairs, spec.max_pairs)


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
        corpus=spec.corpus,
        model_version=spec.model_version,
        configs=configs,
        profile=spec.resolved_profile(),
        max_pairs=spec.max_pairs,
        seed=spec.seed,
        pairs=pairs,
        pairs_from=spec.pairs_from,
        faithfulness=spec.faithfulness,
        total=len(pairs) * len(configs),
        created_by=_user(actor),
        heartbeat=timezone.now(),  # queued: when it was sent
    )
    evaluation.tasks.set(spec.tasks)
    record(
        actor,
        AuditEvent.Action.LAUNCH_JOB,
        evaluation,
        what="relevance evaluation",
        corpus=spec.corpus.pk,
        model=spec.model_version.name,
        configurations=len(configs),
        pairs=len(pairs),
        pairs_from=spec.pairs_from,
        faithfulness=spec.faithfulness,
    )
    if enqueue:
        send_on_commit(evaluation.pk)
    return evaluation


def send_on_commit(evaluation_id: int) -> None:
    """Hand the evaluation to the relevance queue after the commit, by task name (the web process
    never imports torch); a broker error is said on the evaluation (the recovery sweeper sends it
    again once the broker is back)."""
    queue.send_on_commit(RUN_TASK, evaluation_id, on_error=partial(_say_unsent, evaluation_id))


def _say_unsent(evaluation_id: int, message: str) -> None:
    RelevanceEvaluation.objects.filter(pk=evaluation_id, status=JobStatus.QUEUED).update(error=message)


@transaction.atomic
def cancel(evaluation: RelevanceEvaluation, actor=None) -> RelevanceEvaluation:
    """A queued evaluation (or one held by a lost worker) is cancelled at once; a running one
    stops after its batch."""
    status = units.request_cancel(RelevanceEvaluation, evaluation.pk)
    if status is None:
        evaluation.refresh_from_db(fields=["status"])
        raise EvaluationError(
            _("Only a queued or running evaluation can be cancelled; this one is %(status)s.")
            % {"status": evaluation.get_status_display().lower()}
        )
    record(actor, AuditEvent.Action.CANCEL_JOB, evaluation, what="relevance evaluation", done=evaluation.done)
    evaluation.status = status
    return evaluation


@transaction.atomic
def resume(evaluation: RelevanceEvaluation, actor=None, *, enqueue: bool = True) -> RelevanceEvaluation:
    """Queue the evaluation again; the maps already stored are not computed again."""
    # releases={}: every worker may give it back RELEVANCE_RELEASE_LIMIT times again
    if not units.requeue(RelevanceEvaluation, evaluation.pk, phase="queued again", releases={}, **NO_STAGE):
        evaluation.refresh_from_db(fields=["status"])
        if evaluation.status == JobStatus.DONE:
            raise EvaluationError(_("This evaluation is done: there is nothing to resume."))
        raise EvaluationError(
            _(
                "This evaluation is %(status)s and its worker is alive; it can be resumed once cancelled, "
                "failed, or silent for %(seconds)s seconds."
            )
            % {"status": evaluation.get_status_display().lower(), "seconds": settings.WORK_STALL_SECONDS}
        )
    record(
        actor, AuditEvent.Action.LAUNCH_JOB, evaluation, what="relevance evaluation", resumed=True, done=evaluation.done
    )
    if enqueue:
        send_on_commit(evaluation.pk)
    evaluation.status = JobStatus.QUEUED
    return evaluation


def claim(evaluation_id: int, worker: str = "") -> RelevanceEvaluation | None:
    """Take a queued evaluation, or one whose worker is lost (webapp.lifecycle.units.claim).
    None: nothing to do for this message."""
    return units.claim(
        RelevanceEvaluation,
        evaluation_id,
        worker,
        select_related=("corpus", "model_version", "profile"),
        error="",
        phase="starting",
        **NO_STAGE,
    )


def report(evaluation: RelevanceEvaluation, **fields) -> bool:
    """Progress from the attempt that holds the evaluation; False if it no longer does."""
    return units.beat(evaluation, **fields) is not None


def cancel_requested(evaluation: RelevanceEvaluation) -> bool:
    return RelevanceEvaluation.objects.filter(pk=evaluation.pk, status=JobStatus.CANCELLING).exists()


def finish(evaluation: RelevanceEvaluation, result: dict) -> bool:
    return units.finish(evaluation, result=result, phase="done")


def cancelled(evaluation: RelevanceEvaluation) -> bool:
    return units.cancelled(evaluation, phase="cancelled: Resume continues where it stopped")


def release(evaluation: RelevanceEvaluation, message: str = "") -> bool:
    """Back to the queue after a temporary problem (the task retries). Not while cancelling: the
    retry would lose the cancel. (`message`: the runner's; the phase says it.)"""
    return (
        units.owned(evaluation)
        .filter(status=JobStatus.RUNNING)
        .update(status=JobStatus.QUEUED, heartbeat=Now(), phase="waiting to retry after a temporary problem")
        == 1
    )


def release_unloadable(evaluation: RelevanceEvaluation, reason: str) -> releases.Released | None:
    """This attempt's worker cannot load the model: give the evaluation back for another worker,
    or fail it once every live worker has released it RELEVANCE_RELEASE_LIMIT times (the rule of
    relevance chunks). None when the attempt no longer held it running (taken over, or
    cancelling: the caller ends it cancelled)."""
    return releases.release_unloadable(
        evaluation,
        reason,
        model=evaluation.model_version.name,
        lacking=RelevanceEvaluation.objects.filter(pk=evaluation.pk),
        held=(JobStatus.RUNNING,),  # a cancel must not be lost to the queue
        queued={"phase": "waiting for a worker that can load the model"},
    )


def fail(evaluation: RelevanceEvaluation, message: str) -> bool:
    return units.fail(evaluation, message[:2000])


def fail_unexpectedly(evaluation: RelevanceEvaluation, exc: BaseException) -> bool:
    """The runner's record of an error (workers.runner): maps already stored are kept."""
    from celery.exceptions import SoftTimeLimitExceeded

    from webapp.lifecycle.ended import TRANSIENT

    if isinstance(exc, EvaluationError):
        message = str(exc)
    elif isinstance(exc, TRANSIENT):
        message = (
            f"Stopped by a temporary problem ({type(exc).__name__}) that did not go away. "
            "Maps already stored are kept: press Resume."
        )
    elif isinstance(exc, SoftTimeLimitExceeded):
        message = (
            "The evaluation took longer than the task time limit. Maps already stored are kept: "
            "press Resume to continue."
        )
    else:
        message = (
            f"Unexpected error ({type(exc).__name__}); the worker log has the details. "
            "Maps already stored are kept: Resume continues from there."
        )
    return fail(evaluation, message)


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
