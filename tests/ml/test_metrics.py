"""Metrics against hand-computed values."""

import math

import numpy as np
import pytest

from ml.metrics import (
    CI,
    PRF,
    PairedDiff,
    aggregate_relative_change,
    bootstrap_ci,
    gold_relevance,
    gold_token_mask,
    macro_f1,
    mean_task_f1,
    paired_bootstrap,
    paired_mean_bootstrap,
    peak_token_prf,
    per_task_f1,
    relative_change_bootstrap,
    relative_change_on_gold,
    relevance_mass_ratio,
    resample_indices,
)

# four tokens: "HR" " is" " 120" " bpm" in "HR is 120 bpm"
OFFSETS = [(0, 2), (2, 5), (5, 9), (9, 13)]
GOLD = [(6, 13)]  # "120 bpm": tokens 2 and 3


def test_gold_tokens_are_those_overlapping_a_gold_span():
    assert gold_token_mask(OFFSETS, GOLD).tolist() == [False, False, True, True]
    assert gold_token_mask(OFFSETS, [(5, 6)]).tolist() == [False, False, True, False]
    assert gold_token_mask(OFFSETS, [(2, 2)]).tolist() == [False] * 4  # touching is not overlapping
    assert gold_token_mask([(0, 0), (0, 3)], [(0, 3)]).tolist() == [False, True]  # zero-width token


def test_mass_ratio_is_the_gold_share_of_relevance_over_the_gold_share_of_tokens():
    # relevance share on gold = (0.5 + 0.25) / 1.5 = 0.5; token share = 2 / 4 = 0.5 -> 1.0
    assert relevance_mass_ratio([0.5, 0.25, 0.5, 0.25], OFFSETS, GOLD) == pytest.approx(1.0)
    # (3 / 4) / (1 / 4) = 3
    assert relevance_mass_ratio([0, 0, 3, 1], OFFSETS, [(5, 9)]) == pytest.approx(3.0)
    # (1 / 1) / (2 / 4) = 2: all relevance on the gold tokens
    assert relevance_mass_ratio([0, 0, 1, 1], OFFSETS, GOLD) == pytest.approx(2.0)


def test_mass_ratio_is_nan_when_undefined():
    assert math.isnan(relevance_mass_ratio([1, 1, 1, 1], OFFSETS, []))
    assert math.isnan(relevance_mass_ratio([0, 0, 0, 0], OFFSETS, GOLD))
    assert math.isnan(relevance_mass_ratio([], [], GOLD))


def test_mass_ratio_refuses_negative_scores_and_wrong_lengths():
    with pytest.raises(ValueError, match="non-negative"):
        relevance_mass_ratio([1, -1, 1, 1], OFFSETS, GOLD)
    with pytest.raises(ValueError, match="3 scores for 4 tokens"):
        relevance_mass_ratio([1, 1, 1], OFFSETS, GOLD)


def test_peak_prf_counts_tokens():
    # peaks cover tokens 1, 2; gold tokens 2, 3 -> tp 1, fp 1, fn 1
    prf = peak_token_prf([(1, 3)], OFFSETS, GOLD)
    assert prf == PRF(1, 1, 1)
    assert (prf.precision, prf.recall, prf.f1) == (0.5, 0.5, 0.5)


def test_peak_prf_without_peaks_is_zero_not_an_error():
    prf = peak_token_prf([], OFFSETS, GOLD)
    assert prf == PRF(0, 0, 2) and (prf.precision, prf.recall, prf.f1) == (0.0, 0.0, 0.0)


def test_prfs_add_up_to_a_micro_average():
    total = sum([PRF(1, 1, 1), PRF(3, 0, 1)], PRF(0, 0, 0))
    assert total == PRF(4, 1, 2)
    assert total.precision == pytest.approx(0.8) and total.recall == pytest.approx(4 / 6)
    assert total.f1 == pytest.approx(2 * 0.8 * (4 / 6) / (0.8 + 4 / 6))
    assert total.as_dict()["tp"] == 4


def test_relative_change_on_gold():
    # gold tokens 2, 3: A has 0.5 + 0.5 = 1.0, B has 0.7 + 0.672 = 1.372 -> +37.2%
    a, b = [1, 0.2, 0.5, 0.5], [1, 0.2, 0.7, 0.672]
    assert relative_change_on_gold(a, b, OFFSETS, GOLD) == pytest.approx(0.372)
    # as shares: A 1.0 / 2.2, B 1.372 / 2.572
    assert relative_change_on_gold(a, b, OFFSETS, GOLD, measure="share") == pytest.approx(
        (1.372 / 2.572) / (1.0 / 2.2) - 1
    )
    assert gold_relevance(a, OFFSETS, GOLD) == pytest.approx(1.0)


