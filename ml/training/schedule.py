"""How many optimizer steps a run takes, how many of them warm up, and how many can change
the model: one place for the arithmetic that the training loop uses and that the web app
checks before it launches a run (no torch here).

    total    = ceil(epochs x ceil(examples / effective_batch_size)), at least 1, capped by max_steps
    warmup   = ceil(warmup_ratio x total)
    learning = the steps whose learning rate is above 0

The schedulers are transformers' (`get_scheduler`): during warmup the rate at step k is
lr x k / warmup, so step 0 of any warmup trains at rate 0; after warmup cosine and linear
decay towards 0 but reach it only at step `total`, which never runs. "constant" ignores the
warmup. So a 1-step run with any warmup trains at rate 0 and leaves the model as it was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NO_WARMUP_SCHEDULERS = ("constant",)  # transformers' constant schedule has no warmup phase


@dataclass(frozen=True)
class StepPlan:
    total: int  # optimizer steps
    warmup: int  # of which warm up (the first one at learning rate 0)
    learning: int  # steps at a learning rate above 0: 0 means training cannot change the model


def plan_steps(config, n_examples: int) -> StepPlan:
    """The steps of a run of `config` (a CausalLMConfig) over `n_examples` encoded examples."""
    if n_examples <= 0:
        return StepPlan(0, 0, 0)
    steps_per_epoch = math.ceil(n_examples / config.effective_batch_size)
    total = max(1, math.ceil(config.epochs * steps_per_epoch))
    total = min(total, config.max_steps) if config.max_steps else total
    warmup = math.ceil(config.warmup_ratio * total)
    return StepPlan(total, warmup, learning_steps(total, warmup, config.scheduler, config.lr))


def learning_steps(total: int, warmup: int, scheduler: str, lr: float) -> int:
    """Steps 0..total-1 whose learning rate is above 0 (see the module docstring)."""
    if total <= 0 or not lr > 0:
        return 0
    return sum(1 for step in range(min(total, warmup + 1)) if lr_factor(step, total, warmup, scheduler) > 0) + max(
        0, total - warmup - 1
    )


def lr_factor(step: int, total: int, warmup: int, scheduler: str) -> float:
    """The learning rate of `step` as a fraction of the configured one (transformers' schedules)."""
    if scheduler in NO_WARMUP_SCHEDULERS:
        return 1.0
    if step < warmup:
        return step / max(1, warmup)
    if scheduler == "constant_with_warmup":
        return 1.0
    progress = (step - warmup) / max(1, total - warmup)
    if scheduler == "linear":
        return max(0.0, 1.0 - progress)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))  # cosine
