"""The result page's rows and interval charts, from a stored result."""

from tests.webapp.evaluation.factories import baseline, group
from webapp.evaluation import presentation


def result(groups, choice=None):
    return {
        "groups": groups,
        "baselines": {"uniform": baseline(0.5, 0.5, 0.5), "random": baseline(0.5, 0.46, 0.54)},
        "recommended": {"choice": choice, "reason": "r"},
    }


def test_rows_mark_the_recommended_group_and_those_beating_chance():
    winner, close, below = (
        group("attnlrp", "span", 0.7, 0.6, 0.8),
        group("attention", "next", 0.6, 0.55, 0.65),
        group("grad_input", "next", 0.56, 0.5, 0.62),
    )
    rows = presentation.rows(result([winner, close, below], choice={"config_key": winner["config_key"]}))
    assert [(r.kind, r.recommended, r.beats_chance) for r in rows] == [
        ("config", True, True),
        ("config", False, True),
        ("config", False, False),
        ("baseline", False, False),
        ("baseline", False, False),
    ]
    assert rows[0].ci("auc") == [0.6, 0.8] and rows[-1].label == "random baseline"


def test_a_chart_places_points_whiskers_and_the_random_band_in_percent_of_its_axis():
    chart = presentation.chart(result([group("attnlrp", "span", 0.7, 0.6, 0.8)]), "auc", "AUC", floor=0.0, ceiling=1.0)
    # values from 0.46 to 0.8: the axis runs 0.4 .. 0.8
    assert [t["value"] for t in chart["ticks"]] == [0.4, 0.5, 0.6, 0.7, 0.8]
    bar = chart["bars"][0]
    assert (bar["point"], bar["left"], bar["width"]) == (75.0, 50.0, 50.0)
    assert chart["band"] == {"left": 15.0, "width": 20.0, "low": 0.46, "high": 0.54}
    assert [b["label"] for b in chart["bars"]] == [
        "AttnLRP / Every token of s_T, summed / en",
        "uniform baseline",
        "random baseline",
    ]


def test_undefined_values_are_shown_as_such_and_an_empty_result_has_no_chart():
    undefined = {**group("attnlrp", "span", 0.7, 0.6, 0.8), "auc": None, "auc_ci": [None, None]}
    chart = presentation.chart(result([undefined]), "auc", "AUC")
    assert chart["bars"][0] == {
        "label": "AttnLRP / Every token of s_T, summed / en",
        "kind": "config",
        "defined": False,
    }
    assert presentation.rows({}) == [] and presentation.charts({}) == []
    assert [c["name"] for c in presentation.charts(result([group("attention", "next", 0.6, 0.5, 0.7)]))] == [
        "auc",
        "mass_ratio",
        "peak_f1",
    ]