def test_relative_change_is_nan_without_relevance_on_gold_in_a():
    assert math.isnan(relative_change_on_gold([1, 1, 0, 0], [1, 1, 1, 1], OFFSETS, GOLD))
    with pytest.raises(ValueError):
        gold_relevance([1, 1, 1, 1], OFFSETS, GOLD, measure="mass")


def test_aggregate_relative_change():
    result = aggregate_relative_change([1.0, 2.0, 0.0], [2.0, 2.0, 5.0])
    # per pair: +100%, 0%, undefined -> mean 0.5; ratio of sums (2 + 2) / (1 + 2) - 1
    assert result["n_pairs"] == 2 and result["n_undefined"] == 1
    assert result["mean_change"] == pytest.approx(0.5)
    assert result["ratio_of_sums_change"] == pytest.approx(1 / 3)
    assert math.isnan(aggregate_relative_change([0.0], [1.0])["mean_change"])


def test_macro_f1_hand_computed():
    # a: tp 1 fp 0 fn 1 -> F1 2/3; b: tp 2 fp 1 fn 0 -> P 2/3 R 1 F1 0.8
    assert macro_f1(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == pytest.approx((2 / 3 + 0.8) / 2)
    # a label only predicted counts with F1 0
    assert macro_f1(["a", "a"], ["a", "c"]) == pytest.approx((2 / 3 + 0) / 2)
    assert macro_f1(["a", "a"], ["a", "c"], labels=["a"]) == pytest.approx(2 / 3)
    assert macro_f1([1, 0, 1], [1, 0, 1]) == 1.0
    with pytest.raises(ValueError):
        macro_f1(["a"], [])


def test_per_task_f1_and_their_mean():
    tasks = ["hr", "hr", "hr", "hr", "pm", "pm"]
    y_true = ["a", "a", "b", "b", "yes", "no"]
    y_pred = ["a", "b", "b", "b", "yes", "yes"]
    # pm: yes tp 1 fp 1 fn 0 -> 2/3; no tp 0 fn 1 -> 0 -> 1/3
    expected = {"hr": (2 / 3 + 0.8) / 2, "pm": 1 / 3}
    assert per_task_f1(y_true, y_pred, tasks) == pytest.approx(expected)
    assert mean_task_f1(y_true, y_pred, tasks) == pytest.approx(sum(expected.values()) / 2)


def test_bootstrap_of_perfect_predictions_is_a_point():
    assert bootstrap_ci(["a", "b", "a"], ["a", "b", "a"], macro_f1, n_resamples=50) == CI(1.0, 1.0, 1.0)


def test_bootstrap_is_the_percentile_interval_of_seeded_resamples():
    rng = np.random.default_rng(5)
    y_true = rng.integers(0, 3, 60).tolist()
    y_pred = [t if rng.random() < 0.6 else int(rng.integers(0, 3)) for t in y_true]
    ci = bootstrap_ci(y_true, y_pred, macro_f1, n_resamples=200, seed=11)
    # the same computation by hand
    draw = np.random.default_rng(11)
    values = []
    for _ in range(200):
        index = draw.integers(0, 60, size=60)
        values.append(macro_f1([y_true[i] for i in index], [y_pred[i] for i in index]))
    low, high = np.quantile(values, [0.025, 0.975])
    assert ci == (pytest.approx(macro_f1(y_true, y_pred)), pytest.approx(low), pytest.approx(high))
    assert ci.low < ci.estimate < ci.high
    assert bootstrap_ci(y_true, y_pred, macro_f1, n_resamples=200, seed=11) == ci


def test_bootstrap_with_groups_passes_them_to_the_metric():
    tasks = ["hr", "hr", "pm", "pm"]
    ci = bootstrap_ci(["a", "b", "y", "n"], ["a", "b", "y", "n"], mean_task_f1, n_resamples=20, groups=tasks)
    assert ci == CI(1.0, 1.0, 1.0)
    # one task right, one wrong: resamples range from 0 (only pm drawn) to 1 (only hr drawn)
    ci = bootstrap_ci(["a", "b", "y", "n"], ["a", "b", "n", "y"], mean_task_f1, n_resamples=200, groups=tasks)
    assert ci.estimate == 0.5 and ci.low == 0.0 and ci.high == 1.0


def test_bootstrap_keeps_tuple_labels_whole():
    labels = [("hr", "a"), ("hr", "b"), ("pm", "y")]
    assert bootstrap_ci(labels, labels, macro_f1, n_resamples=10).estimate == 1.0


def test_bootstrap_refuses_bad_input():
    with pytest.raises(ValueError):
        bootstrap_ci([], [], macro_f1)
    with pytest.raises(ValueError):
        bootstrap_ci(["a"], ["a", "b"], macro_f1)
    with pytest.raises(ValueError):
        bootstrap_ci(["a"], ["a"], macro_f1, confidence=1.5)


# ---------------------------------------------------------------- paired comparisons


def _labelled(seed, n=120, n_tasks=4, accuracy=(0.6, 0.7)):
    """Random items of a few tasks with labels 0-2, and two prediction lists of given accuracy."""
    rng = np.random.default_rng(seed)
    tasks = [f"t{int(t)}" for t in rng.integers(0, n_tasks, n)]
    y_true = rng.integers(0, 3, n).tolist()
    preds = [[t if rng.random() < acc else int(rng.integers(0, 4)) for t in y_true] for acc in accuracy]
    return y_true, preds[0], preds[1], tasks


def _loop_paired(y_true, pred_a, pred_b, metric, tasks, n_resamples, seed, confidence=0.95):
    """The paired percentile bootstrap written out plainly, one resample at a time."""
    args = (lambda idx: [tasks[i] for i in idx]) if tasks is not None else (lambda idx: None)

    def score(pred, idx):
        extra = args(idx)
        chosen = ([y_true[i] for i in idx], [pred[i] for i in idx])
        return metric(*chosen, extra) if extra is not None else metric(*chosen)

    everything = range(len(y_true))
    draw = np.random.default_rng(seed)
    deltas = []
    for _ in range(n_resamples):
        idx = draw.integers(0, len(y_true), size=len(y_true))
        deltas.append(score(pred_b, idx) - score(pred_a, idx))
    deltas = np.array(deltas)
    low, high = np.quantile(deltas, [(1 - confidence) / 2, (1 + confidence) / 2])
    tail = min((deltas <= 0).sum(), (deltas >= 0).sum())
    p_value = min(1.0, 2 * (tail + 1) / (n_resamples + 1))
    return score(pred_b, everything) - score(pred_a, everything), low, high, p_value


def test_identical_predictions_differ_by_nothing_with_p_one():
    y_true, pred, _, tasks = _labelled(1)
    assert paired_bootstrap(y_true, pred, pred, mean_task_f1, 200, groups=tasks) == PairedDiff(0.0, 0.0, 0.0, 1.0, 120)
    assert paired_bootstrap(y_true, pred, list(pred), macro_f1, 200) == PairedDiff(0.0, 0.0, 0.0, 1.0, 120)
    # the same through the per-resample path of any other metric
    assert paired_bootstrap(y_true, pred, pred, lambda t, p: macro_f1(t, p), 50) == PairedDiff(0.0, 0.0, 0.0, 1.0, 120)


def test_a_run_right_on_every_item_beats_one_always_wrong():
    y_true = ["a", "b"] * 20
    wrong = ["b", "a"] * 20
    result = paired_bootstrap(y_true, wrong, y_true, macro_f1, 999)
    # F1 1 against 0 on every resample: the CI is the point 1 and p is the smallest possible, 2 / (999 + 1)
    assert result == PairedDiff(1.0, 1.0, 1.0, pytest.approx(0.002), 40)
    swapped = paired_bootstrap(y_true, y_true, wrong, macro_f1, 999)
    assert (swapped.diff, swapped.low, swapped.high, swapped.p_value) == (-1.0, -1.0, -1.0, pytest.approx(0.002))


def test_a_run_better_on_some_items_and_never_worse_has_a_positive_ci_and_small_p():
    y_true, pred_a, _, tasks = _labelled(2, n=300)
    pred_b = [t if i % 3 == 0 else p for i, (t, p) in enumerate(zip(y_true, pred_a))]  # fixes a third of A's errors
    result = paired_bootstrap(y_true, pred_a, pred_b, mean_task_f1, 500, groups=tasks)
    assert result.diff > 0 and 0 < result.low < result.diff < result.high and result.p_value < 0.01


@pytest.mark.parametrize("metric,grouped", [(mean_task_f1, True), (macro_f1, False)])
def test_the_paired_ci_and_p_value_equal_a_plain_loop(metric, grouped):
    y_true, pred_a, pred_b, tasks = _labelled(3)
    result = paired_bootstrap(y_true, pred_a, pred_b, metric, 300, seed=7, groups=tasks if grouped else None)
    diff, low, high, p = _loop_paired(y_true, pred_a, pred_b, metric, tasks if grouped else None, 300, 7)
    assert result.diff == pytest.approx(diff, abs=1e-12)
    assert (result.low, result.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert result.p_value == pytest.approx(p) and 0.02 < result.p_value < 1 and result.n == 120
    assert result.low < result.diff < result.high


def test_the_counting_shortcut_equals_calling_the_metric_on_every_resample():
    # string and tuple labels, a label only ever predicted, a task with one item
    rng = np.random.default_rng(4)
    tasks = ["hr"] * 30 + ["pm"] * 25 + ["solo"]
    y_true = (
        [("hr", str(int(x))) for x in rng.integers(0, 3, 30)] + [str(x) for x in rng.choice(["y", "n"], 25)] + ["z"]
    )
    pred_a = [y if rng.random() < 0.5 else ("hr", "never-true") for y in y_true[:30]] + ["y"] * 25 + ["z"]
    pred_b = [y if rng.random() < 0.7 else ("hr", "0") for y in y_true[:30]] + list(y_true[30:55]) + ["w"]
    slow = paired_bootstrap(y_true, pred_a, pred_b, lambda t, p, g: mean_task_f1(t, p, g), 400, seed=3, groups=tasks)
    fast = paired_bootstrap(y_true, pred_a, pred_b, mean_task_f1, 400, seed=3, groups=tasks)
    assert fast == pytest.approx(slow, abs=1e-12)


def test_the_resamples_are_those_of_bootstrap_ci():
    # A predicts a label that is never true: its F1 is 0 on every resample, so the differences
    # are B's own resample scores, and their interval is bootstrap_ci's for B with the same seed.
    y_true, _, pred_b, tasks = _labelled(5)
    nothing = ["never"] * len(y_true)
    paired = paired_bootstrap(y_true, nothing, pred_b, mean_task_f1, 250, seed=9, groups=tasks)
    alone = bootstrap_ci(y_true, pred_b, mean_task_f1, 250, seed=9, groups=tasks)
    assert (paired.diff, paired.low, paired.high) == pytest.approx(tuple(alone), abs=1e-12)
    blocks = list(resample_indices(7, 10, seed=2))
    draw = np.random.default_rng(2)
    assert np.array_equal(np.concatenate(blocks), [draw.integers(0, 7, size=7) for _ in range(10)])


def test_resamples_come_in_blocks_that_bound_memory(monkeypatch):
    import ml.metrics as metrics

    monkeypatch.setattr(metrics, "RESAMPLE_BLOCK", 50)
    blocks = list(resample_indices(20, 7, seed=1))
    assert [b.shape for b in blocks] == [(2, 20)] * 3 + [(1, 20)]
    y_true, pred_a, pred_b, tasks = _labelled(6, n=20)
    small = paired_bootstrap(y_true, pred_a, pred_b, mean_task_f1, 7, seed=1, groups=tasks)
    monkeypatch.setattr(metrics, "RESAMPLE_BLOCK", 2_000_000)
    assert paired_bootstrap(y_true, pred_a, pred_b, mean_task_f1, 7, seed=1, groups=tasks) == small


def test_variants_are_averaged_on_the_same_resample():
    y_true, pred_a, pred_b, tasks = _labelled(8)
    _, pred_c, _, _ = _labelled(9)
    result = paired_bootstrap(
        y_true, [pred_a], [pred_b, pred_c], mean_task_f1, 200, seed=4, groups=tasks, variants=True
    )
    draw = np.random.default_rng(4)
    deltas = []
    for _ in range(200):
        idx = draw.integers(0, 120, size=120)

        def f1(pred, idx=idx):
            return mean_task_f1([y_true[i] for i in idx], [pred[i] for i in idx], [tasks[i] for i in idx])

        deltas.append((f1(pred_b) + f1(pred_c)) / 2 - f1(pred_a))
    expected = (mean_task_f1(y_true, pred_b, tasks) + mean_task_f1(y_true, pred_c, tasks)) / 2 - mean_task_f1(
        y_true, pred_a, tasks
    )
    assert result.diff == pytest.approx(expected)
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(deltas, [0.025, 0.975])), abs=1e-12)


