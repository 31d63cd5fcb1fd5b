"""How much work a launch form asks for, and about how long it takes, before anything is created.

Every launch form (relevance job, dataset build, training run, evaluation) asks for an
`Estimate`: the amount of work in its natural unit (prompts, maps, steps) and, when earlier work
of the same model on the same queue was measured, the time it takes one worker of that queue.
The rate is always measured, never guessed: when there is no earlier work to measure, the
estimate says so in `basis` and gives no time.

"This kind of worker" is the queue the work is routed to (settings.CELERY_TASK_ROUTES): the
deployment decides which machines (CPU or GPU) serve each queue, so rates measured on a queue
hold for its next work. A unit does not record its device, so one queue served by CPU and GPU
workers at once averages both.

Cheap by construction: each rate reads at most RATE_SAMPLE recent rows of its own table (jobs,
builds, runs, evaluations; never relevance chunks) through the counters those rows keep.

Above settings.LAUNCH_CONFIRM_SECONDS (or, with no measured rate, above
settings.LAUNCH_CONFIRM_AMOUNT units) a launch needs a second, explicit confirmation: the view
re-renders the form with the estimate and a confirm button that posts `confirmed`, the amount shown,
and launches only when the posted amount covers the amount asked for now.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.conf import settings

from ml.training.schedule import plan_steps
from webapp.corpus.models import Annotation
from webapp.datasets.launch import BUILD_TASK
from webapp.datasets.models import DatasetVersion
from webapp.evaluation.evaluations import RUN_TASK as EVALUATION_TASK
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import jobs
from webapp.pipeline.models import RelevanceJob
from webapp.training import configs
from webapp.training.models import CAUSAL_KINDS, TrainingRun
from webapp.training.runs import RUN_TASK as TRAINING_TASK

RATE_SAMPLE = 5  # most recent measured units of work a rate is taken from
CONFIRM_FIELD = "confirmed"


@dataclass(frozen=True)
class Estimate:
    amount: int  # units of work asked for
    unit: str  # "prompts", "maps", "steps"
    seconds: float | None  # on one worker of `queue`; None: no measured rate yet
    basis: str  # where the rate came from, in plain words
    queue: str = ""  # the queue whose workers do the work

    @property
    def needs_confirmation(self) -> bool:
        if self.seconds is not None:
            return self.seconds > settings.LAUNCH_CONFIRM_SECONDS
        return self.amount > settings.LAUNCH_CONFIRM_AMOUNT

    @property
    def size(self) -> str:
        """The amount in words ("12,400 prompts")."""
        return f"{self.amount:,} {self.unit}"

    @property
    def duration(self) -> str:
        """The time in words ("about 2 h 05 min"), "unknown" without a measured rate."""
        return "unknown" if self.seconds is None else f"about {in_words(self.seconds)}"

    @property
    def worker(self) -> str:
        return f"one worker of the {self.queue} queue" if self.queue else "one worker"

    @property
    def question(self) -> str:
        """The confirmation asked before a large launch."""
        size = f"This is {self.size}"
        if self.seconds is None:
            return f"{size}, and no time can be estimated yet ({self.basis}). Launch it?"
        return f"{size}, {self.duration} on {self.worker}. Launch it?"

    def confirmed_by(self, posted) -> bool:
        """True when it needs no confirmation, or `posted` (request.POST) confirms at least this
        amount: changing the form after confirming a smaller launch asks again."""
        if not self.needs_confirmation:
            return True
        try:
            return int(posted.get(CONFIRM_FIELD) or 0) >= self.amount
        except ValueError:
            return False


def waits_for_confirmation(estimate: Estimate | None, posted) -> bool:
    """A launch form's test: True while a large launch has not been confirmed (no estimate: the
    work has no amount to confirm, it launches as before)."""
    return estimate is not None and not estimate.confirmed_by(posted)


def in_words(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{seconds / 86400:.1f} days"


def from_rate(amount: int, unit: str, samples: list[tuple[float, float]], *, work: str, queue_name: str) -> Estimate:
    """An estimate from measured (units, seconds) of earlier `work` ("job", "dsm run") of this
    model on the queue `queue_name`."""
    measured = [(done, seconds) for done, seconds in samples if done and seconds and seconds > 0]
    if not measured:
        return Estimate(
            amount, unit, None, f"no measured rate yet for {work}s of this model on the {queue_name} queue", queue_name
        )
    rate = sum(done for done, _ in measured) / sum(seconds for _, seconds in measured)
    count = len(measured)
    basis = (
        f"measured on {count} earlier {work}{'' if count == 1 else 's'} of this model on the {queue_name} "
        f"queue ({rate:.3g} {unit}/s)"
    )
    return Estimate(amount, unit, amount / rate, basis, queue_name)


def _elapsed(rows) -> list[tuple[float, float]]:
    """(units, seconds) from (units, started, finished) rows."""
    return [(units, (finished - started).total_seconds()) for units, started, finished in rows if started and finished]


# Relevance jobs: prompts = notes x tasks per note; rate = prompts / seconds of computing of the
# finished chunks, counters the job keeps (webapp.pipeline.jobs), so no chunk is read.
def relevance_job(spec) -> Estimate:
    notes = jobs.selected_notes(spec.corpus, spec.note_filter).count()
    if spec.note_filter.get("limit"):
        notes = min(notes, spec.note_filter["limit"])
    per_note = spec.sample_k if spec.task_selection == RelevanceJob.TaskSelection.SAMPLE else len(spec.task_pool())
    earlier = (
        RelevanceJob.objects.filter(model_version=spec.model_version, done__gt=0, seconds_done__gt=0)
        .order_by("-pk")
        .values_list("done", "seconds_done")[:RATE_SAMPLE]
    )
    return from_rate(notes * per_note, "prompts", list(earlier), work="job", queue_name=queue.queue_of(jobs.RUN_CHUNK))


# Dataset builds: relevance maps read; rate = maps / wall time of earlier finished builds.
def dataset_build(model_version, maps: int) -> Estimate:
    earlier = (
        DatasetVersion.objects.filter(model_version=model_version, status=JobStatus.DONE, maps_total__gt=0)
        .order_by("-finished")
        .values_list("maps_total", "started", "finished")[:RATE_SAMPLE]
    )
    return from_rate(maps, "maps", _elapsed(earlier), work="build", queue_name=queue.queue_of(BUILD_TASK))


# Training runs: optimizer steps, as ml.training.loop counts them; rate = steps / wall time of
# earlier finished runs of the same kind and model. Kinds without optimizer steps of that kind
# (heads, prompting) get no estimate.
def training_run(spec) -> Estimate | None:
    config, problems = spec.full_config()
    train = config.get("train") or {}
    if problems or "effective_batch_size" not in train:
        return None
    if spec.kind in CAUSAL_KINDS:
        examples = spec.dataset.examples.count() if spec.dataset is not None else 0
    else:
        examples = spec.split.train_count if spec.split is not None else 0
    if not examples:
        return None
    # the trainer's own arithmetic (ml.training.schedule), so the estimate counts what it will run
    steps = plan_steps(configs.section_classes(spec.kind)["train"].from_dict(train), examples).total
    earlier = (
        TrainingRun.objects.filter(
            model_version=spec.model_version, kind=spec.kind, status=JobStatus.DONE, total_steps__gt=0
        )
        .order_by("-finished")
        .values_list("total_steps", "started", "finished")[:RATE_SAMPLE]
    )
    return from_rate(
        steps, "steps", _elapsed(earlier), work=f"{spec.kind} run", queue_name=queue.queue_of(TRAINING_TASK)
    )


# Evaluations: prompts = annotated pairs (at most max_pairs) x configurations; rate = the
# seconds per prompt earlier evaluations of the model measured.
def evaluation(spec) -> Estimate:
    annotated = Annotation.objects.filter(note__corpus=spec.corpus).exclude(evidence=[])
    if spec.tasks:
        annotated = annotated.filter(task__in=list(spec.tasks))
    pairs = annotated.values("note_id", "task_id").distinct().count()
    if spec.max_pairs is not None:
        pairs = min(pairs, spec.max_pairs)
    configs = len(set(spec.methods)) * len(set(spec.explains))
    earlier = (
        RelevanceEvaluation.objects.filter(model_version=spec.model_version, done__gt=0, seconds_per_prompt__gt=0)
        .order_by("-pk")
        .values_list("done", "seconds_per_prompt")[:RATE_SAMPLE]
    )
    return from_rate(
        pairs * configs,
        "prompts",
        [(done, done * spp) for done, spp in earlier],
        work="evaluation",
        queue_name=queue.queue_of(EVALUATION_TASK),
    )
