"""Training runs: what a run asks for, launch, cancel, resume, claim, and how a run ends.

Status moves only through atomic conditional updates (`filter(pk=, status__in=).update()`):

    queued --claimed by a worker--> running --> done | failed
    queued --cancel--> cancelled              (its message will find nothing to do)
    running --cancel--> cancelling --worker saves a checkpoint--> cancelled
    cancelled | failed | cancelling/running/queued with no heartbeat for STALL_SECONDS
        --resume--> queued --> the worker continues from output_dir/checkpoint-last/

Each claim increments `attempts`; the worker writes progress only while `attempts` is still
its own (`webapp.training.reporting`), so a worker presumed dead that wakes up cannot overwrite
the run that another worker has taken over.

Crash recovery: the task is acked late and rejected when its worker is lost (settings), so the
broker delivers the message again (Redis: after the visibility timeout). A redelivered message
takes back a RUNNING run only once its heartbeat is older than STALL_SECONDS; a heartbeat that is
still fresh means the first worker is alive (a run longer than the visibility timeout), and the
message is dropped. Where the broker cannot redeliver, the Resume button does the same.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from webapp.audit.log import record
from webapp.env import env_int
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus
from webapp.datasets.models import DatasetVersion
from webapp.pipeline.models import JobStatus, ModelVersion
from webapp.training import configs, presets, splits
from webapp.training.models import CAUSAL_KINDS, LABELED_KINDS, LabeledSplit, RunKind, RunLog, TrainingRun

log = logging.getLogger(__name__)

RUN_TASK = "workers.training.run_training"
# No heartbeat for this long: the run's worker is presumed dead (its message may be taken back,
# Resume is offered). Heartbeats come at least every optimizer step and phase change.
STALL_SECONDS = env_int("TRAINING_STALL_SECONDS", 10 * 60)
RESUMABLE = (JobStatus.CANCELLED, JobStatus.FAILED)


class RunError(Exception):
    """A request the run cannot honour; the message is in plain words for the page."""


@dataclass
class RunSpec:
    """What a researcher asks for. `config` holds overrides by section (or a full config)."""

    kind: str
    model_version: ModelVersion
    dataset: DatasetVersion | None = None
    split: LabeledSplit | None = None
    config: dict = field(default_factory=dict)
    preset: str = ""
    name: str = ""
    # No split yet: make (or reuse) the split of this corpus with this seed and test share.
    split_corpus: Corpus | None = None
    split_seed: int = 0
    split_test_ratio: float = 0.15

    def full_config(self) -> tuple[dict, dict[str, str]]:
        return configs.build_config(self.kind, self.config)

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the run can be launched."""
        if self.kind not in RunKind.values:
            return {"kind": f"Unknown run kind {self.kind!r}; the kinds are {', '.join(RunKind.values)}."}
        config, problems = self.full_config()
        unlabeled = (config.get("unlabeled") or {}).get("corpus")
        if unlabeled and not Corpus.objects.filter(name=unlabeled).exists():
            problems["unlabeled.corpus"] = f"There is no corpus {unlabeled!r} to take unlabeled notes from."
        if self.preset:
            try:
                preset = presets.get(self.preset)
            except ValueError as exc:
                problems["preset"] = str(exc)
            else:
                if preset.kind != self.kind:
                    problems["preset"] = f"Preset {preset.label!r} is a {RunKind(preset.kind).label} run."
        if self.kind in CAUSAL_KINDS:
            problems.update(self._dataset_problems())
        else:
            problems.update(self._split_problems())
        if len(self.name) > 200:
            problems["name"] = "The name is longer than 200 characters."
        return problems

    def _dataset_problems(self) -> dict[str, str]:
        dataset = self.dataset
        if dataset is None:
            return {"dataset": "Choose the dataset version to train on."}
        if dataset.status != JobStatus.DONE:
            return {"dataset": f"Dataset {dataset} is {dataset.get_status_display().lower()}: only a finished "
                               "dataset can be trained on."}
        if not dataset.examples.exists():
            return {"dataset": f"Dataset {dataset} has no examples."}
        modes = presets.PRESETS[self.preset].dataset_modes if self.preset in presets.PRESETS else ()
        if self.kind == RunKind.DSM and dataset.mode == DatasetVersion.Mode.UNMASKED:
            return {"dataset": f"Dataset {dataset} holds unmasked notes: train on it with a CPT run."}
        if modes and dataset.mode not in modes:
            wanted = " or ".join(DatasetVersion.Mode(m).label for m in modes)
            return {"dataset": f"Preset {presets.PRESETS[self.preset].label!r} trains on a dataset built in mode "
                               f"{wanted}; {dataset} was built in mode {dataset.get_mode_display()}."}
        return {}

    def _split_problems(self) -> dict[str, str]:
        split = self.split
        if split is None and self.split_corpus is not None:
            if not 0 < self.split_test_ratio < 1:
                return {"split_test_ratio": "The test share must be between 0 and 1 (the paper: 0.15)."}
            if not Annotation.objects.filter(note__corpus=self.split_corpus).exists():
                return {"split_corpus": f"Corpus {self.split_corpus.name} has no gold annotations to split."}
            return {}
        if split is None:
            return {"split": "Choose the labeled split (or a corpus to split) to fit and evaluate on."}
        if not (split.train_count and split.test_count):
            return {"split": f"The {split} has no train or no test items."}
        return {}


