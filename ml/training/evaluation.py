"""Classification scores (docs/METHOD.md, section Evaluation).

- Per-task F1: macro F1 over the task's options that occur in its gold labels or its
  predictions (ml.metrics.macro_f1's default; an option neither true nor predicted in the
  test set is not counted, as scikit-learn does).
- Macro F1: the unweighted mean of the per-task F1s (every task weighs the same).
- 95% CI: percentile bootstrap over ITEMS (ml.metrics.bootstrap_ci, seeded): each resample
  redraws items with replacement and recomputes the mean of per-task F1s over the tasks it
  contains.
- Held-out tasks (`held_out`): the headline figures use the other tasks; the held-out tasks
  get the same figures in `EvalResult.held_out`. `per_task` lists every task.
- Prompting: `average_variants` = mean over variants of each variant's Macro F1, with a CI
  from the same item resamples applied to all variants.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ml.metrics import bootstrap_ci, mean_task_f1, per_task_f1
from ml.training import refusals
from ml.training.data import LabeledItem
from ml.training.errors import TrainingInputError


@dataclass
class EvalResult:
    macro_f1: float
    ci_low: float
    ci_high: float
    per_task: dict[str, float]
    n_items: int
    n_tasks: int
    confidence: float = 0.95
    n_resamples: int = 1000
    seed: int = 0
    held_out: EvalResult | None = None
    variants: list[float] | None = None  # per-variant Macro F1 (average_variants only)
    tasks: list[str] = field(default_factory=list)  # the tasks behind macro_f1

    def to_dict(self) -> dict:
        """JSON-able (NaN becomes None)."""
        return {
            "macro_f1": _num(self.macro_f1),
            "ci_low": _num(self.ci_low),
            "ci_high": _num(self.ci_high),
            "per_task": {t: _num(v) for t, v in self.per_task.items()},
            "n_items": self.n_items,
            "n_tasks": self.n_tasks,
            "confidence": self.confidence,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "tasks": list(self.tasks),
            "held_out": self.held_out.to_dict() if self.held_out is not None else None,
            "variants": [_num(v) for v in self.variants] if self.variants is not None else None,
        }


def evaluate(
    items: Sequence[LabeledItem],
    predictions: Sequence[str],
    *,
    held_out: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> EvalResult:
    """Scores of one prediction list against the items' gold labels (see module doc)."""
    return _evaluate(items, [(p,) for p in _checked(items, predictions)], held_out, n_resamples, seed, confidence)


def average_variants(
    items: Sequence[LabeledItem],
    variant_predictions: Sequence[Sequence[str]],
    *,
    held_out: set[str] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> EvalResult:
    """Mean over variants (prompt variants, example draws) of their Macro F1 (see module doc)."""
    if not variant_predictions:
        raise TrainingInputError(refusals.NO_VARIANTS)
    columns = [_checked(items, predictions) for predictions in variant_predictions]
    return _evaluate(items, list(zip(*columns)), held_out, n_resamples, seed, confidence)


def _evaluate(items, predictions, held_out, n_resamples, seed, confidence) -> EvalResult:
    held_out = set(held_out or ())
    main = [i for i, item in enumerate(items) if item.task not in held_out]
    extra = [i for i, item in enumerate(items) if item.task in held_out]
    result = _scores(items, predictions, main, n_resamples, seed, confidence)
    if held_out:
        result.held_out = _scores(items, predictions, extra, n_resamples, seed, confidence)
        result.per_task = dict(sorted({**result.per_task, **result.held_out.per_task}.items()))
    return result


def _scores(items, predictions, rows, n_resamples, seed, confidence) -> EvalResult:
    n_variants = len(predictions[0]) if predictions else 1
    if not rows:
        nan = math.nan
        return EvalResult(
            nan,
            nan,
            nan,
            {},
            0,
            0,
            confidence,
            n_resamples,
            seed,
            variants=[nan] * n_variants if n_variants > 1 else None,
        )
    gold = [items[i].label for i in rows]
    tasks = [items[i].task for i in rows]
    preds = [predictions[i] for i in rows]

    def metric(y_true, y_pred, groups):
        return sum(mean_task_f1(y_true, [p[v] for p in y_pred], groups) for v in range(n_variants)) / n_variants

    ci = bootstrap_ci(gold, preds, metric, n_resamples=n_resamples, seed=seed, confidence=confidence, groups=tasks)
    per_variant = [per_task_f1(gold, [p[v] for p in preds], tasks) for v in range(n_variants)]
    per_task = {t: sum(pv[t] for pv in per_variant) / n_variants for t in per_variant[0]}
    variants = [sum(pv.values()) / len(pv) for pv in per_variant] if n_variants > 1 else None
    return EvalResult(
        ci.estimate,
        ci.low,
        ci.high,
        per_task,
        len(rows),
        len(per_task),
        confidence,
        n_resamples,
        seed,
        variants=variants,
        tasks=sorted(per_task),
    )


def _checked(items, predictions) -> list[str]:
    predictions = list(predictions)
    if len(predictions) != len(items):
        raise TrainingInputError(refusals.PREDICTION_COUNT, predictions=len(predictions), items=len(items))
    unlabeled = [item.item_id for item in items if item.label is None]
    if unlabeled:
        raise TrainingInputError(refusals.NO_GOLD, count=len(unlabeled), item=repr(unlabeled[0]))
    return predictions


def _num(value):
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
