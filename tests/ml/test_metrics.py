"""Metrics against hand-computed values."""
import math

import numpy as np
import pytest

from ml.metrics import (
    CI,
    PRF,
    aggregate_relative_change,
    bootstrap_ci,
    gold_relevance,
    gold_token_mask,
    macro_f1,
    mean_task_f1,
    peak_token_prf,
    per_task_f1,
    relative_change_on_gold,
    relevance_mass_ratio,
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
        (1.372 / 2.572) / (1.0 / 2.2) - 1)
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
