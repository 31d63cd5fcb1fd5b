"""Training runs: what a run asks for, launch, cancel, resume, claim, and how a run ends.

A run is a unit of long work (webapp.lifecycle): its status moves only through the atomic
conditional updates of webapp.lifecycle.units, and this module adds what is particular to runs
(a RunLog line at each turn, the checkpoint step, the phase and the trainer's ETA):

    queued --claimed by a worker--> running --> done | failed
    queued --cancel--> cancelled              (its message will find nothing to do)
    running --cancel--> cancelling --worker saves a checkpoint--> cancelled
    cancelled | failed | held by a lost worker --resume--> queued
        --> the worker continues from output_dir/checkpoint-last/

Each claim increments `attempts`; the worker writes progress only while `attempts` is still
its own (`webapp.training.reporting`), so a worker presumed dead that wakes up cannot overwrite
the run that another worker has taken over; `stop_reason` tells a training process when to stop
(a cancel, or the run taken over). Every transition is a function here; the executor
(`webapp.training.execution`) only chooses which one a trainer's outcome calls for.

The gate (webapp.deid.gate): a run learns from its corpora's notes (a model can memorise
identifiers; its run and model may go to MLflow), so a launch whose corpora are not all
de-identified is refused unless a project admin confirmed (`confirm_identifiable`), which is
audited on the run itself: MLflow logging looks for that row (gate.released).

Crash recovery: the worker beats from a thread while it trains (webapp.lifecycle.heartbeat,
independent of optimizer steps, which can outlast WORK_STALL_SECONDS on a CPU). A run whose
worker stopped beating for WORK_STALL_SECONDS is shown as stalled and queued again by the
recovery sweeper every worker runs; the next worker continues from the last checkpoint.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus
from webapp.datasets.models import DatasetVersion
from webapp.deid import gate
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import ModelVersion
from webapp.training import configs, log_text, presets, splits
from webapp.training.models import CAUSAL_KINDS, LABELED_KINDS, LabeledSplit, RunKind, RunLog, TrainingRun

RUN_TASK = "workers.training.run_training"


class RunError(Exception):
    """A request the run cannot honour; the message is in plain words for the page. `problems`:
    {setting: problem} when the run specification was refused (RunSpec.problems)."""

    def __init__(self, message: str, problems: dict[str, str] | None = None):
        super().__init__(message)
        self.problems = problems or {}


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

    def corpora(self) -> list[Corpus]:
        """The corpora whose notes the run learns from or is evaluated on: its dataset's, its split's
        (or the corpus to split) and the corpus it takes unlabeled notes from (self-learning)."""
        corpus = self.dataset.corpus if self.dataset else self.split.corpus if self.split else self.split_corpus
        return _with_unlabeled([corpus] if corpus is not None else [], self.full_config()[0])

    @property
    def project_id(self) -> int | None:
        """The project the run belongs to: its dataset's, its split's or the corpus to split."""
        corpus = self.dataset.corpus if self.dataset else self.split.corpus if self.split else self.split_corpus
        return corpus.project_id if corpus is not None else None

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the run can be launched."""
        if self.kind not in RunKind.values:
            return {
                "kind": _("Unknown run kind %(kind)s; the kinds are %(kinds)s.")
                % {"kind": repr(self.kind), "kinds": ", ".join(RunKind.values)}
            }
        config, problems = self.full_config()
        unlabeled = (config.get("unlabeled") or {}).get("corpus")
        if unlabeled and not Corpus.objects.filter(name=unlabeled, project_id=self.project_id).exists():
            # names are unique per project: another project's corpus is no source of notes here
            problems["unlabeled.corpus"] = _(
                "There is no corpus %(corpus)s in this project to take unlabeled notes from."
            ) % {"corpus": repr(unlabeled)}
        if self.preset:
            try:
                preset = presets.get(self.preset)
            except ValueError as exc:
                problems["preset"] = str(exc)
            else:
                if preset.kind != self.kind:
                    problems["preset"] = _("Preset %(preset)s is a %(kind)s run.") % {
                        "preset": repr(str(preset.label)),
                        "kind": RunKind(preset.kind).label,
                    }
        if self.kind in CAUSAL_KINDS:
            problems.update(self._dataset_problems())
        else:
            problems.update(self._split_problems())
        if not any(key.split(".")[0] in ("train", "dataset", "split") for key in problems):
            problems.update(self._step_problems(config))
        if len(self.name) > 200:
            problems["name"] = _("The name is longer than 200 characters.")
        return problems

    def _dataset_problems(self) -> dict[str, str]:
        dataset = self.dataset
        if dataset is None:
            return {"dataset": _("Choose the dataset version to train on.")}
        if dataset.status != JobStatus.DONE:
            return {
                "dataset": _("Dataset %(dataset)s is %(status)s: only a finished dataset can be trained on.")
                % {"dataset": dataset, "status": dataset.get_status_display().lower()}
            }
        if not dataset.examples.exists():
            return {"dataset": _("Dataset %(dataset)s has no examples.") % {"dataset": dataset}}
        modes = presets.PRESETS[self.preset].dataset_modes if self.preset in presets.PRESETS else ()
        if self.kind == RunKind.DSM and dataset.mode == DatasetVersion.Mode.UNMASKED:
            return {
                "dataset": _("Dataset %(dataset)s holds unmasked notes: train on it with a CPT run.")
                % {"dataset": dataset}
            }
        if modes and dataset.mode not in modes:
            wanted = _(" or ").join(str(DatasetVersion.Mode(m).label) for m in modes)
            return {
                "dataset": _(
                    "Preset %(preset)s trains on a dataset built in mode %(wanted)s; %(dataset)s was built in mode "
                    "%(mode)s."
                )
                % {
                    "preset": repr(str(presets.PRESETS[self.preset].label)),
                    "wanted": wanted,
                    "dataset": dataset,
                    "mode": dataset.get_mode_display(),
                }
            }
        return {}

    def _step_problems(self, config: dict) -> dict[str, str]:
        """A run whose every optimizer step would have learning rate 0 cannot change the model
        (ml.training.schedule): refused, beside the setting to change. Checked where the number
        of training examples is known and is at most what the trainer will see (DSM on a dataset,
        SFT and self-learning on a stored split; CPT may cut long notes into more examples)."""
        n_examples = self._training_examples()
        if n_examples is None or "train" not in config:
            return {}
        from ml.training import plan_steps

        train = configs.section_classes(self.kind)["train"].from_dict(config["train"])
        plan = plan_steps(train, n_examples)
        if plan.learning:
            return {}
        steps = ngettext("%(count)s optimizer step", "%(count)s optimizer steps", plan.total) % {"count": plan.total}
        why = ngettext(
            "%(count)s training example at an effective batch size of %(batch)s",
            "%(count)s training examples at an effective batch size of %(batch)s",
            n_examples,
        ) % {"count": n_examples, "batch": train.effective_batch_size}
        if train.max_steps:
            why += ngettext(", at most %(count)s step", ", at most %(count)s steps", train.max_steps) % {
                "count": train.max_steps
            }
        if plan.total and plan.warmup:
            return {
                "train.warmup_ratio": _(
                    "This run would take %(steps)s (%(why)s), and warmup gives its first step a learning rate of 0, "
                    "so the model would not change. Set the warmup to 0, or train for more steps (more epochs or "
                    "maximum steps, or a smaller effective batch size)."
                )
                % {"steps": steps, "why": why}
            }
        return {
            "train.max_steps" if train.max_steps else "train.epochs": _(
                "This run would take no optimizer step that changes the model (%(why)s). Train for more steps."
            )
            % {"why": why}
        }

    def _training_examples(self) -> int | None:
        if self.kind == RunKind.DSM and self.dataset is not None:
            return self.dataset.examples.count()
        if self.kind in (RunKind.SFT, RunKind.SELF_LEARNING) and self.split is not None:
            return self.split.train_count
        return None

    def _split_problems(self) -> dict[str, str]:
        split = self.split
        if split is None and self.split_corpus is not None:
            if not 0 < self.split_test_ratio < 1:
                return {"split_test_ratio": _("The test share must be between 0 and 1 (the paper: 0.15).")}
            if not Annotation.objects.filter(note__corpus=self.split_corpus).exists():
                return {
                    "split_corpus": _("Corpus %(corpus)s has no gold annotations to split.")
                    % {"corpus": self.split_corpus.name}
                }
            return {}
        if split is None:
            return {"split": _("Choose the labeled split (or a corpus to split) to fit and evaluate on.")}
        if not (split.train_count and split.test_count):
            return {"split": _("The %(split)s has no train or no test items.") % {"split": split}}
        return {}


