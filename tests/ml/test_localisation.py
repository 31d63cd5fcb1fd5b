"""ml.localisation: token AUC, per-pair scores, bootstrap summaries, baselines, the recommendation."""

import math
import re

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from ml.localisation import (
    MIN_PAIRS,
    Evaluation,
    Pair,
    PairScores,
    baseline_pairs,
    label,
    peak_rule,
    random_scores,
    recommend,
    score_pairs,
    summarise,
    token_auc,
)
from ml.metrics import PRF

# "HR is 120 bpm": tokens "HR" " is" " 120" " bpm"; gold "120 bpm" = tokens 2 and 3
TEXT = "HR is 120 bpm"
OFFSETS = np.array([(0, 2), (2, 5), (5, 9), (9, 13)])
GOLD = [(6, 13)]


def given_peaks(*spans_per_item):
    """A peak rule that returns fixed token spans, item by item."""
    return lambda items: [list(spans_per_item[i]) for i in range(len(items))]


def no_peaks(items):
    return [[] for _ in items]


def pair(note_id, scores, gold=GOLD, text=TEXT, offsets=OFFSETS, task="heart rate"):
    return Pair(note_id, task, text, offsets, np.asarray(scores, dtype=np.float64), gold)


def synthetic_pairs(n, rng, signal=0.0, n_tokens=30, prefix="n"):
    """Pairs of `n_tokens` one-word tokens ("w ") with a gold run of 5 tokens; scores = noise,
    plus `signal` on the gold tokens."""
    text = "w " * n_tokens
    offsets = np.stack([np.arange(0, 2 * n_tokens, 2), np.arange(2, 2 * n_tokens + 2, 2)], axis=1)
    out = []
    for i in range(n):
        start = int(rng.integers(0, n_tokens - 5))
        scores = rng.random(n_tokens)
        scores[start : start + 5] += signal
        out.append(Pair(f"{prefix}{i:04d}", "t", text, offsets, scores / scores.max(), [(2 * start, 2 * start + 9)]))
    return out


# ---------------------------------------------------------------- token AUC


def test_auc_of_hand_computed_cases():
    # the classic example: 3 of the 4 (gold, other) pairs are ordered correctly
    assert token_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert token_auc([0, 0, 1, 1], [False, False, True, True]) == 1.0
    assert token_auc([1, 1, 0, 0], [False, False, True, True]) == 0.0
    # a tie between the gold token and one other counts one half: (1 + 0.5) / 2
    assert token_auc([0, 1, 1], [False, True, False]) == pytest.approx(0.75)
    assert token_auc([0.3] * 5, [True, False, False, True, False]) == 0.5


def test_auc_is_undefined_without_gold_or_without_other_tokens():
    assert math.isnan(token_auc([0.1, 0.2], [False, False]))
    assert math.isnan(token_auc([0.1, 0.2], [True, True]))
    assert math.isnan(token_auc([], []))


def test_auc_refuses_nan_scores_and_a_length_mismatch():
    with pytest.raises(ValueError, match="NaN"):
        token_auc([0.1, math.nan], [True, False])
    with pytest.raises(ValueError, match="3 scores for 2 tokens"):
        token_auc([0.1, 0.2, 0.3], [True, False])


def test_auc_equals_scikit_learn_on_random_data_with_ties():
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(300):
        n = int(rng.integers(2, 60))
        scores = rng.integers(0, 5, n) / 4  # few distinct values: many ties
        gold = rng.random(n) < rng.uniform(0.05, 0.6)
        if gold.all() or not gold.any():
            continue
        assert token_auc(scores, gold) == pytest.approx(roc_auc_score(gold, scores), abs=1e-12)
        checked += 1
    assert checked > 200


# ---------------------------------------------------------------- one pair


