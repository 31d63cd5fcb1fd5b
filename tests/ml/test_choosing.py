"""ml.choosing: which measurements the recommendation uses, eligibility against chance, and the
rank sum over localisation, faithfulness and task-specificity."""

from __future__ import annotations

from ml.choosing import choose


def group(key, auc=None, low=None, high=None, n=40, undefined=0):
    return {
        "method": key,
        "explain": "next",
        "template": "en",
        "config_key": key,
        "n_pairs": n,
        "n_undefined": undefined,
        "auc": auc,
        "auc_ci": [low, high],
        "peak_f1": 0.3,
    }


RANDOM = {"auc": 0.5, "auc_ci": [0.45, 0.55]}


def faith(comp, low, high, random=(0.1, 0.05, 0.15), n=30):
    return {
        "n_pairs": n,
        "methods": {"m": {"aopc_comprehensiveness": comp, "aopc_comprehensiveness_ci": [low, high]}},
        "random": {"aopc_comprehensiveness": random[0], "aopc_comprehensiveness_ci": [random[1], random[2]]},
    }


def test_without_gold_faithfulness_decides_and_says_localisation_was_not_used():
    configs = [{"method": k, "explain": "next", "template": "en", "config_key": k} for k in "ab"]
    result = choose(configs, [], RANDOM, {"a": faith(0.5, 0.4, 0.6), "b": faith(0.12, 0.02, 0.2)})
    assert result.choice["config_key"] == "a"
    assert result.used == ["faithfulness"] and "localisation" in result.not_used
    assert "faithfulness" in result.reason and "Not used: localisation" in result.reason


def test_a_configuration_must_beat_chance_on_every_measurement_used():
    groups = [group("a", 0.9, 0.85, 0.95), group("b", 0.7, 0.6, 0.8)]
    # a localises best but is no more faithful than random: b is the one that passes both
    result = choose(groups, groups, RANDOM, {"a": faith(0.12, 0.04, 0.2), "b": faith(0.4, 0.3, 0.5)})
    assert result.choice["config_key"] == "b"
    assert result.used == ["localisation", "faithfulness"]


def test_no_configuration_passing_gives_no_choice_and_counts_who_passed():
    groups = [group("a", 0.52, 0.44, 0.6)]
    result = choose(groups, groups, RANDOM, {"a": faith(0.12, 0.04, 0.2)})
    assert result.choice is None and "0 of 1" in result.reason


def test_specificity_breaks_the_tie_between_equally_good_configurations_but_never_decides_alone():
    groups = [group("a", n=0), group("b", n=0)]
    faithful = {"a": faith(0.4, 0.3, 0.5), "b": faith(0.4, 0.3, 0.5)}
    specific = {"a": {"spearman_mean": 0.95}, "b": {"spearman_mean": 0.2}}
    result = choose(groups, groups, RANDOM, faithful, specific)
    assert result.choice["config_key"] == "b" and result.used == ["faithfulness", "specificity"]
    alone = choose(groups, groups, RANDOM, None, specific)
    assert alone.choice is None and "Task-specificity alone" in alone.reason


def test_localisation_alone_matches_the_localisation_rule():
    groups = [group("a", 0.8, 0.7, 0.9), group("b", 0.9, 0.8, 0.95), group("c", 0.95, 0.5, 0.99)]
    result = choose(groups, groups, RANDOM)
    assert result.choice["config_key"] == "b"  # c's interval reaches into chance
    assert result.used == ["localisation"] and set(result.not_used) == {"faithfulness", "specificity"}
