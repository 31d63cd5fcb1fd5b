"""ml.agreement against the `krippendorff` package, scikit-learn, Gwet's two-rater formula and
Krippendorff's published worked example; and `python -m ml agreement` on good and bad files."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from ml.__main__ import main
from ml.agreement import AgreementSettings, agreement, table_from_judgements

FAST = AgreementSettings(n_resamples=200)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 coders x 12
# units, nominal data with missing values; the paper gives alpha = 0.743.
_ = None
KRIPPENDORFF_2011 = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
    "C": [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _],
}


def _items(coders: dict) -> list[list]:
    return [list(row) for row in zip(*coders.values())]


def _skewed() -> list[list[str]]:
    """Two raters, 100 items: both accept 90, each rejects 5 the other accepts."""
    return [["accept", "accept"]] * 90 + [["accept", "reject"]] * 5 + [["reject", "accept"]] * 5


def _random_table(rng, n_items, n_reviewers, n_labels, missing):
    table = rng.integers(0, n_labels, size=(n_items, n_reviewers)).astype(float)
    table[rng.random(table.shape) < missing] = np.nan
    return table


def test_it_reproduces_krippendorffs_published_nominal_example():
    result = agreement(_items(KRIPPENDORFF_2011), list(KRIPPENDORFF_2011), settings=FAST)
    assert round(result.alpha, 3) == 0.743
    assert (result.items, result.pairable_items, result.reviewers, result.judgements) == (12, 11, 4, 41)


@pytest.mark.parametrize("seed", range(6))
def test_alpha_equals_the_krippendorff_package_on_random_tables_with_missing_values(seed):
    rng = np.random.default_rng(seed)
    table = _random_table(
        rng,
        n_items=int(rng.integers(5, 80)),
        n_reviewers=int(rng.integers(2, 7)),
        n_labels=int(rng.integers(2, 5)),
        missing=0.3,
    )
    expected = krippendorff.alpha(reliability_data=table.T, level_of_measurement="nominal")
    assert agreement(table.tolist(), settings=FAST).alpha == pytest.approx(expected, abs=1e-12)


def test_each_pair_kappa_equals_scikit_learn_on_the_items_both_judged():
    rng = np.random.default_rng(3)
    table = _random_table(rng, 60, 4, 3, 0.25)
    result = agreement(table.tolist(), ["a", "b", "c", "d"], settings=FAST)
    kappas = []
    for pair in result.pairs:
        j, k = "abcd".index(pair.first), "abcd".index(pair.second)
        both = ~np.isnan(table[:, j]) & ~np.isnan(table[:, k])
        expected = cohen_kappa_score(table[both, j], table[both, k])
        assert pair.items == both.sum()
        assert pair.kappa == pytest.approx(expected, abs=1e-12)
        kappas.append(expected)
    assert len(result.pairs) == 6
    assert result.kappa == pytest.approx(np.mean(kappas), abs=1e-12)


def _gwet_two_rater_ac1(a, b) -> float:
    """Gwet's AC1 for two raters (Gwet 2008, eq. 4-5), written out independently."""
    labels = sorted(set(a) | set(b))
    n, q = len(a), len(labels)
    pa = sum(x == y for x, y in zip(a, b)) / n
    pi = [(a.count(k) / n + b.count(k) / n) / 2 for k in labels]
    pe = sum(p * (1 - p) for p in pi) / (q - 1)
    return (pa - pe) / (1 - pe)


@pytest.mark.parametrize("seed", range(4))
def test_multi_rater_ac1_is_gwets_two_rater_formula_on_two_raters(seed):
    rng = np.random.default_rng(seed)
    table = rng.integers(0, 3, size=(40, 2))
    a, b = table[:, 0].tolist(), table[:, 1].tolist()
    assert agreement(table.tolist(), settings=FAST).ac1 == pytest.approx(_gwet_two_rater_ac1(a, b), abs=1e-12)


def test_on_skewed_labels_kappa_is_low_while_ac1_is_high_and_the_paradox_is_named():
    result = agreement(_skewed(), ["r1", "r2"], settings=FAST)
    assert result.observed == pytest.approx(0.9)
    assert result.kappa == pytest.approx((0.9 - 0.905) / (1 - 0.905))  # about -0.05
    assert result.ac1 == pytest.approx((0.9 - 0.095) / (1 - 0.095))  # about 0.89
    assert result.kappa < 0.1 < 0.85 < result.ac1
    assert any("kappa paradox" in line and "95%" in line for line in result.diagnostics)
    assert not any("fewer than 30" in line for line in result.diagnostics)


def test_observed_agreement_is_the_mean_pairwise_agreement_over_items_with_two_judgements():
    table = [["x", "x", "x"], ["x", "x", "y"], ["x", None, None], ["y", None, "y"]]
    # per item: 3/3, 1/3 of the pairs agree; the third item has one judgement; the last 1/1
    assert agreement(table, settings=FAST).observed == pytest.approx((1 + 1 / 3 + 1) / 3)


def test_the_intervals_contain_the_estimate_and_narrow_with_more_items():
    base = [list(row) for row in _items(KRIPPENDORFF_2011)]
    small = agreement(base, settings=FAST)
    large = agreement(base * 8, settings=FAST)
    for name in ("alpha", "kappa", "ac1", "observed"):
        for result in (small, large):
            low, high = getattr(result, f"{name}_ci")
            assert low <= getattr(result, name) <= high, name
        (small_low, small_high), (large_low, large_high) = (getattr(r, f"{name}_ci") for r in (small, large))
        assert large_high - large_low < small_high - small_low, name