def test_score_pairs_gives_auc_mass_ratio_and_peak_counts():
    scores = score_pairs([pair("n1", [0, 0.2, 1, 0.6])], given_peaks([(1, 3)]))
    assert scores.keys == [("n1", "heart rate")]
    assert scores.auc[0] == 1.0
    # (1.6 / 1.8) / (2 / 4)
    assert scores.mass_ratio[0] == pytest.approx((1.6 / 1.8) / 0.5)
    # peak tokens 1, 2 against gold 2, 3
    assert (scores.tp[0], scores.fp[0], scores.fn[0]) == (1, 1, 1)


def test_a_pair_whose_gold_lies_outside_its_tokens_is_undefined_but_still_counts_its_peaks():
    scores = score_pairs([pair("n1", [0, 0.2, 1, 0.6], gold=[(40, 50)])], given_peaks([(0, 1)]))
    assert math.isnan(scores.auc[0]) and math.isnan(scores.mass_ratio[0])
    assert (scores.tp[0], scores.fp[0], scores.fn[0]) == (0, 1, 0)


def test_score_pairs_refuses_scores_that_do_not_match_the_tokens():
    with pytest.raises(ValueError, match="3 scores for 4 tokens"):
        score_pairs([pair("n1", [0, 1, 0])], no_peaks)


def test_the_product_peak_rule_widens_to_words_and_takes_a_mapping():
    rule = peak_rule({"kernel_size": 1})
    # "120" alone is hot: the peak is that token; " bpm" below the lower threshold
    assert rule([(np.array([0, 0, 1.0, 0.1]), OFFSETS, TEXT)]) == [[(2, 3)]]
    # tokens "tachy" "card" "ia": the middle one hot, the peak covers the word
    offsets = np.array([(0, 5), (5, 9), (9, 11)])
    assert rule([(np.array([0, 1.0, 0]), offsets, "tachycardia")]) == [[(0, 3)]]


# ---------------------------------------------------------------- summaries and CIs


def test_summary_means_skip_undefined_pairs_and_peak_scores_are_micro():
    scores = PairScores(
        [("a", "t"), ("b", "t"), ("c", "t")],
        np.array([1.0, 0.5, math.nan]),
        np.array([2.0, math.nan, 1.0]),
        np.array([2, 0, 1]),
        np.array([1, 3, 0]),
        np.array([0, 1, 1]),
    )
    out = summarise(scores, n_resamples=200)
    assert out["n_pairs"] == 3 and out["n_undefined"] == 1 and out["n_mass_ratio_undefined"] == 1
    assert out["auc"] == pytest.approx(0.75) and out["mass_ratio"] == pytest.approx(1.5)
    prf = PRF(3, 4, 2)
    assert out["peak_precision"] == pytest.approx(prf.precision)
    assert out["peak_recall"] == pytest.approx(prf.recall)
    assert out["peak_f1"] == pytest.approx(prf.f1)
    assert out["peaks"] == {"tp": 3, "fp": 4, "fn": 2}


def test_each_ci_covers_its_estimate_and_narrows_with_more_pairs():
    rng = np.random.default_rng(1)
    rule = peak_rule({"kernel_size": 1, "lower": 0.6, "upper": 0.8})  # some gold tokens missed, some others hit
    small = summarise(score_pairs(synthetic_pairs(30, rng, signal=0.5), rule))
    large = summarise(score_pairs(synthetic_pairs(600, rng, signal=0.5), rule))
    for out in (small, large):
        for name in ("auc", "mass_ratio", "peak_precision", "peak_recall", "peak_f1"):
            low, high = out[f"{name}_ci"]
            assert low <= out[name] <= high, name
            assert low < high, name
    assert np.diff(large["auc_ci"])[0] < np.diff(small["auc_ci"])[0] / 2


def test_the_vectorised_bootstrap_equals_a_loop_over_the_same_resamples():
    rng = np.random.default_rng(3)
    n = 40
    auc = rng.random(n)
    auc[[3, 17]] = math.nan
    ratio = rng.random(n) * 3
    tp, fp, fn = (rng.integers(0, 6, n) for _ in range(3))
    keys = [(f"n{i:02d}", "t") for i in range(n)]
    out = summarise(PairScores(keys, auc, ratio, tp, fp, fn), n_resamples=300, seed=11)

    index = np.random.default_rng(11).integers(0, n, size=(300, n))  # one block: the same draws
    means, f1s = [], []
    for row in index:
        means.append(np.nanmean(auc[row]))
        f1s.append(PRF(int(tp[row].sum()), int(fp[row].sum()), int(fn[row].sum())).f1)
    assert out["auc_ci"] == pytest.approx(np.quantile(means, [0.025, 0.975]).tolist())
    assert out["peak_f1_ci"] == pytest.approx(np.quantile(f1s, [0.025, 0.975]).tolist())