def output_dir(run: TrainingRun) -> Path:
    return Path(settings.DATA_DIR) / "training" / f"run-{run.pk}"


def feature_cache_dir() -> Path:
    """Shared by every CH run: the frozen model's features are computed once per (model, items)."""
    return Path(settings.DATA_DIR) / "training" / "features"


@transaction.atomic
def launch(spec: RunSpec, actor=None, *, enqueue: bool = True) -> TrainingRun:
    """Create the run with its full configuration and, after the commit, enqueue it.
    enqueue=False leaves it queued for an in-process runner (run_experiment)."""
    problems = spec.problems()
    if problems:
        raise RunError(" ".join(problems.values()))
    config, _ = spec.full_config()
    if spec.kind in LABELED_KINDS and spec.split is None:
        try:
            spec.split, _ = splits.get_or_create_split(spec.split_corpus, seed=spec.split_seed,
                                                       test_ratio=spec.split_test_ratio, actor=actor)
        except splits.SplitError as exc:
            raise RunError(str(exc)) from None
    from webapp.training.provenance import code_version

    run = TrainingRun.objects.create(
        name=spec.name, kind=spec.kind, preset=spec.preset, model_version=spec.model_version,
        dataset=spec.dataset if spec.kind in CAUSAL_KINDS else None,
        split=spec.split if spec.kind in LABELED_KINDS else None,
        config=config, seed=configs.seed_of(spec.kind, config), code_version=code_version()[:64],
        created_by=_user(actor),
    )
    run.output_dir = str(output_dir(run))
    run.save(update_fields=["output_dir"])
    RunLog.objects.create(run=run, message=f"Launched: {run.get_kind_display()}"
                                           f"{f', preset {spec.preset}' if spec.preset else ''}, model "
                                           f"{spec.model_version.name}.")
    record(actor, AuditEvent.Action.LAUNCH_JOB, run, what="training run", kind=run.kind, preset=run.preset,
           model=spec.model_version.name, dataset=run.dataset_id, split=run.split_id)
    if enqueue:
        transaction.on_commit(partial(send, run.pk))
    return run


def send(run_id: int) -> bool:
    """Put the run's message on the training queue; on a broker error, say so on the run."""
    from workers.celery_app import app

    try:
        app.send_task(RUN_TASK, args=[run_id])
    except Exception as exc:  # kombu raises several connection error types
        log.error("run %s: could not enqueue (%s)", run_id, type(exc).__name__)
        TrainingRun.objects.filter(pk=run_id).update(
            error=f"The task queue could not be reached ({type(exc).__name__}). Press Resume when it is back.")
        return False
    return True


@transaction.atomic
def cancel(run: TrainingRun, actor=None) -> TrainingRun:
    """A queued run is cancelled at once; a running one is asked to stop (the worker saves a
    checkpoint first); a stalled one (its worker gone) is cancelled at once."""
    stalled = is_stalled(run)
    if _move(run.pk, (JobStatus.QUEUED,), status=JobStatus.CANCELLED, finished=Now()) or (
            stalled and _move(run.pk, (JobStatus.RUNNING, JobStatus.CANCELLING), status=JobStatus.CANCELLED,
                              finished=Now())):
        status = JobStatus.CANCELLED
    elif _move(run.pk, (JobStatus.RUNNING,), status=JobStatus.CANCELLING):
        status = JobStatus.CANCELLING
    else:
        run.refresh_from_db(fields=["status"])
        raise RunError(f"Only a queued or running run can be cancelled; this one is "
                       f"{run.get_status_display().lower()}.")
    RunLog.objects.create(run=run, message="Cancel requested." if status == JobStatus.CANCELLING else "Cancelled.")
    record(actor, AuditEvent.Action.CANCEL_JOB, run, what="training run", step=run.step)
    run.status = status
    return run


