"""Run a claimed training run: read its inputs, call ml.training, store what it produced.

One function per run kind (webapp.training.causal: dsm, cpt; webapp.training.adaptation: sft,
heads, prompting, self_learning); `execute(run)` picks it, turns ml.training's outcome into the
run's end state (done / cancelled / failed) and never raises for a run-level problem. Called by the
Celery task (workers.training), by `manage.py run_experiment` in-process, and by
`manage.py train_run` under `accelerate launch` / `torchrun` (every rank calls the trainer;
only rank 0 writes to the database, see `is_main_process`).

The process that writes trains inside a heartbeat (webapp.lifecycle.heartbeat): a thread beats
for the run every WORK_HEARTBEAT_SECONDS whatever the trainer is doing (one optimizer step on a
CPU, or loading a model, can outlast WORK_STALL_SECONDS), so a run is taken for lost only when
its process is gone.

The process must never have been patched by lxt (AttnLRP relevance): training checks it first.
"""

from __future__ import annotations

import gc
import logging
import time
import traceback

from webapp.lifecycle.heartbeat import beating
from webapp.training import adaptation, causal, log_text, provenance, runs
from webapp.training.models import RunKind, TrainingRun
from webapp.training.reporting import Reporter
from webapp.training.runtime import Cancelled, NothingLearned, is_main_process

log = logging.getLogger(__name__)


def run_claimed(run: TrainingRun, heart) -> str:
    """The runner's work for a claimed run (kind "training run", workers.runner): with
    TRAINING_LAUNCHER set, a dsm / cpt / sft run is trained by `<launcher> manage.py train_run`
    child processes (webapp.training.distributed.launch) while this process beats; else here."""
    from django.conf import settings

    from webapp.training.distributed import launch
    from webapp.training.models import DISTRIBUTED_KINDS

    if settings.TRAINING_LAUNCHER and run.kind in DISTRIBUTED_KINDS:
        return launch(run, settings.TRAINING_LAUNCHER, heart)
    return execute(run, heart=heart)


def execute(run: TrainingRun, *, write: bool | None = None, heart=None) -> str:
    """Run a claimed run to its end; returns its final status ("done", "cancelled", "failed").
    Beats with `heart` (the runner's), else a Heartbeat of its own."""
    write = is_main_process() if write is None else write
    if not write:
        return _execute(run, write=False)
    with beating(run, heart):
        return _execute(run, write=True)


def _execute(run: TrainingRun, *, write: bool) -> str:
    import ml.lrp
    from ml.training import TrainingCancelled, TrainingError, TrainingInputError

    reporter = Reporter(run, write=write)
    if ml.lrp.is_patched():  # lxt's relevance patches change dropout and gradients for good
        if write:
            runs.fail(run, log_text.LXT_PATCHED)
        return "failed"
    if write:
        _record_environment(run, reporter)
    started = time.perf_counter()
    try:
        fields = RUNNERS[run.kind](run, reporter)
    except (TrainingCancelled, Cancelled) as exc:
        reporter.flush()
        if write:
            step = getattr(exc, "step", 0)
            if step:  # the trainer saved a checkpoint at this step
                TrainingRun.objects.filter(pk=run.pk, attempts=run.attempts).update(checkpoint_step=step)
                run.checkpoint_step = step
            runs.cancelled(run)
        return "cancelled"
    except TrainingError as exc:
        return _failed(run, reporter, exc, str(exc) or type(exc).__name__, write)
    except NothingLearned as exc:
        reporter.flush()
        if write:
            runs.fail(run, str(exc))
        return "failed"
    except TrainingInputError as exc:  # settings or data: its message names ids and sizes, never note text
        # whole, as the run's last log line holds it (500 characters), so the page can translate it
        return _failed(run, reporter, exc, log_text.REFUSED % {"reason": str(exc)[:460]}, write)
    except Exception as exc:  # noqa: BLE001 - the run records it; the worker stays up
        message = log_text.UNEXPECTED % {"type": type(exc).__name__, "run": run.pk}
        return _failed(run, reporter, exc, message, write)
    finally:
        gc.collect()
    reporter.flush()
    if not write:
        return "done"
    fields.setdefault("results", {})["seconds"] = round(time.perf_counter() - started, 2)
    if not runs.finish(run, **fields):
        return "cancelled"
    reporter.log(log_text.DONE_IN % {"seconds": f"{fields['results']['seconds']:.0f}"})
    return "done"


def _failed(run, reporter, exc, message: str, write: bool) -> str:
    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("run %s failed (%s)\n%s", run.pk, type(exc).__name__, frames)  # no exception text: it may quote data
    reporter.flush()
    if write:
        runs.fail(run, message)
    return "failed"


def _record_environment(run: TrainingRun, reporter: Reporter) -> None:
    env = provenance.environment()
    history = list(run.provenance.get("attempts", [])) if run.provenance else []
    history.append({"attempt": run.attempts, "worker": run.worker, **env})
    first = history[0]
    TrainingRun.objects.filter(pk=run.pk).update(
        provenance={**first, "attempts": history}, code_version=first["code_version"][:64]
    )
    if env["code_version"] != first["code_version"]:
        reporter.log(
            log_text.OTHER_CODE % {"code": env["code_version"][:12], "first": first["code_version"][:12]},
            level="warning",
        )
    reporter.log(
        log_text.ENVIRONMENT
        % {
            "code": env["code_version"][:12],
            "torch": env["libraries"]["torch"],
            "transformers": env["libraries"]["transformers"],
            "device": env.get("device"),
        }
    )


RUNNERS = {
    RunKind.DSM: causal.run_causal,
    RunKind.CPT: causal.run_causal,
    RunKind.SFT: adaptation.run_sft,
    RunKind.HEADS: adaptation.run_heads,
    RunKind.PROMPTING: adaptation.run_prompting,
    RunKind.SELF_LEARNING: adaptation.run_self_learning,
}