def test_the_summary_does_not_depend_on_the_order_of_the_pairs():
    rng = np.random.default_rng(2)
    scores = score_pairs(synthetic_pairs(50, rng, signal=0.3), peak_rule({"kernel_size": 1}))
    order = rng.permutation(50)
    shuffled = PairScores(
        [scores.keys[i] for i in order],
        scores.auc[order],
        scores.mass_ratio[order],
        scores.tp[order],
        scores.fp[order],
        scores.fn[order],
    )
    assert summarise(shuffled, seed=5) == summarise(scores, seed=5)
    assert summarise(scores, seed=5) != summarise(scores, seed=6)


def test_summaries_of_no_pairs_are_undefined_not_errors():
    out = summarise(PairScores.empty())
    assert out["n_pairs"] == 0 and math.isnan(out["auc"]) and all(math.isnan(v) for v in out["auc_ci"])
    assert out["peak_f1"] == 0.0


def test_ten_thousand_pairs_and_a_thousand_resamples_give_a_tight_interval_around_the_estimate():
    """The bootstrap at evaluation scale (its speed is a benchmark's business, not a test's):
    with 10,000 pairs the 95% interval of the AUC holds the estimate and is narrow."""
    rng = np.random.default_rng(0)
    n = 10_000
    scores = PairScores(
        [(str(i), "t") for i in range(n)], rng.random(n), rng.random(n) * 2, *(rng.integers(0, 5, n) for _ in range(3))
    )
    out = summarise(scores, n_resamples=1000)
    low, high = out["auc_ci"]
    assert out["n_pairs"] == n and low <= out["auc"] <= high and 0 < high - low < 0.05


# ---------------------------------------------------------------- baselines


def test_the_uniform_baseline_has_auc_one_half_and_ratio_one_and_peaks_over_the_whole_note():
    pairs = [pair("n1", [0, 0.2, 1, 0.6]), pair("n2", [1, 0, 0, 0], gold=[(0, 2)])]
    uniform = baseline_pairs(pairs, "uniform")
    assert all((p.scores == 1).all() for p in uniform)
    out = summarise(score_pairs(uniform, peak_rule()))
    assert out["auc"] == 0.5 and out["auc_ci"] == [0.5, 0.5]
    assert out["mass_ratio"] == pytest.approx(1.0) and out["mass_ratio_ci"] == pytest.approx([1.0, 1.0])
    # every token is in the one peak: recall 1, precision = share of gold tokens (3 of 8)
    assert out["peaks"] == {"tp": 3, "fp": 5, "fn": 0}
    # thresholds above a constant map's 1.0: no peak at all
    none = summarise(score_pairs(uniform, peak_rule({"lower": 1.5, "upper": 1.5})))
    assert none["peaks"] == {"tp": 0, "fp": 0, "fn": 3} and none["peak_f1"] == 0.0


def test_random_scores_are_seeded_per_pair_and_normalised():
    a = random_scores(50, ("n1", "t"), seed=0)
    assert a.max() == 1.0 and (a >= 0).all()
    assert (random_scores(50, ("n1", "t"), seed=0) == a).all()
    assert not (random_scores(50, ("n2", "t"), seed=0) == a).all()
    assert not (random_scores(50, ("n1", "t"), seed=1) == a).all()


def test_the_random_baseline_is_near_chance_with_an_interval_around_it():
    rng = np.random.default_rng(4)
    pairs = synthetic_pairs(400, rng)
    out = summarise(score_pairs(baseline_pairs(pairs, "random", seed=0), peak_rule()))
    assert out["auc_ci"][0] < 0.5 < out["auc_ci"][1]
    assert out["mass_ratio_ci"][0] < 1.0 < out["mass_ratio_ci"][1]
    assert abs(out["auc"] - 0.5) < 0.03


