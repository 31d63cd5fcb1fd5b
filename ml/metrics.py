"""Metrics: relevance localisation against annotated evidence, classification F1, and paired
comparisons of two systems on the same items (bootstrap CIs and p-values of their difference).

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


def relative_change_on_gold(
    scores_a, scores_b, offsets, gold_char_spans: Sequence[Span], *, measure: str = "score"
) -> float:
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

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    def as_dict(self) -> dict:
        return {
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
        }


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
    low, high = np.quantile(values, [alpha, 1 - alpha]) if values.size else (math.nan, math.nan)
    return CI(call(), float(low), float(high))


def _object_array(values: Sequence) -> np.ndarray:
    """1-D object array holding the values as they are (tuples stay tuples)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


# ---------------------------------------------------------------- paired comparisons


class PairedDiff(NamedTuple):
    """B minus A on the same items: `diff` on the data, the percentile CI of the differences
    over the paired resamples, the two-sided bootstrap p-value of "no difference" (see
    `paired_bootstrap`) and `n`, the number of items (pairs) behind it."""

    diff: float
    low: float
    high: float
    p_value: float
    n: int


#: Index cells drawn per block of resamples (int64: 16 MB), which bounds the memory of a bootstrap.
RESAMPLE_BLOCK = 2_000_000


