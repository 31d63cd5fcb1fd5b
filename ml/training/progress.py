"""Progress events, the result of a training run, and the meter that fills them in."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ProgressEvent:
    step: int  # optimizer steps done
    total_steps: int
    epoch: float  # fractional epochs done
    loss: float | None  # mean token loss of the last step
    lr: float | None  # learning rate used by the last step
    tokens_per_s: float | None  # non-padding tokens per second since this process (re)started
    eta_s: float | None  # seconds left at the recent pace
    message: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainResult:
    output_dir: Path
    final_dir: Path  # the trained model: a transformers folder for load_model()
    steps: int
    tokens: int  # non-padding tokens processed (all processes, all sessions)
    seconds: float  # training time, all sessions
    final_loss: float | None
    history: list[ProgressEvent] = field(default_factory=list)
    # Whether the trainable weights (full model or adapter) differ from those training began
    # with: False when every step ran at learning rate 0, and then the result is the base model.
    weights_changed: bool = True


class Meter:
    """Tokens per second and ETA over this session (a resumed run restarts the clock)."""

    def __init__(self, start_step: int):
        self.start_step = start_step
        self.started = time.perf_counter()
        self.tokens = 0

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def event(self, step: int, total: int, steps_per_epoch: int, loss, lr, message: str = "") -> ProgressEvent:
        elapsed = self.elapsed()
        done = step - self.start_step
        rate = self.tokens / elapsed if elapsed > 0 and self.tokens else None
        eta = elapsed / done * (total - step) if done > 0 else None
        return ProgressEvent(step, total, step / steps_per_epoch, loss, lr, rate, eta, message)