def test_an_unknown_baseline_is_an_error():
    with pytest.raises(ValueError, match="unknown baseline"):
        baseline_pairs([], "shuffled")


# ---------------------------------------------------------------- the recommendation

RANDOM = {"auc": 0.5, "auc_ci": [0.48, 0.52]}


def group(method, auc, low, high, f1=0.3, n=100, undefined=0, explain="next"):
    return {
        "method": method,
        "explain": explain,
        "n_pairs": n,
        "n_undefined": undefined,
        "auc": auc,
        "auc_ci": [low, high],
        "peak_f1": f1,
    }


def test_the_highest_auc_that_beats_chance_is_recommended():
    groups = [
        group("attention", 0.58, 0.55, 0.61),
        group("attnlrp", 0.66, 0.62, 0.70),
        group("grad_input", 0.51, 0.49, 0.53),
    ]
    choice = recommend(groups, RANDOM)
    assert choice.choice == {"method": "attnlrp", "explain": "next"}
    assert "attnlrp / next" in choice.reason and "AUC 0.660" in choice.reason and "2 of 3" in choice.reason


def test_a_high_auc_whose_interval_reaches_chance_is_not_recommended():
    groups = [group("attnlrp", 0.70, 0.51, 0.85), group("attention", 0.60, 0.56, 0.64)]
    assert recommend(groups, RANDOM).choice == {"method": "attention", "explain": "next"}


def test_an_auc_tie_goes_to_the_higher_peak_f1():
    groups = [group("attnlrp", 0.6601, 0.62, 0.70, f1=0.2), group("attention", 0.6604, 0.62, 0.70, f1=0.4)]
    choice = recommend(groups, RANDOM)
    assert choice.choice["method"] == "attention" and "higher peak F1" in choice.reason


def test_nothing_is_recommended_when_no_configuration_beats_chance():
    groups = [group("attnlrp", 0.53, 0.50, 0.56), group("attention", 0.49, 0.46, 0.52)]
    choice = recommend(groups, RANDOM)
    assert choice.choice is None
    assert "No configuration beats chance" in choice.reason and "attnlrp / next" in choice.reason
    assert "0.520" in choice.reason


def test_too_few_pairs_are_not_enough_to_recommend():
    choice = recommend([group("attnlrp", 0.9, 0.8, 1.0, n=MIN_PAIRS, undefined=1)], RANDOM)
    assert choice.choice is None and "Too few pairs" in choice.reason
    assert recommend([group("attnlrp", 0.9, 0.8, 1.0, n=3)], RANDOM, min_pairs=3).choice is not None


def test_nothing_to_compare_or_no_defined_auc_says_so():
    assert "nothing to compare" in recommend([], RANDOM).reason
    undefined = group("attnlrp", math.nan, math.nan, math.nan)
    assert recommend([undefined], RANDOM).choice is None
    assert recommend([group("attnlrp", 0.9, 0.8, 1.0)], {"auc_ci": [math.nan, math.nan]}).choice is None


def test_a_label_names_the_group_by_its_own_fields():
    assert label({"model": "m", "method": "attnlrp", "explain": None, "config_key": "x", "auc": 0.7}) == "m / attnlrp"


# ---------------------------------------------------------------- the whole evaluation


