import json
import math

import pytest

from ml.training import LabeledItem, average_variants, evaluate

# task A: gold a a b b, predicted a b b b -> F1(a) = 2/3, F1(b) = 4/5 -> 11/15
# task B: gold x y,     predicted x x     -> F1(x) = 2/3, F1(y) = 0   -> 1/3
GOLD = [("A", "a"), ("A", "a"), ("A", "b"), ("A", "b"), ("B", "x"), ("B", "y")]
PRED = ["a", "b", "b", "b", "x", "x"]
OPTIONS = {"A": ["a", "b", "c"], "B": ["x", "y", "z"]}


def items():
    return [
        LabeledItem(str(n), str(n), task, task, OPTIONS[task], "note", label) for n, (task, label) in enumerate(GOLD)
    ]


def test_per_task_f1_is_the_macro_f1_over_options_seen_and_macro_f1_their_mean():
    result = evaluate(items(), PRED, n_resamples=50)
    assert result.per_task == pytest.approx({"A": 11 / 15, "B": 1 / 3})  # options c and z never occur
    assert result.macro_f1 == pytest.approx((11 / 15 + 1 / 3) / 2)
    assert result.n_items == 6 and result.n_tasks == 2
    assert result.ci_low <= result.macro_f1 + 1e-9 and result.ci_high >= result.ci_low


def test_the_confidence_interval_is_seeded():
    a, b = evaluate(items(), PRED, seed=3), evaluate(items(), PRED, seed=3)
    assert (a.ci_low, a.ci_high) == (b.ci_low, b.ci_high)


def test_held_out_tasks_are_reported_separately():
    result = evaluate(items(), PRED, held_out={"B"}, n_resamples=20)
    assert result.macro_f1 == pytest.approx(11 / 15) and result.tasks == ["A"]
    assert result.held_out.macro_f1 == pytest.approx(1 / 3) and result.held_out.n_items == 2
    assert set(result.per_task) == {"A", "B"}
    data = json.loads(json.dumps(result.to_dict()))
    assert data["held_out"]["macro_f1"] == pytest.approx(1 / 3)


def test_average_variants_is_the_mean_of_the_variants_macro_f1():
    perfect = [label for _, label in GOLD]
    result = average_variants(items(), [PRED, perfect], n_resamples=30)
    assert result.variants == pytest.approx([(11 / 15 + 1 / 3) / 2, 1.0])
    assert result.macro_f1 == pytest.approx(((11 / 15 + 1 / 3) / 2 + 1.0) / 2)
    assert result.per_task == pytest.approx({"A": (11 / 15 + 1) / 2, "B": (1 / 3 + 1) / 2})


def test_nan_becomes_null_in_json():
    result = evaluate(items(), PRED, held_out={"A", "B"}, n_resamples=10)
    data = result.to_dict()
    assert data["macro_f1"] is None and math.isclose(data["held_out"]["macro_f1"], (11 / 15 + 1 / 3) / 2)
    json.dumps(data, allow_nan=False)


def test_it_needs_one_prediction_per_labeled_item():
    with pytest.raises(ValueError, match="predictions"):
        evaluate(items(), PRED[:-1])
    with pytest.raises(ValueError, match="gold"):
        evaluate([items()[0].with_label(None)], ["a"])