def is_stalled(run: TrainingRun, now=None) -> bool:
    """Active, yet no sign of life for STALL_SECONDS (its worker died and the broker did not,
    or cannot, deliver its message again)."""
    if run.status not in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING):
        return False
    latest = run.heartbeat or max(filter(None, [run.started, run.created]))
    return (now or timezone.now()) - latest > timedelta(seconds=STALL_SECONDS)


def can_resume(run: TrainingRun) -> bool:
    return run.status in RESUMABLE or is_stalled(run)


@transaction.atomic
def resume(run: TrainingRun, actor=None, *, enqueue: bool = True) -> TrainingRun:
    """Queue the run again; the worker continues from its last checkpoint."""
    allowed = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING) if is_stalled(run) else RESUMABLE
    if not _move(run.pk, allowed, status=JobStatus.QUEUED, finished=None, error="", heartbeat=Now()):
        run.refresh_from_db(fields=["status"])
        if run.status == JobStatus.DONE:
            raise RunError("This run is done: there is nothing to resume.")
        raise RunError(f"This run is {run.get_status_display().lower()} and its worker is alive; it can be "
                       f"resumed once cancelled, failed, or silent for {STALL_SECONDS // 60} minutes.")
    step = f" from the checkpoint of step {run.checkpoint_step}" if run.checkpoint_step else ""
    RunLog.objects.create(run=run, message=f"Resume requested{step}.")
    record(actor, AuditEvent.Action.LAUNCH_JOB, run, what="training run", resumed=True, step=run.checkpoint_step)
    if enqueue:
        transaction.on_commit(partial(send, run.pk))
    run.status = JobStatus.QUEUED
    return run


def claim(run_id: int, worker: str = "") -> TrainingRun | None:
    """Atomically take a queued run, or a running / cancelling one whose heartbeat is stale (its
    worker died: this is the redelivered message). None: nothing to do for this message."""
    stale = timezone.now() - timedelta(seconds=STALL_SECONDS)
    takeable = Q(status=JobStatus.QUEUED) | (Q(status__in=(JobStatus.RUNNING, JobStatus.CANCELLING)) & (
        Q(heartbeat__lt=stale) | Q(heartbeat__isnull=True, started__lt=stale)))
    claimed = TrainingRun.objects.filter(takeable, pk=run_id).update(
        status=JobStatus.RUNNING, attempts=F("attempts") + 1, worker=worker[:200], heartbeat=Now(),
        started=Coalesce(F("started"), Now()), finished=None, error="", phase="starting")
    if not claimed:
        return None
    run = TrainingRun.objects.select_related("model_version", "dataset", "split__corpus").get(pk=run_id)
    RunLog.objects.create(run=run, message=f"Attempt {run.attempts} started on {worker or 'this process'}.")
    return run


def claim_blocked_by_live_worker(run_id: int) -> bool:
    """True when the run is running with a fresh heartbeat (another worker has it)."""
    stale = timezone.now() - timedelta(seconds=STALL_SECONDS)
    return TrainingRun.objects.filter(pk=run_id, status__in=(JobStatus.RUNNING, JobStatus.CANCELLING),
                                      heartbeat__gte=stale).exists()


def finish(run: TrainingRun, **fields) -> bool:
    """running/cancelling -> done, with the results; only by the attempt that holds the run."""
    return _owned(run).update(status=JobStatus.DONE, finished=Now(), phase="done", eta_s=None, heartbeat=Now(),
                              **fields) == 1


def cancelled(run: TrainingRun) -> bool:
    done = _owned(run).update(status=JobStatus.CANCELLED, finished=Now(), phase="cancelled", eta_s=None,
                              heartbeat=Now()) == 1
    if done:
        where = f" at step {run.checkpoint_step}" if run.checkpoint_step else ""
        RunLog.objects.create(run=run, message=f"Cancelled{where}; Resume continues from the last checkpoint.")
    return done


def fail(run: TrainingRun, message: str) -> bool:
    done = _owned(run).update(status=JobStatus.FAILED, finished=Now(), error=message, eta_s=None,
                              heartbeat=Now()) == 1
    if done:
        RunLog.objects.create(run=run, level="error", message=message[:500])
    return done


def _owned(run: TrainingRun):
    return TrainingRun.objects.filter(pk=run.pk, attempts=run.attempts,
                                      status__in=(JobStatus.RUNNING, JobStatus.CANCELLING))


def _move(run_id: int, from_statuses, **changes) -> bool:
    return TrainingRun.objects.filter(pk=run_id, status__in=from_statuses).update(**changes) == 1


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
