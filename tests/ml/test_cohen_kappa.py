"""Cohen's kappa, checked by hand."""

import math

import pytest

from ml.agreement import cohen_kappa


def test_kappa_of_a_worked_example():
    # 10 peaks; A keeps 6, B keeps 5; they agree on 4 kept and 3 rejected.
    a = [1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    b = [1, 1, 1, 1, 0, 0, 1, 0, 0, 0]
    # p_o = 7/10; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_perfect_agreement_is_one_and_systematic_disagreement_is_negative():
    assert cohen_kappa(["k", "r", "k"], ["k", "r", "k"]) == pytest.approx(1.0)
    assert cohen_kappa([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(-1.0)


def test_kappa_is_undefined_with_one_label_only_or_no_item():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert math.isnan(cohen_kappa([], []))


def test_kappa_needs_as_many_labels_from_both_raters():
    with pytest.raises(ValueError):
        cohen_kappa([1, 0], [1])
