"""ml.specificity: rank correlation against scipy-free hand values, peak overlap on constructed
spans, the 'same for every task' flag, repetition across notes, and the running summary."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ml.specificity import (
    SpecificityParams,
    Summary,
    TaskMap,
    aligned,
    intersection,
    jaccard,
    note_specificity,
    peak_share,
    spearman,
    task_repetition,
)

OFFSETS = np.array([[i * 4, i * 4 + 3] for i in range(10)])


def test_spearman_is_one_for_a_monotone_map_and_minus_one_for_its_reverse():
    x = np.array([0.1, 0.5, 0.2, 0.9, 0.3])
    assert spearman(x, x**3) == pytest.approx(1.0, abs=1e-12)
    assert spearman(x, -x) == pytest.approx(-1.0, abs=1e-12)


def test_spearman_with_ties_equals_pearson_of_average_ranks_by_hand():
    x = [1.0, 2.0, 2.0, 3.0]  # ranks 1, 2.5, 2.5, 4
    y = [4.0, 3.0, 1.0, 2.0]  # ranks 4, 3, 1, 2
    rx, ry = np.array([1, 2.5, 2.5, 4]) - 2.5, np.array([4, 3, 1, 2]) - 2.5
    expected = float(rx @ ry) / math.sqrt(float(rx @ rx) * float(ry @ ry))
    assert spearman(x, y) == pytest.approx(expected, abs=1e-12)


def test_spearman_of_a_constant_map_is_undefined():
    assert math.isnan(spearman([0.2, 0.2, 0.2], [0.1, 0.5, 0.3]))


def test_peak_overlap_counts_characters_on_merged_spans():
    a = [(0, 10), (5, 15), (30, 40)]  # 25 characters
    b = [(10, 35)]
    assert intersection(a, b) == 5 + 5
    assert peak_share(a, b) == pytest.approx(10 / 25)
    assert jaccard(a, b) == pytest.approx(10 / 40)
    assert math.isnan(peak_share([], b))


def test_maps_over_other_tokens_are_compared_on_the_tokens_both_have():
    a = TaskMap("a", OFFSETS, np.arange(10.0))
    b = TaskMap("b", OFFSETS[::2], np.arange(5.0) * 2)
    sa, sb = aligned(a, b)
    assert sa.tolist() == [0, 2, 4, 6, 8] and sb.tolist() == [0, 2, 4, 6, 8]


def test_a_peak_on_the_age_for_every_task_is_flagged_and_a_task_specific_one_is_not():
    rng = np.random.default_rng(0)
    age = (8, 11)  # "de 61": the same peak for all three tasks
    maps = [
        TaskMap("heart rate", OFFSETS, rng.random(10), [age]),
        TaskMap("blood pressure", OFFSETS, rng.random(10), [age]),
        TaskMap("chest pain", OFFSETS, rng.random(10), [age, (20, 27)]),
    ]
    result = note_specificity(maps)
    heart, chest = result.of("heart rate"), result.of("chest pain")
    assert heart.same_as_all and heart.shared_peaks == [age] and heart.peak_share_min == 1.0
    # chest pain's own peak is 7 of its 10 peak characters: not the same as the others'
    assert not chest.same_as_all and chest.shared_peaks == [age]
    assert chest.peak_share_min == pytest.approx(3 / 10)
    assert len(result.pairs) == 3


def test_identical_maps_correlate_fully_and_distinct_ones_less():
    base = np.linspace(0, 1, 10)
    maps = [
        TaskMap("a", OFFSETS, base, [(0, 3)]),
        TaskMap("b", OFFSETS, base * 0.5, [(0, 3)]),
        TaskMap("c", OFFSETS, base[::-1], [(36, 39)]),
    ]
    result = note_specificity(maps)
    pairs = {(p["a"], p["b"]): p for p in result.pairs}
    assert pairs[("a", "b")]["spearman"] == pytest.approx(1.0) and pairs[("a", "b")]["jaccard"] == 1.0
    assert pairs[("a", "c")]["spearman"] == pytest.approx(-1.0) and pairs[("a", "c")]["jaccard"] == 0.0
    assert not result.of("a").same_as_all  # c peaks elsewhere


def test_a_note_with_one_task_or_no_peak_is_never_the_same_as_all():
    one = note_specificity([TaskMap("a", OFFSETS, np.arange(10.0), [(0, 3)])])
    assert not one.tasks[0].same_as_all and math.isnan(one.tasks[0].spearman_mean)
    none = note_specificity([TaskMap("a", OFFSETS, np.arange(10.0)), TaskMap("b", OFFSETS, np.arange(10.0))])
    assert not any(t.same_as_all for t in none.tasks)


def test_the_share_threshold_decides_the_flag():
    maps = [TaskMap("a", OFFSETS, np.arange(10.0), [(0, 10)]), TaskMap("b", OFFSETS, np.arange(10.0), [(0, 7)])]
    assert not note_specificity(maps, SpecificityParams(same_share=0.8)).of("a").same_as_all
    assert note_specificity(maps, SpecificityParams(same_share=0.7)).of("a").same_as_all
    with pytest.raises(ValueError):
        SpecificityParams(same_share=0)


def test_repeated_peak_texts_across_notes_are_counted_case_and_space_folded():
    result = task_repetition({1: ["ESI 2", "warfarin"], 2: ["esi  2", "210"], 3: ["ESI 2"], 4: []})
    assert result["peaks"] == 5 and result["notes"] == 4
    assert result["repeated_share"] == pytest.approx(3 / 5)
    assert result["top_repeated"] == [{"text": "esi 2", "notes": 3}]


def test_the_summary_counts_same_peaks_and_averages_correlations():
    summary = Summary()
    same = [TaskMap(t, OFFSETS, np.linspace(0, 1, 10), [(0, 3)]) for t in "ab"]
    other = [
        TaskMap("a", OFFSETS, np.linspace(0, 1, 10), [(0, 3)]),
        TaskMap("b", OFFSETS, -np.linspace(0, 1, 10), [(36, 39)]),
    ]
    summary.add(note_specificity(same))
    summary.add(note_specificity(other))
    summary.add(note_specificity(same[:1]))
    result = summary.result()
    assert result["notes"] == 2 and result["notes_with_one_task"] == 1 and result["pairs"] == 4
    assert result["same_for_every_task"] == 2 and result["same_share"] == pytest.approx(0.5)
    assert result["spearman_mean"] == pytest.approx(0.0, abs=1e-12)  # (1 + -1) / 2


def test_maps_over_the_same_tokens_correlate_as_the_plain_spearman_says():
    rng = np.random.default_rng(4)
    maps = [TaskMap(t, OFFSETS, rng.random(10).round(1), [(0, 3)]) for t in "abcd"]  # ties included
    result = note_specificity(maps)
    for p in result.pairs:
        a, b = (next(m for m in maps if m.task == t) for t in (p["a"], p["b"]))
        # Same float64 ranks, another summation order: a few ulps of a value <= 1.
        assert p["spearman"] == pytest.approx(spearman(a.scores, b.scores), abs=1e-12)
