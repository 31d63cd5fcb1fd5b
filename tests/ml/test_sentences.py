"""ml.sentences: units of text, token-to-unit assignment against a plain loop, the aggregations."""

from __future__ import annotations

import numpy as np
import pytest

from ml.sentences import aggregate, levels, units

NOTE = (
    "Vital signs: HR 130 bpm. BP 210/95.\n\nOn warfarin p. o. since 2019; INR 3.5!\r\n"
    "No chest pain, 67 y.o. Seen 2019. Fine."
)


def texts(spans):
    return [NOTE[a:b] for a, b in spans]


def test_lines_are_split_at_line_breaks_without_blank_lines_or_surrounding_space():
    assert texts(units(NOTE, "line")) == [
        "Vital signs: HR 130 bpm. BP 210/95.",
        "On warfarin p. o. since 2019; INR 3.5!",
        "No chest pain, 67 y.o. Seen 2019. Fine.",
    ]


def test_sentences_end_at_punctuation_but_not_after_numbers_or_single_letters():
    assert texts(units(NOTE, "sentence")) == [
        "Vital signs: HR 130 bpm.",
        "BP 210/95.",
        "On warfarin p. o. since 2019;",
        "INR 3.5!",
        "No chest pain, 67 y.o. Seen 2019.",
        "Fine.",
    ]


def test_units_cover_every_non_space_character_once_in_order():
    rng = np.random.default_rng(0)
    words = ["a.", "b", "3.", "x!", "end.", "\n", "  ", "p.", "o;", "\r\n"]
    text = " ".join(rng.choice(words, size=400))
    for by in ("sentence", "line"):
        spans = units(text, by)
        assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))
        inside = np.zeros(len(text), bool)
        for a, b in spans:
            inside[a:b] = True
        assert all(inside[i] for i in range(len(text)) if not text[i].isspace())


def plain(spans, offsets, scores, how):
    """The textbook loop: a token goes to the unit holding its last character."""
    out = []
    for a, b in spans:
        held = [s for (x, y), s in zip(offsets, scores) if y > x and a <= y - 1 < b]
        out.append(None if not held else max(held) if how == "max" else np.mean(held) if how == "mean" else sum(held))
    return out


@pytest.mark.parametrize("how", ["max", "mean", "sum"])
def test_aggregation_equals_a_plain_loop(how):
    rng = np.random.default_rng(1)
    cuts = sorted(set(rng.integers(0, len(NOTE), 30).tolist()) | {0, len(NOTE)})
    offsets = np.array(list(zip(cuts, cuts[1:])))[:-3]  # the map stops before the note's end
    scores = rng.random(len(offsets))
    spans = units(NOTE, "sentence")
    got = [u.value for u in aggregate(spans, offsets, scores, how)]
    want = plain(spans, offsets, scores, how)
    # Same float64 sums in another order: a few ulps of values below ~10.
    assert [g is None for g in got] == [w is None for w in want]
    assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None], abs=1e-12)


def test_a_sentence_beyond_the_map_has_no_value_and_levels_are_relative_to_the_top():
    spans = units(NOTE, "line")
    offsets = np.array([[0, 5], [6, 11], [13, 15]])
    result = aggregate(spans, offsets, [0.25, 0.5, 0.1])
    assert [u.value for u in result] == [0.5, None, None]
    assert levels(result) == [7, None, None]
    assert levels(aggregate(spans, [[0, 5], [37, 39]], [1.0, 0.3])) == [7, 2, None]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="by must"):
        units(NOTE, "paragraph")
    with pytest.raises(ValueError, match="how must"):
        aggregate([(0, 3)], [[0, 1]], [1.0], "median")
