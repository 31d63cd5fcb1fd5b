"""The worker's side of a run's progress: ml.training callbacks -> a few columns and rows.

`Reporter.on_progress(event)` receives ml.training.ProgressEvent (step, total_steps, epoch,
loss, lr, tokens_per_s, eta_s, message) at every optimizer step (and status events - started,
checkpoint saved, finished - that carry no learning rate): each step becomes a RunMetric row
(the loss / lr chart), buffered and written at most every FLUSH_SECONDS together with the
run's current figures and heartbeat, in one UPDATE guarded by the attempt number (a worker that
lost the run writes nothing). Metric rows are upserted on (run, phase, step), so a step seen
again after a resume replaces its row instead of duplicating it.

`Reporter.should_stop()` reads the run's status at most every TRAINING_POLL_SECONDS: True once someone
pressed Cancel (status cancelling), or once this attempt no longer holds the run.

Messages are ids, counts and settings only; a message from ml is cut to MAX_MESSAGE characters.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.db.models.functions import Now

from webapp.lifecycle import units
from webapp.training import log_text, runs
from webapp.training.models import RunLog, RunMetric, TrainingRun

log = logging.getLogger(__name__)


FLUSH_SECONDS = 1.0
MAX_MESSAGE = 300


class Reporter:
    def __init__(self, run: TrainingRun, *, write: bool = True, clock=time.monotonic):
        self.run = run
        self.write = write  # False on the non-main ranks of a distributed launch
        self.clock = clock
        self.phase = "train"
        self._pending: list[RunMetric] = []
        self._figures: dict = {}
        self._flushed = -math.inf
        self._polled = -math.inf
        self._stop = False
        self._first_step: dict[str, int] = {}  # phase -> first step this attempt reported
        self._last_message = ""

    # ---------------------------------------------------------------- ml.training callbacks

    def on_progress(self, event) -> None:
        step = int(event.step)
        trained = event.lr is not None  # an optimizer step (status events carry no learning rate)
        if trained and self.phase not in self._first_step:
            self._first_step[self.phase] = step
            if step > 1:
                self.log(log_text.CONTINUING % {"phase": self.phase, "step": step})
        figures = {
            "step": step,
            "total_steps": max(int(event.total_steps or 0), step),
            "epoch": _num(event.epoch),
            "eta_s": _num(event.eta_s),
        }
        for key in ("loss", "lr", "tokens_per_s"):  # a status event keeps the last step's figures
            value = _num(getattr(event, key))
            if value is not None or trained:
                figures[key] = value
        self._figures.update(figures)
        message = (getattr(event, "message", "") or "")[:MAX_MESSAGE]
        if step > 0 and trained:
            self._pending.append(
                RunMetric(
                    run_id=self.run.pk,
                    phase=self.phase,
                    step=step,
                    epoch=_num(event.epoch),
                    loss=_num(event.loss),
                    lr=_num(event.lr),
                    tokens_per_s=_num(event.tokens_per_s),
                )
            )
        if message.startswith("saving a checkpoint"):
            pass  # flushed below: the rows up to this step are stored before the checkpoint is
        elif "checkpoint" in message.lower():
            self._figures["checkpoint_step"] = step
            self.log(log_text.EVENT_AT % {"phase": self.phase, "event": message, "step": step})
        elif message and message != self._last_message:  # e.g. "head <task>" once, not every epoch
            self.log(log_text.EVENT % {"phase": self.phase, "event": message})
        self._last_message = message
        final = self._figures["total_steps"] and step >= self._figures["total_steps"]
        if final or "checkpoint" in message.lower() or self.clock() - self._flushed >= FLUSH_SECONDS:
            self.flush()

    def should_stop(self) -> bool:
        if self._stop or self.clock() - self._polled < settings.TRAINING_POLL_SECONDS:
            return self._stop
        self._polled = self.clock()
        reason = runs.stop_reason(self.run, holder=self.write)  # other ranks of a distributed launch: cancel only
        self._stop = bool(reason)
        if self._stop and self.write:
            self.flush()
            self.log(log_text.STOPPING % {"reason": reason})
        return self._stop

    # ---------------------------------------------------------------- the worker's own reports

    def set_phase(self, phase: str, *, label: str = "", total_steps: int = 0) -> None:
        """Start a new phase (metric rows are keyed by phase; figures restart)."""
        self.flush()
        self.phase = phase
        self._figures = {
            "step": 0,
            "total_steps": total_steps,
            "epoch": None,
            "loss": None,
            "lr": None,
            "tokens_per_s": None,
            "eta_s": None,
        }
        self._update(phase=(label or phase)[:60], **self._figures)
        self.log(log_text.PHASE % {"phase": label or phase})

    def count(self, done: int, total: int) -> None:
        """Progress of a phase that is not an optimiser loop (features, prompting, labelling)."""
        self._figures = {"step": done, "total_steps": max(total, done)}
        if self.clock() - self._flushed >= FLUSH_SECONDS or done >= total:
            self.flush()

    def log(self, message: str, level: str = "info") -> None:
        log.info("run %s: %s", self.run.pk, message)
        if self.write:
            RunLog.objects.create(run_id=self.run.pk, level=level, message=message[:500])

    def flush(self) -> None:
        self._flushed = self.clock()
        pending, self._pending = self._pending, []
        if not self.write:
            return
        if pending:
            pending = list({(m.phase, m.step): m for m in pending}.values())  # one row per step: the last
            RunMetric.objects.bulk_create(
                pending,
                update_conflicts=True,
                unique_fields=["run", "phase", "step"],
                update_fields=["epoch", "loss", "lr", "tokens_per_s"],
            )
        self._update(**self._figures)

    def _update(self, **fields) -> None:
        if not self.write:
            return
        if not units.owned(self.run).update(heartbeat=Now(), **fields):
            self._stop = True


def _num(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
