"""webapp.lib.rendering: segments of a note with relevance, peaks and gold; their HTML;
word-level heat and comparison of two tokenisations."""

import html
import re

import numpy as np
import pytest

from tests.webapp.review.fabricate import TEXT, tokens, word_span
from webapp.lib import rendering
from webapp.lib.rendering import Segment


def strip_tags(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_the_segments_cover_the_text_exactly_once_in_order():
    offsets = tokens(TEXT)
    segs = rendering.segments(TEXT, offsets, np.linspace(0, 1, len(offsets)))
    assert segs[0].start == 0 and segs[-1].end == len(TEXT)
    assert all(a.end == b.start for a, b in zip(segs, segs[1:]))
    assert "".join(TEXT[s.start : s.end] for s in segs) == TEXT


def test_a_token_gets_its_score_and_colour_level_and_whitespace_gets_none():
    text = "HR 130"
    segs = rendering.segments(text, [(0, 2), (3, 6)], [0.0, 0.95])
    assert segs == [
        Segment(0, 2, 0.0, 0, None, False),
        Segment(2, 3, None, None, None, False),
        Segment(3, 6, pytest.approx(0.95), 7, None, False),
    ]


@pytest.mark.parametrize(
    "score, level",
    [(0.0, 0), (0.124, 0), (0.125, 1), (0.5, 4), (0.99, 7), (1.0, 7), (1.7, 7), (-0.3, 0), (float("nan"), 0)],
)
def test_scores_fall_in_eight_bins_clipped_to_the_unit_interval(score, level):
    assert rendering.score_level(score) == level


def test_the_text_is_cut_at_peak_and_gold_boundaries_inside_tokens():
    text = "tachycardic"
    segs = rendering.segments(text, [(0, 11)], [0.5], peaks=[(0, 5)], gold=[(3, 8)])
    assert [(s.start, s.end, s.peak, s.gold) for s in segs] == [
        (0, 3, 0, False),
        (3, 5, 0, True),
        (5, 8, None, True),
        (8, 11, None, False),
    ]
    assert all(s.score == 0.5 for s in segs)


def test_a_word_split_into_tokens_is_one_segment_with_its_hottest_tokens_heat():
    segs = rendering.segments("allopurinol", [(0, 6), (6, 11)], [0.2, 0.9])
    assert [(s.start, s.end, s.score, s.level) for s in segs] == [(0, 11, pytest.approx(0.9), 7)]


def test_punctuation_and_whitespace_carry_no_colour_even_inside_a_hot_token():
    text = "HR: 90."
    segs = rendering.segments(text, [(0, 3), (3, 7)], [0.8, 0.6])  # tokens "HR:" and " 90."
    assert [(text[s.start : s.end], s.level) for s in segs] == [("HR", 6), (": ", None), ("90", 4), (".", None)]


def test_heat_never_splits_a_word_on_random_tokenisations():
    from benchmarks.peaks import bpe_like_offsets, synthetic_note

    rng = np.random.default_rng(1)
    for _ in range(30):
        text = synthetic_note(rng, 300)
        offsets = bpe_like_offsets(text, rng)
        segs = rendering.segments(text, offsets, rng.random(len(offsets)))
        for word in re.finditer(r"\w+", text):
            inside = [s for s in segs if s.start < word.end() and s.end > word.start()]
            assert len({s.score for s in inside}) == 1  # one heat over the whole word
        assert all(s.score is None for s in segs if not re.search(r"\w", text[s.start : s.end]))


def test_spans_and_offsets_past_the_text_are_cut_to_it():
    segs = rendering.segments("abc", [(0, 10)], [0.3], peaks=[(1, 50)], gold=[(-4, 1)])
    assert [(s.start, s.end, s.peak, s.gold) for s in segs] == [(0, 1, None, True), (1, 3, 0, False)]


def test_the_html_text_is_the_note_as_written_escaped():
    offsets = tokens(TEXT)
    a, b = word_span(TEXT, "130")
    markup = rendering.segments_html(
        TEXT, rendering.segments(TEXT, offsets, np.full(len(offsets), 0.6), [(a, b)], [word_span(TEXT, "male")])
    )
    assert strip_tags(markup) == TEXT  # newlines, double spaces and quotes kept
    assert "<male>" not in markup and "&lt;" in markup and "&amp;" in markup
    assert "\n\n" in markup


def test_each_peak_is_one_mark_numbered_by_css_not_by_text():
    text = "HR 130 bpm tachycardic"
    offsets = tokens(text)
    peaks = [word_span(text, "130"), (word_span(text, "bpm")[0], word_span(text, "tachycardic")[1])]
    markup = rendering.segments_html(
        text, rendering.segments(text, offsets, [0.1, 0.9, 0.5, 0.8], peaks), peak_classes=["mine-accept", "undecided"]
    )
    assert markup.count("<mark") == 2 and markup.count("</mark>") == 2
    assert '<mark class="peak mine-accept" id="peak-0" data-peak="0" data-n="1"' in markup
    assert 'data-n="2"' in markup and ">2<" not in markup
    second = markup[markup.index('id="peak-1"') :]
    assert strip_tags(second[second.index(">") + 1 : second.index("</mark>")]) == "bpm tachycardic"


def test_gold_segments_carry_the_gold_class_and_a_score_title():
    markup = rendering.segments_html(
        "HR 130", rendering.segments("HR 130", [(0, 2), (3, 6)], [0.2, 0.9], gold=[(3, 6)])
    )
    assert '<span class="r7 g" title="0.90">130</span>' in markup
    assert '<span class="r1" title="0.20">HR</span>' in markup


def test_two_touching_peaks_are_two_marks():
    segs = rendering.segments("abcd", [(0, 2), (2, 4)], [0.9, 0.9], peaks=[(0, 2), (2, 4)])
    markup = rendering.segments_html("abcd", segs)
    assert markup.count("<mark") == 2


def test_the_legend_covers_zero_to_one_in_eight_bins():
    legend = rendering.legend()
    assert len(legend) == rendering.LEVELS == 8
    assert legend[0]["low"] == 0 and legend[-1]["high"] == 1
    assert all(a["high"] == b["low"] for a, b in zip(legend, legend[1:]))


# ---------------------------------------------------------------- two maps


def test_a_map_projects_onto_another_tokenisation_by_character_weighted_mean():
    # first map: "tachy|cardic" as two tokens; second: one token
    projected = rendering.project_scores([(0, 5), (5, 11)], [1.0, 0.0], [(0, 11)], 11)
    assert projected == pytest.approx([5 / 11])
    same = rendering.project_scores([(0, 2), (3, 6)], [0.2, 0.9], [(0, 2), (3, 6)], 6)
    assert same == pytest.approx([0.2, 0.9])


def test_the_difference_map_compares_words_whatever_the_tokenisations():
    text = "tachycardic, afebrile"
    segs = rendering.diff_segments(text, [(0, 5), (5, 12), (12, 21)], [1.0, 0.0, 0.1], [(0, 11), (11, 21)], [0.5, 0.9])
    assert [(text[s.start : s.end], s.first, s.second) for s in segs] == [
        ("tachycardic", 1.0, 0.5),
        (", ", None, None),
        ("afebrile", pytest.approx(0.1), pytest.approx(0.9)),
    ]
    assert segs[0].level > 0 and segs[2].level < 0  # first higher, then second higher


@pytest.mark.parametrize(
    "difference, level",
    [(0.0, 0), (0.09, 0), (-0.09, 0), (0.12, 1), (0.3, 1), (0.4, 2), (-0.6, -3), (0.99, 4), (-2.0, -4)],
)
def test_differences_fall_in_signed_bins_around_a_neutral_band(difference, level):
    assert rendering.diff_level(difference) == level


def test_the_difference_html_keeps_the_text_and_marks_both_sides():
    text = "a <b> c"
    markup = rendering.diff_html(
        text,
        rendering.diff_segments(
            text, [(0, 1), (2, 5), (6, 7)], [0.9, 0.1, 0.5], [(0, 1), (2, 5), (6, 7)], [0.1, 0.9, 0.5]
        ),
    )
    assert strip_tags(markup) == text
    assert 'class="dA4"' in markup and 'class="dB4"' in markup and 'class="d0"' in markup


def test_same_tokens_compares_offsets():
    assert rendering.same_tokens([(0, 1), (1, 2)], np.array([[0, 1], [1, 2]]))
    assert not rendering.same_tokens([(0, 1)], [(0, 2)])
    assert not rendering.same_tokens([(0, 1)], [(0, 1), (1, 2)])


def test_token_levels_agree_with_score_level():
    scores = [0.0, 0.124, 0.125, 0.5, 0.99, 1.0, 1.7, -0.3, float("nan"), float("inf")]
    assert rendering.token_levels(scores).tolist() == [rendering.score_level(s) for s in scores]