def test_paired_bootstrap_refuses_bad_input():
    with pytest.raises(ValueError):
        paired_bootstrap([], [], [], macro_f1)
    with pytest.raises(ValueError):
        paired_bootstrap(["a"], ["a"], ["a", "b"], macro_f1)
    with pytest.raises(ValueError):
        paired_bootstrap(["a"], ["a"], ["a"], mean_task_f1, groups=["t", "u"])
    with pytest.raises(ValueError):
        paired_bootstrap(["a"], [], [["a"]], macro_f1, variants=True)
    with pytest.raises(ValueError):
        paired_bootstrap(["a"], ["a"], ["a"], macro_f1, confidence=0)


def test_paired_mean_difference_equals_a_plain_loop_and_skips_undefined_pairs():
    rng = np.random.default_rng(10)
    a = rng.normal(1.0, 1.0, 80)
    b = a + rng.normal(0.2, 1.0, 80)
    result = paired_mean_bootstrap(np.append(a, np.nan), np.append(b, 3.0), 400, seed=5)
    draw = np.random.default_rng(5)
    means = [(b - a)[draw.integers(0, 80, size=80)].mean() for _ in range(400)]
    assert result.n == 80 and result.diff == pytest.approx((b - a).mean())
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    tail = min(sum(m <= 0 for m in means), sum(m >= 0 for m in means))
    assert result.p_value == pytest.approx(min(1, 2 * (tail + 1) / 401))
    assert paired_mean_bootstrap([1.0, 2.0], [1.0, 2.0]) == PairedDiff(0.0, 0.0, 0.0, 1.0, 2)
    assert math.isnan(paired_mean_bootstrap([np.nan], [1.0]).diff)


