"""Metrics: relevance localisation against annotated evidence, and classification F1.

Gold evidence is given as character spans of the note; a token is a GOLD TOKEN when its
character span `[start, end)` overlaps a gold span (shares at least one character; tokens of
zero width never do).

Undefined values are NaN, never an exception, so that one odd pair does not stop an
evaluation over thousands; aggregates skip NaN and report how many there were.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

Span = tuple[int, int]


def gold_token_mask(offsets, gold_char_spans: Sequence[Span]) -> np.ndarray:
    """Boolean per token: does its character span overlap a gold span?"""
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    starts, ends = off[:, 0], off[:, 1]
    mask = np.zeros(len(off), bool)
    for a, b in gold_char_spans:
        mask |= (starts < b) & (ends > a) & (ends > starts)
    return mask


def _scores(scores, n_tokens: int) -> np.ndarray:
    x = np.asarray(scores, dtype=np.float64)
    if x.shape != (n_tokens,):
        raise ValueError(f"{x.size} scores for {n_tokens} tokens")
    if (x < 0).any():
        raise ValueError("relevance mass needs non-negative scores (use the normalised |r| / max|r| scores)")
    return x


# ---------------------------------------------------------------- localisation


def relevance_mass_ratio(scores, offsets, gold_char_spans: Sequence[Span]) -> float:
    """(share of the note's relevance on gold tokens) / (share of the note's tokens that are
    gold). 1.0 = no better than uniform; > 1 = relevance concentrates on the evidence (the
    paper's Appendix A measure). NaN when undefined: no tokens, no gold token, or zero total
    relevance. Scores must be non-negative (ValueError otherwise)."""
    gold = gold_token_mask(offsets, gold_char_spans)
    x = _scores(scores, len(gold))
    total, n_gold = x.sum(), int(gold.sum())
    if n_gold == 0 or total == 0:
        return math.nan
    return float((x[gold].sum() / total) / (n_gold / len(gold)))


def gold_relevance(scores, offsets, gold_char_spans: Sequence[Span], *, measure: str = "score") -> float:
    """Relevance on the gold tokens of one note: `score` = sum of the (normalised) scores on
    gold tokens; `share` = that sum divided by the note's total (NaN if the total is 0)."""
    gold = gold_token_mask(offsets, gold_char_spans)
    x = _scores(scores, len(gold))
    on_gold = float(x[gold].sum())
    if measure == "score":
        return on_gold
    if measure == "share":
        total = float(x.sum())
        return on_gold / total if total else math.nan
    raise ValueError(f"measure must be 'score' or 'share', got {measure!r}")


def relative_change_on_gold(scores_a, scores_b, offsets, gold_char_spans: Sequence[Span], *,
                            measure: str = "score") -> float:
    """(gold_b - gold_a) / gold_a for the same note and task under model A (e.g. base) and
    model B (e.g. DSM): +0.372 is the paper's +37.2%. NaN if A has no relevance on gold."""
    a = gold_relevance(scores_a, offsets, gold_char_spans, measure=measure)
    b = gold_relevance(scores_b, offsets, gold_char_spans, measure=measure)
    if not a or math.isnan(a) or math.isnan(b):
        return math.nan
    return (b - a) / a


def aggregate_relative_change(gold_a: Sequence[float], gold_b: Sequence[float]) -> dict:
    """Aggregate over pairs of per-pair gold relevances (`gold_relevance` of A and of B):
    `mean_change` = mean of the per-pair relative changes (pairs with gold_a == 0 or NaN are
    skipped and counted in `n_undefined`); `ratio_of_sums_change` = sum(b) / sum(a) - 1 over the
    defined pairs, which weighs pairs by their relevance and is less driven by tiny gold_a."""
    a = np.asarray(gold_a, dtype=np.float64)
    b = np.asarray(gold_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("gold_a and gold_b must have the same length")
    ok = (a != 0) & np.isfinite(a) & np.isfinite(b)
    n = int(ok.sum())
    return {
        "n_pairs": n,
        "n_undefined": int(a.size - n),
        "mean_change": float(((b[ok] - a[ok]) / a[ok]).mean()) if n else math.nan,
        "ratio_of_sums_change": float(b[ok].sum() / a[ok].sum() - 1) if n and a[ok].sum() else math.nan,
    }


@dataclass(frozen=True)
class PRF:
    """Token counts of one or many comparisons, and their precision / recall / F1 (0.0 when
    the denominator is 0, as scikit-learn's default)."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: "PRF") -> "PRF":
        return PRF(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def as_dict(self) -> dict:
        return {"tp": self.tp, "fp": self.fp, "fn": self.fn, "precision": self.precision,
                "recall": self.recall, "f1": self.f1}


def peak_token_prf(peaks: Sequence[Span], offsets, gold_char_spans: Sequence[Span]) -> PRF:
    """Tokens inside peaks (token spans) against gold tokens of one note. Sum the PRFs of many
    notes (`sum(prfs, PRF(0, 0, 0))`) for micro-averaged scores."""
    gold = gold_token_mask(offsets, gold_char_spans)
    predicted = np.zeros(len(gold), bool)
    for s, e in peaks:
        predicted[s:e] = True
    return PRF(int((predicted & gold).sum()), int((predicted & ~gold).sum()), int((~predicted & gold).sum()))


# ---------------------------------------------------------------- classification


def macro_f1(y_true: Sequence, y_pred: Sequence, labels: Sequence | None = None) -> float:
    """Unweighted mean of per-class F1 over `labels` (default: every label in y_true or y_pred,
    as scikit-learn). A class never predicted and never true is not counted; F1 is 0 for a
    class with no true positive."""
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"{len(y_true)} true labels but {len(y_pred)} predictions")
    if labels is None:
        labels = sorted(set(y_true) | set(y_pred), key=repr)
    if not labels:
        return math.nan
    pairs, true_counts, pred_counts = Counter(zip(y_true, y_pred)), Counter(y_true), Counter(y_pred)
    scores = []
    for label in labels:
        tp = pairs[(label, label)]
        scores.append(PRF(tp, pred_counts[label] - tp, true_counts[label] - tp).f1)
    return sum(scores) / len(scores)


def per_task_f1(y_true: Sequence, y_pred: Sequence, tasks: Sequence) -> dict:
    """Macro F1 within each task (its own label set): {task: F1}, tasks in sorted order.
    (Argument order as `bootstrap_ci(..., groups=tasks)` calls a metric.)"""
    if not len(tasks) == len(y_true) == len(y_pred):
        raise ValueError("tasks, y_true and y_pred must have the same length")
    by_task: dict = {}
    for task, t, p in zip(tasks, y_true, y_pred):
        by_task.setdefault(task, ([], []))
        by_task[task][0].append(t)
        by_task[task][1].append(p)
    return {task: macro_f1(*by_task[task]) for task in sorted(by_task, key=repr)}


def mean_task_f1(y_true: Sequence, y_pred: Sequence, tasks: Sequence) -> float:
    """Mean over tasks of each task's macro F1 (every task weighs the same)."""
    values = list(per_task_f1(y_true, y_pred, tasks).values())
    return sum(values) / len(values) if values else math.nan


class CI(NamedTuple):
    estimate: float
    low: float
    high: float


def bootstrap_ci(
    y_true: Sequence,
    y_pred: Sequence,
    metric: Callable[..., float],
    n_resamples: int = 1000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    groups: Sequence | None = None,
) -> CI:
    """Percentile bootstrap: `metric` on the data, and the (1-confidence)/2 and
    (1+confidence)/2 quantiles of `metric` on `n_resamples` resamples of the examples (drawn
    with replacement, numpy Generator seeded by `seed`). With `groups` (e.g. each example's
    task) the metric is called `metric(y_true, y_pred, groups)` on the same resample. NaN
    resample values (a metric undefined on a resample) are ignored."""
    n = len(y_true)
    if n != len(y_pred) or (groups is not None and len(groups) != n):
        raise ValueError("y_true, y_pred (and groups) must have the same length")
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    arrays = [_object_array(y_true), _object_array(y_pred)]
    if groups is not None:
        arrays.append(_object_array(groups))

    def call(index=None):
        chosen = [a if index is None else a[index] for a in arrays]
        return float(metric(*(c.tolist() for c in chosen)))

    rng = np.random.default_rng(seed)
    values = np.array([call(rng.integers(0, n, size=n)) for _ in range(n_resamples)])
    values = values[~np.isnan(values)]
    alpha = (1 - confidence) / 2
    low, high = (np.quantile(values, [alpha, 1 - alpha]) if values.size else (math.nan, math.nan))
    return CI(call(), float(low), float(high))


def _object_array(values: Sequence) -> np.ndarray:
    """1-D object array holding the values as they are (tuples stay tuples)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out