def output_dir(run: TrainingRun) -> Path:
    """A folder no other run has used: the run's id alone is not enough, since ids start again in
    another database (a fresh one, a test database) sharing DATA_DIR, and a run resumes from, or
    reuses a teacher and labels found in, its folder."""
    return Path(settings.DATA_DIR) / "training" / f"run-{run.pk}-{uuid.uuid4().hex[:12]}"


def feature_cache_dir() -> Path:
    """Shared by every CH run: the frozen model's features are computed once per (model, items)."""
    return Path(settings.DATA_DIR) / "training" / "features"


def run_corpora(run: TrainingRun) -> list[Corpus]:
    """The corpora a launched run learns from (as RunSpec.corpora): for the gate and MLflow."""
    corpus = run.dataset.corpus if run.dataset_id else run.split.corpus if run.split_id else None
    return _with_unlabeled([corpus] if corpus is not None else [], run.config or {})


def mlflow_refusal(run: TrainingRun) -> str:
    """Why a run may not be logged to MLflow (webapp.deid.gate): its corpora are not all
    de-identified and no project admin confirmed its launch (the run's RELEASE_IDENTIFIABLE row);
    "" when it may. Registered with webapp.integrations.mlflow_log by the app's ready()."""
    passage = gate.gate_for(run_corpora(run), None)
    if passage.open or gate.released(run):
        return ""
    with translation.override("en"):  # a stored log line is English, the gate's reason too
        return log_text.MLFLOW_HELD_BACK % {"reason": passage.reason}