def test_an_evaluation_compares_groups_with_the_baselines_on_the_same_pairs_and_recommends():
    rng = np.random.default_rng(5)
    rule = peak_rule({"kernel_size": 1})
    good = synthetic_pairs(80, rng, signal=1.0)
    noise = [Pair(p.note_id, p.task, p.text, p.offsets, rng.random(len(p.offsets)), p.gold) for p in good]
    evaluation = Evaluation(rule, n_resamples=300)
    evaluation.add({"method": "noise"}, noise[:40])
    evaluation.add({"method": "good"}, good[:50])
    evaluation.add({"method": "noise"}, noise[40:])
    evaluation.add({"method": "good"}, good[50:])
    result = evaluation.result()
    by_method = {g["method"]: g for g in result["groups"]}
    assert [g["method"] for g in result["groups"]] == ["good", "noise"]
    assert by_method["good"]["n_pairs"] == by_method["noise"]["n_pairs"] == 80
    assert (
        by_method["good"]["auc"] > 0.9 and by_method["good"]["auc_ci"][0] > result["baselines"]["random"]["auc_ci"][1]
    )
    # the baselines are scored once per distinct pair, not once per group
    assert result["baselines"]["uniform"]["n_pairs"] == result["baselines"]["random"]["n_pairs"] == 80
    assert result["baselines"]["uniform"]["auc"] == 0.5
    assert result["recommended"]["choice"] == {"method": "good"}
    assert result["bootstrap"] == {"n_resamples": 300, "confidence": 0.95, "seed": 0}


def test_an_evaluation_of_pure_noise_recommends_nothing():
    rng = np.random.default_rng(6)
    evaluation = Evaluation(peak_rule(), n_resamples=300)
    evaluation.add({"method": "noise"}, synthetic_pairs(60, rng))
    result = evaluation.result()
    assert result["recommended"]["choice"] is None
    assert "No configuration beats chance" in result["recommended"]["reason"]


def test_each_variant_is_compared_with_next_pair_by_pair():
    from ml.localisation import Evaluation

    rng = np.random.default_rng(7)
    pairs_next, pairs_span = [], []
    for k in range(30):
        text = " ".join(f"w{i}" for i in range(20))
        offsets = np.array([m.span() for m in re.finditer(r"\S+", text)], np.int64)
        gold = [tuple(offsets[2]), tuple(offsets[3])]
        noise = rng.random(20)
        better = noise.copy()
        better[[2, 3]] += 0.5  # the gold tokens rise in every pair
        pairs_next.append(Pair(k, "t", text, offsets, noise / noise.max(), gold))
        pairs_span.append(Pair(k, "t", text, offsets, better / better.max(), gold))
    evaluation = Evaluation(lambda items: [[] for _ in items], seed=0, n_resamples=200)
    evaluation.add({"method": "attnlrp", "explain": "next"}, pairs_next)
    evaluation.add({"method": "attnlrp", "explain": "span"}, pairs_span)
    evaluation.add({"method": "attention", "explain": "span"}, pairs_span)  # no attention/next: no reference
    groups = {(g["method"], g["explain"]): g for g in evaluation.result()["groups"]}
    assert groups[("attnlrp", "next")]["auc_vs_next"] is None
    assert groups[("attention", "span")]["auc_vs_next"] is None
    paired = groups[("attnlrp", "span")]["auc_vs_next"]
    assert paired["n"] == 30
    assert paired["diff"] == pytest.approx(groups[("attnlrp", "span")]["auc"] - groups[("attnlrp", "next")]["auc"])
    assert paired["diff"] > 0 and paired["ci"][0] > 0 and paired["p_value"] < 0.05


def test_the_reference_is_found_whatever_the_configuration_keys():
    from ml.localisation import Evaluation

    offsets = np.array([(0, 1), (2, 3), (4, 5)])
    pairs = [Pair(k, "t", "a b c", offsets, np.array([0.1, 0.9, 0.2]), [(2, 3)]) for k in range(12)]
    evaluation = Evaluation(lambda items: [[] for _ in items], n_resamples=50)
    evaluation.add({"method": "attnlrp", "explain": "next", "config_key": "attnlrp-next-aaa"}, pairs)
    evaluation.add(
        {
            "method": "attnlrp",
            "explain": "contrastive",
            "config_key": "attnlrp-contrastive-bbb",
            "neutral": "the patient",
        },
        pairs,
    )
    groups = {g["explain"]: g for g in evaluation.result()["groups"]}
    assert groups["contrastive"]["auc_vs_next"] == {"diff": 0.0, "ci": [0.0, 0.0], "p_value": 1.0, "n": 12}