def test_paired_mean_difference_agrees_with_the_paired_t_test_on_normal_data():
    from scipy import stats

    rng = np.random.default_rng(11)
    a = rng.normal(0.0, 1.0, 2000)
    b = a + rng.normal(0.03, 1.0, 2000)
    result = paired_mean_bootstrap(a, b, 4000, seed=1)
    t_test = stats.ttest_rel(b, a)
    interval = t_test.confidence_interval(0.95)
    half = (interval.high - interval.low) / 2
    # the bootstrap's Monte Carlo error is a few percent of the interval's width
    assert result.low == pytest.approx(interval.low, abs=0.05 * half)
    assert result.high == pytest.approx(interval.high, abs=0.05 * half)
    assert 0.01 < t_test.pvalue < 0.2 and result.p_value == pytest.approx(t_test.pvalue, rel=0.25)
    assert result.low > 0 and result.p_value < 0.05  # the p-value goes with the interval


def test_relative_change_bootstrap_matches_the_aggregate_and_a_plain_loop():
    rng = np.random.default_rng(12)
    gold_a = np.append(rng.uniform(0.5, 2.0, 60), [0.0, np.nan])
    gold_b = np.append(gold_a[:60] * rng.uniform(0.8, 1.8, 60), [1.0, 1.0])
    aggregate = aggregate_relative_change(gold_a, gold_b)
    mean = relative_change_bootstrap(gold_a, gold_b, 300, seed=2)
    ratio = relative_change_bootstrap(gold_a, gold_b, 300, seed=2, statistic="ratio_of_sums")
    assert mean.n == ratio.n == aggregate["n_pairs"] == 60
    assert mean.diff == pytest.approx(aggregate["mean_change"])
    assert ratio.diff == pytest.approx(aggregate["ratio_of_sums_change"])
    a, b = gold_a[:60], gold_b[:60]
    draw = np.random.default_rng(2)
    means, ratios = [], []
    for _ in range(300):
        idx = draw.integers(0, 60, size=60)
        means.append(((b[idx] - a[idx]) / a[idx]).mean())
        ratios.append(b[idx].sum() / a[idx].sum() - 1)
    assert (mean.low, mean.high) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    assert (ratio.low, ratio.high) == pytest.approx(tuple(np.quantile(ratios, [0.025, 0.975])), abs=1e-12)
    assert mean.low > 0 and mean.p_value == pytest.approx(2 / 301)  # B above A on every pair


def test_relative_change_bootstrap_without_change_or_pairs():
    assert relative_change_bootstrap([1.0, 2.0], [1.0, 2.0]) == PairedDiff(0.0, 0.0, 0.0, 1.0, 2)
    empty = relative_change_bootstrap([0.0], [1.0])
    assert empty.n == 0 and all(math.isnan(v) for v in empty[:4])
    with pytest.raises(ValueError, match="statistic"):
        relative_change_bootstrap([1.0], [1.0], statistic="median")