def _with_unlabeled(corpora: list[Corpus], config: dict) -> list[Corpus]:
    """`corpora` and the corpus of the same project a self-learning run takes unlabeled notes from."""
    unlabeled = (config.get("unlabeled") or {}).get("corpus")
    if unlabeled and corpora:
        corpora = corpora + list(Corpus.objects.filter(name=unlabeled, project_id=corpora[0].project_id))
    return corpora


@transaction.atomic
def launch(spec: RunSpec, actor=None, *, enqueue: bool = True, confirm_identifiable: bool = False) -> TrainingRun:
    """Create the run with its full configuration and, after the commit, enqueue it.
    enqueue=False leaves it queued for an in-process runner (run_experiment). Raises gate.Refused
    when its corpora are not all de-identified, unconfirmed."""
    problems = spec.problems()
    if problems:
        raise RunError(" ".join(problems.values()), problems)
    passage = gate.gate_for(spec.corpora(), actor)
    confirmed = passage.check(actor, confirm_identifiable, "training launch")
    config, _ = spec.full_config()
    if spec.kind in LABELED_KINDS and spec.split is None:
        try:
            spec.split, _ = splits.get_or_create_split(
                spec.split_corpus, seed=spec.split_seed, test_ratio=spec.split_test_ratio, actor=actor
            )
        except splits.SplitError as exc:
            raise RunError(str(exc)) from None
    from webapp.training.provenance import code_version

    run = TrainingRun.objects.create(
        name=spec.name,
        kind=spec.kind,
        preset=spec.preset,
        model_version=spec.model_version,
        dataset=spec.dataset if spec.kind in CAUSAL_KINDS else None,
        split=spec.split if spec.kind in LABELED_KINDS else None,
        config=config,
        seed=configs.seed_of(spec.kind, config),
        code_version=code_version()[:64],
        created_by=_user(actor),
        heartbeat=timezone.now(),  # queued: when it was sent
    )
    run.output_dir = str(output_dir(run))
    run.save(update_fields=["output_dir"])
    if confirmed:  # MLflow logging finds the run's own row (gate.released)
        passage.record(actor, "training launch", run, kind=run.kind, dataset=run.dataset_id, split=run.split_id)
    with translation.override("en"):  # a stored log line is English, whatever page launched the run
        kind_name = str(run.get_kind_display())
    launched = {"kind": kind_name, "preset": spec.preset, "model": spec.model_version.name}
    RunLog.objects.create(run=run, message=(log_text.LAUNCHED_PRESET if spec.preset else log_text.LAUNCHED) % launched)
    record(
        actor,
        AuditEvent.Action.LAUNCH_JOB,
        run,
        what="training run",
        kind=run.kind,
        preset=run.preset,
        model=spec.model_version.name,
        dataset=run.dataset_id,
        split=run.split_id,
    )
    if enqueue:
        send_on_commit(run.pk)
    return run


def send_on_commit(run_id: int) -> None:
    """Put the run's message on the training queue after the commit; a broker error is said on
    the run (the recovery sweeper sends it again once the broker is back)."""
    queue.send_on_commit(RUN_TASK, run_id, on_error=partial(_say_unsent, run_id))


def _say_unsent(run_id: int, message: str) -> None:
    TrainingRun.objects.filter(pk=run_id, status=JobStatus.QUEUED).update(error=message)


