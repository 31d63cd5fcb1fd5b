"""Base vs DSM: side by side, difference map, relative change of relevance on gold."""

import numpy as np
import pytest

from ml.metrics import relative_change_bootstrap
from tests.projects import default_project
from webapp.corpus.models import Annotation, Note
from webapp.review import comparison

from .fabricate import TEXT, add_map, tokens, word_span


def test_one_note_side_by_side_with_the_change_on_its_gold(note, tasks, base, dsm, maps, gold):
    result = comparison.compare_note(note, tasks["heart"], base, dsm, "attnlrp", "en")
    assert result.found_first and result.found_second and result.same_tokens
    assert 'class="dA' in result.html_diff or 'class="dB' in result.html_diff
    assert result.gold_first == pytest.approx(0.9 + 0.8, rel=1e-3)
    assert result.gold_second == pytest.approx(1.0 + 0.9, rel=1e-3)
    assert result.change == pytest.approx((1.9 - 1.7) / 1.7, abs=2e-3)  # scores are stored as float16


def test_a_missing_map_still_shows_the_other(note, tasks, base, dsm, maps):
    result = comparison.compare_note(note, tasks["pacemaker"], base, dsm, "attnlrp", "en")
    assert result.found_first and not result.found_second and result.html_diff == ""


def test_different_tokenisations_are_compared_by_characters(note, tasks, base, dsm, gold):
    add_map(note, tasks["heart"], base, {"130": 0.5})
    # the second model splits every token into characters
    offsets = np.array([(i, i + 1) for a, b in tokens(TEXT) for i in range(a, b)], np.int32)
    scores = np.zeros(len(offsets), np.float32)
    a, b = word_span(TEXT, "130")
    scores[(offsets[:, 0] >= a) & (offsets[:, 1] <= b)] = 1.0
    add_map(note, tasks["heart"], dsm, {}, offsets=offsets, scores=scores)
    result = comparison.compare_note(note, tasks["heart"], base, dsm, "attnlrp", "en")
    assert not result.same_tokens
    assert result.gold_second == pytest.approx(1.0)  # projected onto the first map's tokens
    assert result.change == pytest.approx(1.0)


def test_the_corpus_summary_aggregates_pairs_with_gold_and_both_maps(corpus, tasks, base, dsm):
    for i, (before, after) in enumerate([(0.5, 0.75), (0.4, 0.1), (0.0, 0.3)]):
        note = Note.objects.create(corpus=corpus, external_id=f"c{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": before})
        add_map(note, tasks["heart"], dsm, {"130": after})
        Annotation.objects.create(
            note=note, task=tasks["heart"], label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
        )
    lonely = Note.objects.create(corpus=corpus, external_id="c9", text=TEXT)
    add_map(lonely, tasks["heart"], base, {"130": 0.5})  # no DSM map: left out
    Annotation.objects.create(
        note=lonely, task=tasks["heart"], label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
    )
    summary = comparison.corpus_summary(corpus, base, dsm, "attnlrp", "en")
    assert summary.pairs == 2 and summary.undefined == 1  # the third has no relevance on gold under base
    assert summary.mean_change == pytest.approx((0.5 + -0.75) / 2, abs=2e-3)
    assert summary.ratio_of_sums_change == pytest.approx((0.75 + 0.1) / (0.5 + 0.4) - 1, abs=2e-3)
    counts = {label: n for label, n, _ in summary.histogram}
    assert counts["+50 to +100%"] == 1 and counts["below −50%"] == 1 and sum(counts.values()) == 2


def test_the_summary_without_gold_is_empty(corpus, base, dsm, maps):
    assert comparison.corpus_summary(corpus, base, dsm, "attnlrp", "en").pairs == 0


def _pairs_with_gold(corpus, task, model_a, model_b, values, word, prefix):
    """One note per (before, after): maps of both models scoring `word` so, and gold evidence on it."""
    for i, (before, after) in enumerate(values):
        note = Note.objects.create(corpus=corpus, external_id=f"{prefix}{i}", text=TEXT)
        add_map(note, task, model_a, {word: before})
        add_map(note, task, model_b, {word: after})
        Annotation.objects.create(
            note=note, task=task, label="y", annotator_name="gold", evidence=[list(word_span(TEXT, word))]
        )


def test_the_summary_gives_each_tasks_change_with_a_paired_bootstrap_ci(corpus, tasks, base, dsm):
    heart = [(0.5, 0.75), (0.25, 0.5), (0.5, 0.625)]  # +50%, +100%, +25%: up on every pair
    pacemaker = [(1.0, 0.5), (0.5, 0.5), (0.0, 0.5)]  # -50%, 0, undefined
    _pairs_with_gold(corpus, tasks["heart"], base, dsm, heart, "130", "h")
    _pairs_with_gold(corpus, tasks["pacemaker"], base, dsm, pacemaker, "Pacemaker", "p")
    summary = comparison.corpus_summary(corpus, base, dsm, "attnlrp", "en")
    by_task = {row.task.slug: row for row in summary.per_task}
    assert [row.task.description for row in summary.per_task] == ["heart rate", "presence of pacemaker"]
    up = by_task["heart-rate"]
    assert (up.pairs, up.undefined) == (3, 0)
    assert up.change.result == relative_change_bootstrap(*zip(*heart), comparison.SUMMARY_RESAMPLES, seed=0)
    assert up.change.result.diff == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert up.change.result.low > 0 and up.change.result.p_value == pytest.approx(2 / 1001)
    mixed = by_task["presence-of-pacemaker"]
    assert (mixed.pairs, mixed.undefined) == (2, 1) and mixed.change.result.diff == pytest.approx(-0.25)
    assert mixed.change.result.low == pytest.approx(-0.5) and mixed.change.result.high == pytest.approx(0.0)
    everything = heart + pacemaker
    assert summary.overall.result == relative_change_bootstrap(*zip(*everything), 1000, seed=0)
    assert summary.overall.result.diff == pytest.approx(summary.mean_change)
    assert summary.overall.ratio_of_sums == relative_change_bootstrap(
        *zip(*everything), 1000, seed=0, statistic="ratio_of_sums"
    )
    assert summary.overall.ratio_of_sums.diff == pytest.approx(summary.ratio_of_sums_change)
    assert (summary.gold_pairs, summary.first_maps, summary.second_maps) == (6, 6, 6)


def test_the_summary_counts_the_annotated_pairs_each_model_has_maps_for(corpus, tasks, base, dsm):
    for i in range(3):
        note = Note.objects.create(corpus=corpus, external_id=f"b{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": 0.5})
        Annotation.objects.create(
            note=note, task=tasks["heart"], label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
        )
    summary = comparison.corpus_summary(corpus, base, dsm, "attnlrp", "en")
    assert (summary.pairs, summary.gold_pairs, summary.first_maps, summary.second_maps) == (0, 3, 3, 0)
    assert summary.overall is None and summary.per_task == []


def test_the_partner_of_a_model_is_its_child_else_its_parent(base, dsm):
    project = default_project().pk
    assert comparison.partner_for(base, project) == dsm and comparison.partner_for(dsm, project) == base
    assert comparison.partner_for(None, project) is None