def resample_indices(n: int, n_resamples: int, seed: int = 0):
    """The resamples of `bootstrap_ci` (numpy Generator seeded by `seed`, n indices with
    replacement per resample, in the same order), as blocks of rows `(m, n)`."""
    rng = np.random.default_rng(seed)
    step = max(1, RESAMPLE_BLOCK // max(n, 1))
    for start in range(0, n_resamples, step):
        yield rng.integers(0, n, size=(min(step, n_resamples - start), n))


def paired_bootstrap(
    y_true: Sequence,
    pred_a: Sequence,
    pred_b: Sequence,
    metric: Callable[..., float],
    n_resamples: int = 1000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    groups: Sequence | None = None,
    variants: bool = False,
) -> PairedDiff:
    """Paired percentile bootstrap of metric(B) - metric(A) on the same items (A: the reference).

    Each resample draws the items with replacement ONCE (the draws of `bootstrap_ci` with the
    same seed) and scores both A and B on it, so what the two share cancels out. `metric` and
    `groups` are called as `bootstrap_ci` calls them (`mean_task_f1` with `groups=tasks` is the
    Macro F1 of a run). With `variants=True`, `pred_a` and `pred_b` are each a list of
    prediction lists (prompt variants, example draws; any number each), and a side's score is
    the mean of its variants' scores on the same resample (ml.training.average_variants).

    p-value (two-sided, percentile bootstrap): p = min(1, 2 (1 + min(#{d* <= 0}, #{d* >= 0})) / (R + 1))
    over the R resample differences d*: about the smallest 1 - confidence at which the
    percentile interval would reach 0, so p < 0.05 goes with a 95% CI that excludes 0. It is
    1 when nothing differs, and at least 2 / (R + 1) (about 0.002 for R = 1000). Like any
    bootstrap it needs more than a handful of items: n items that are all better give that
    smallest p whatever n, so callers should not report CI and p for very few items.

    `macro_f1` (no groups) and `mean_task_f1` (groups) are computed for all resamples at once
    from per-class counts; any other metric is called once per resample and side.
    """
    lists_a = [list(p) for p in pred_a] if variants else [list(pred_a)]
    lists_b = [list(p) for p in pred_b] if variants else [list(pred_b)]
    n = len(y_true)
    if not lists_a or not lists_b:
        raise ValueError("no predictions (variants=True needs at least one prediction list per side)")
    if any(len(p) != n for p in lists_a + lists_b) or (groups is not None and len(groups) != n):
        raise ValueError("y_true, every prediction list (and groups) must have the same length")
    if n == 0:
        raise ValueError("cannot bootstrap an empty sample")
    _check_confidence(confidence)
    y_true, extra = list(y_true), ([] if groups is None else [list(groups)])

    def score(lists, index=None):
        pick = (lambda values: values) if index is None else (lambda values: [values[i] for i in index])
        return sum(float(metric(pick(y_true), pick(p), *map(pick, extra))) for p in lists) / len(lists)

    diff = score(lists_b) - score(lists_a)
    fast = (metric is macro_f1 and groups is None) or (metric is mean_task_f1 and groups is not None)
    if fast:
        resampled = _ResampledTaskF1(y_true, groups, lists_a + lists_b)
        k = len(lists_a)
    deltas = []
    for block in resample_indices(n, n_resamples, seed):
        if fast:
            values = resampled(block)  # (lists, m)
            deltas.append(values[k:].mean(axis=0) - values[:k].mean(axis=0))
        else:
            deltas.append(np.array([score(lists_b, row) - score(lists_a, row) for row in block.tolist()]))
    return _paired_result(diff, np.concatenate(deltas) if deltas else np.empty(0), n, confidence)


def paired_mean_bootstrap(
    values_a: Sequence[float],
    values_b: Sequence[float],
    n_resamples: int = 1000,
    seed: int = 0,
    *,
    confidence: float = 0.95,
) -> PairedDiff:
    """Paired bootstrap of mean(b - a) over pairs of per-pair values (e.g. a score of the same
    item under two models). Pairs where either value is NaN or infinite are left out first; `n`
    counts the rest. CI and p-value as `paired_bootstrap`; all NaN when no pair is left."""
    a, b = _pairs(values_a, values_b)
    keep = np.isfinite(a) & np.isfinite(b)
    return _bootstrap_of_means(b[keep] - a[keep], n_resamples, seed, confidence)


def relative_change_bootstrap(
    gold_a: Sequence[float],
    gold_b: Sequence[float],
    n_resamples: int = 1000,
    seed: int = 0,
    *,
    statistic: str = "mean",
    confidence: float = 0.95,
) -> PairedDiff:
    """A statistic of `aggregate_relative_change` with a paired bootstrap over the pairs (both
    models' gold relevance of a pair are drawn together). The pairs it leaves out (gold_a 0 or
    NaN, gold_b NaN) are left out first; `n` counts the rest. `statistic`: "mean" = mean_change
    (mean of the per-pair relative changes), "ratio_of_sums" = ratio_of_sums_change. `diff` is
    the statistic itself (+0.372 = +37.2%), the p-value tests "no change" as `paired_bootstrap`."""
    a, b = _pairs(gold_a, gold_b)
    ok = (a != 0) & np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if statistic == "mean":
        return _bootstrap_of_means((b - a) / a, n_resamples, seed, confidence)
    if statistic != "ratio_of_sums":
        raise ValueError(f"statistic must be 'mean' or 'ratio_of_sums', got {statistic!r}")
    _check_confidence(confidence)
    if not a.size or not a.sum():
        return PairedDiff(math.nan, math.nan, math.nan, math.nan, int(a.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        deltas = [
            b[block].sum(axis=1) / a[block].sum(axis=1) - 1 for block in resample_indices(a.size, n_resamples, seed)
        ]
    return _paired_result(
        float(b.sum() / a.sum() - 1), np.concatenate(deltas) if deltas else np.empty(0), int(a.size), confidence
    )


def _bootstrap_of_means(values: np.ndarray, n_resamples: int, seed: int, confidence: float) -> PairedDiff:
    _check_confidence(confidence)
    if not values.size:
        return PairedDiff(math.nan, math.nan, math.nan, math.nan, 0)
    deltas = [values[block].mean(axis=1) for block in resample_indices(values.size, n_resamples, seed)]
    return _paired_result(
        float(values.mean()), np.concatenate(deltas) if deltas else np.empty(0), int(values.size), confidence
    )


def _paired_result(diff: float, deltas: np.ndarray, n: int, confidence: float) -> PairedDiff:
    """CI and p-value (see `paired_bootstrap`) from the resample differences; NaN ones ignored."""
    deltas = deltas[np.isfinite(deltas)]
    if not deltas.size:
        return PairedDiff(float(diff), math.nan, math.nan, math.nan, n)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(deltas, [alpha, 1 - alpha])
    tail = min(int((deltas <= 0).sum()), int((deltas >= 0).sum()))
    p_value = min(1.0, 2 * (tail + 1) / (deltas.size + 1))
    return PairedDiff(float(diff), float(low), float(high), p_value, n)


def _pairs(values_a, values_b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(values_a, dtype=np.float64).ravel()
    b = np.asarray(values_b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError("values_a and values_b must have the same length")
    return a, b


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


class _ResampledTaskF1:
    """`mean_task_f1` (one task without groups: `macro_f1`) of several prediction lists on many
    resamples at once. A class is a (task, label); per resample, item multiplicities give each
    class's true, predicted and true-positive counts (np.bincount), F1 = 2 tp / (true + predicted)
    for the classes that occur (as macro_f1: labels in y_true or y_pred of the resample), averaged
    per task over them, then over the tasks drawn. Memory: a few arrays of the block's size."""

    def __init__(self, y_true: list, groups: list | None, prediction_lists: list[list]):
        tasks = groups if groups is not None else [None] * len(y_true)
        classes: dict = {}
        task_ids: dict = {}
        class_task: list[int] = []

        def code(task, label) -> int:
            key = (task, label)
            if key not in classes:
                classes[key] = len(classes)
                class_task.append(task_ids.setdefault(task, len(task_ids)))
            return classes[key]

        self.true = np.array([code(t, y) for t, y in zip(tasks, y_true)], dtype=np.int64)
        self.pred = [np.array([code(t, p) for t, p in zip(tasks, preds)], dtype=np.int64) for preds in prediction_lists]
        self.k = len(classes)
        self.hits = [np.where(self.true == pred, self.true, self.k) for pred in self.pred]  # k: not a hit
        self.onehot = np.zeros((self.k, len(task_ids)))
        self.onehot[np.arange(self.k), class_task] = 1.0

    def _counts(self, codes: np.ndarray, block: np.ndarray, bins: int) -> np.ndarray:
        m = len(block)
        flat = (codes[block] + bins * np.arange(m)[:, None]).ravel()
        return np.bincount(flat, minlength=m * bins).reshape(m, bins)[:, : self.k]

    def __call__(self, block: np.ndarray) -> np.ndarray:
        true = self._counts(self.true, block, self.k)
        out = np.empty((len(self.pred), len(block)))
        for j, (pred, hits) in enumerate(zip(self.pred, self.hits)):
            occurring = true + self._counts(pred, block, self.k)
            tp = self._counts(hits, block, self.k + 1)
            f1 = np.divide(2 * tp, occurring, out=np.zeros(occurring.shape), where=occurring > 0)
            per_task_sum = f1 @ self.onehot
            per_task_n = (occurring > 0).astype(np.float64) @ self.onehot
            drawn = per_task_n > 0
            task_f1 = np.divide(per_task_sum, per_task_n, out=np.zeros(per_task_n.shape), where=drawn)
            out[j] = task_f1.sum(axis=1) / drawn.sum(axis=1)
        return out