@transaction.atomic
def cancel(run: TrainingRun, actor=None) -> TrainingRun:
    """A queued run is cancelled at once; a running one is asked to stop (the worker saves a
    checkpoint first); one held by a lost worker is cancelled at once."""
    status = units.request_cancel(TrainingRun, run.pk, eta_s=None)
    if status is None:
        run.refresh_from_db(fields=["status"])
        raise RunError(
            _("Only a queued or running run can be cancelled; this one is %(status)s.")
            % {"status": run.get_status_display().lower()}
        )
    RunLog.objects.create(
        run=run, message=log_text.CANCEL_REQUESTED if status == JobStatus.CANCELLING else log_text.CANCELLED
    )
    record(actor, AuditEvent.Action.CANCEL_JOB, run, what="training run", step=run.step)
    run.status = status
    return run


@transaction.atomic
def resume(run: TrainingRun, actor=None, *, enqueue: bool = True) -> TrainingRun:
    """Queue the run again; the worker continues from its last checkpoint."""
    if not units.requeue(TrainingRun, run.pk, phase="queued again", eta_s=None):
        run.refresh_from_db(fields=["status"])
        if run.status == JobStatus.DONE:
            raise RunError(_("This run is done: there is nothing to resume."))
        raise RunError(
            _(
                "This run is %(status)s and its worker is alive; it can be resumed once cancelled, failed, or "
                "silent for %(seconds)s seconds."
            )
            % {"status": run.get_status_display().lower(), "seconds": settings.WORK_STALL_SECONDS}
        )
    said = log_text.RESUME_FROM % {"step": run.checkpoint_step} if run.checkpoint_step else log_text.RESUME_REQUESTED
    RunLog.objects.create(run=run, message=said)
    record(actor, AuditEvent.Action.LAUNCH_JOB, run, what="training run", resumed=True, step=run.checkpoint_step)
    if enqueue:
        send_on_commit(run.pk)
    run.status = JobStatus.QUEUED
    return run


def claim(run_id: int, worker: str = "") -> TrainingRun | None:
    """Take a queued run, or one whose worker is lost (webapp.lifecycle.units.claim). None:
    nothing to do for this message. Why the run was waiting (e.g. its last worker was lost) goes
    from `error` to the run's log."""
    waited_because = TrainingRun.objects.filter(pk=run_id).values_list("error", flat=True).first()
    run = units.claim(
        TrainingRun,
        run_id,
        worker,
        select_related=("model_version", "dataset", "split__corpus"),
        error="",
        phase="starting",
        eta_s=None,
    )
    if run is None:
        return None
    if waited_because:
        RunLog.objects.create(run=run, level="warning", message=waited_because[:500])
    said = log_text.ATTEMPT_ON % {"attempt": run.attempts, "worker": worker} if worker else None
    RunLog.objects.create(run=run, message=said or log_text.ATTEMPT_HERE % {"attempt": run.attempts})
    return run


def finish(run: TrainingRun, **fields) -> bool:
    """running/cancelling -> done, with the results; only by the attempt that holds the run."""
    return units.finish(run, phase="done", eta_s=None, **fields)


def cancelled(run: TrainingRun) -> bool:
    done = units.cancelled(run, phase="cancelled", eta_s=None)
    if done:
        said = (
            log_text.CANCELLED_AT % {"step": run.checkpoint_step}
            if run.checkpoint_step
            else log_text.CANCELLED_RESUMABLE
        )
        RunLog.objects.create(run=run, message=said)
    return done


def requeue(run: TrainingRun, message: str) -> bool:
    """Back to queued and sent again: this attempt's processes are gone though the run did not fail
    (a killed launcher). The next claim continues from the last checkpoint; `message` goes to the
    run's log then."""
    if not units.release(run, message):
        return False
    send_on_commit(run.pk)
    return True


def fail(run: TrainingRun, message: str) -> bool:
    done = units.fail(run, message, eta_s=None)
    if done:
        RunLog.objects.create(run=run, level="error", message=message[:500])
    return done


def stop_reason(run: TrainingRun, *, holder: bool = True) -> str:
    """Why the process training `run` must stop now, in words; "" to go on. `holder`: the
    process of the attempt that holds the run (it stops once it no longer holds it); other ranks
    of a distributed launch stop only for a cancel."""
    if not holder:
        status = TrainingRun.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        return log_text.STOP_CANCEL if status == JobStatus.CANCELLING else ""
    status = TrainingRun.objects.filter(pk=run.pk, attempts=run.attempts).values_list("status", flat=True).first()
    if status == JobStatus.RUNNING:
        return ""
    return log_text.STOP_CANCEL if status == JobStatus.CANCELLING else log_text.STOP_NOT_HELD


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