def test_the_bootstrap_is_reproducible_from_its_seed():
    table = _items(KRIPPENDORFF_2011)
    first = agreement(table, settings=AgreementSettings(n_resamples=100, seed=7))
    assert agreement(table, settings=AgreementSettings(n_resamples=100, seed=7)).alpha_ci == first.alpha_ci
    assert agreement(table, settings=AgreementSettings(n_resamples=100, seed=8)).alpha_ci != first.alpha_ci


def test_one_category_leaves_the_chance_corrected_coefficients_undefined_and_says_so():
    result = agreement([["yes", "yes"]] * 40, settings=FAST)
    assert result.observed == 1.0
    assert all(math.isnan(v) for v in (result.alpha, result.kappa, result.ac1))
    assert any("no variation" in line for line in result.diagnostics)
    assert result.to_dict()["alpha"] is None


def test_it_warns_about_few_items_and_reviewers_with_few_judgements():
    table = [["a", "a", None]] * 12 + [["b", "b", "b"]] * 3
    lines = agreement(table, ["r1", "r2", "r3"], settings=FAST).diagnostics
    assert any("Only 15 items" in line for line in lines)
    assert any("'r3' made 3 judgements" in line for line in lines)
    assert not any("'r1'" in line for line in lines)


def test_no_shared_item_leaves_everything_undefined():
    result = agreement([["a", None], [None, "b"]], settings=FAST)
    assert math.isnan(result.alpha) and math.isnan(result.kappa) and math.isnan(result.observed)
    assert result.pairs == []
    assert "No item was judged by two or more reviewers" in result.diagnostics[0]


def test_each_reviewer_is_scored_against_the_others_consensus():
    table = [["a", "a", "a"], ["a", "a", "b"], ["b", "a", "b"], ["a", "b", None]]
    accuracy = {acc.reviewer: acc for acc in agreement(table, ["x", "y", "z"], settings=FAST).reviewer_accuracy}
    # x: item 1 hit, items 2 and 3 the others tie, item 4 the other says b: 1 of 2
    assert (accuracy["x"].compared, accuracy["x"].accuracy) == (2, 0.5)
    # y: item 1 hit, item 2 tie, item 3 the others say b, item 4 the other says a: 1 of 3
    assert (accuracy["y"].judgements, accuracy["y"].compared) == (4, 3)
    assert accuracy["y"].accuracy == pytest.approx(1 / 3)


def test_table_from_judgements_leaves_unjudged_cells_empty():
    items, reviewers, table = table_from_judgements([(1, "a", "x"), (2, "b", "y"), (1, "b", "x")])
    assert (items, reviewers, table) == ([1, 2], ["a", "b"], [["x", "x"], [None, "y"]])


# ---------------------------------------------------------------- the command line


def _write(tmp_path, text: str):
    path = tmp_path / "judgements.csv"
    path.write_text(text)
    return str(path)


def _run(capsys, *argv):
    code = main(["agreement", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_prints_one_json_object_from_a_file_with_blanks(tmp_path, capsys):
    lines = ["item,reviewer,label"]
    for coder, labels in KRIPPENDORFF_2011.items():
        lines += [f"u{unit},{coder},{'' if label is None else label}" for unit, label in enumerate(labels, 1)]
    code, out, _ = _run(capsys, _write(tmp_path, "\n".join(lines) + "\n"), "--seed", "1", "--resamples", "100")
    assert code == 0
    result = json.loads(out)
    assert round(result["alpha"], 3) == 0.743
    for name in ("alpha", "kappa", "ac1", "observed"):
        low, high = result[f"{name}_ci"]
        assert low <= result[name] <= high
    assert (result["items"], result["reviewers"], result["judgements"]) == (12, 4, 41)
    assert result["n_resamples"] == 100 and result["seed"] == 1
    assert isinstance(result["diagnostics"], list)


def test_the_cli_gives_agreement_per_task_with_a_task_column(tmp_path, capsys):
    lines = ["task,item,reviewer,label"]
    for i, (a, b) in enumerate(_skewed()):
        lines += [f"smoking,{i},r1,{a}", f"smoking,{i},r2,{b}", f"fever,{i},r1,{a}", f"fever,{i},r2,{a}"]
    code, out, _ = _run(capsys, _write(tmp_path, "\n".join(lines) + "\n"), "--resamples", "50")
    assert code == 0
    result = json.loads(out)
    assert result["items"] == 200
    assert result["tasks"]["fever"]["observed"] == 1.0
    assert result["tasks"]["smoking"]["ac1"] == pytest.approx((0.9 - 0.095) / (1 - 0.095))


def test_the_cli_names_every_bad_line_and_exits_2(tmp_path, capsys):
    text = "item,reviewer,label\n1,a,accept\n1,b,reject\n1,a,reject\n,b,accept\n2,,accept\n"
    code, out, err = _run(capsys, _write(tmp_path, text))
    assert code == 2 and out == ""
    assert "line 4: reviewer 'a' already judged item '1' on line 2" in err
    assert "line 5: blank item" in err
    assert "line 6: blank reviewer" in err


def test_the_cli_refuses_a_file_without_the_columns(tmp_path, capsys):
    code, out, err = _run(capsys, _write(tmp_path, "item,rater,label\n1,a,x\n"))
    assert code == 2 and out == ""
    assert "missing column(s) reviewer" in err
