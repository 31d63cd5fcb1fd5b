"""ml.peaks: PeakParams, the trimming rule, word heat and the batch path (one implementation)."""

import math
import re

import numpy as np
import pytest

from benchmarks.peaks import bpe_like_offsets, synthetic_note
from ml.peaks import (
    PAPER,
    PeakParams,
    extend_to_words,
    find_peaks,
    note_peaks,
    peak_char_spans,
    peaks_of_arrays,
    trim_peaks,
    word_heat,
    words_of,
)

SHARP = PAPER.with_(kernel_size=1)  # no smoothing: a token's own score decides


def bpe(text):
    """GPT-2-style pieces with their leading space, like the real tokenizers' offsets."""
    return np.array([m.span() for m in re.finditer(r" ?\w+| ?[^\w\s]+|\s+", text)], np.int32)


def peaks_texts(text, scores, params=SHARP):
    offsets = bpe(text)
    assert len(offsets) == len(scores), [text[a:b] for a, b in offsets]
    _, chars = note_peaks(np.array(scores, float), offsets, text, params)
    return [text[a:b] for a, b in chars]


# ---------------------------------------------------------------- PeakParams


def test_the_defaults_are_the_papers_values():
    assert PeakParams() == PAPER
    assert (PAPER.kernel_size, PAPER.sigma, PAPER.lower, PAPER.upper, PAPER.strict, PAPER.trim) == (
        3,
        1.0,
        0.2,
        0.4,
        False,
        True,
    )


def test_params_are_frozen_and_validated():
    with pytest.raises(AttributeError):
        PAPER.lower = 0.3
    with pytest.raises(ValueError, match="lower <= upper"):
        PeakParams(lower=0.5, upper=0.4)
    with pytest.raises(ValueError, match="trim must be true or false"):
        PeakParams(trim="yes")


def test_from_mapping_refuses_unknown_keys_and_round_trips():
    assert PeakParams.from_mapping(PAPER.to_dict()) == PAPER
    assert PeakParams.from_mapping({"kernel_size": 1}) == SHARP
    with pytest.raises(ValueError, match="unknown peak parameter"):
        PeakParams.from_mapping({"kernel": 3})


def test_a_dict_is_not_accepted_in_place_of_params():
    with pytest.raises(TypeError, match="PeakParams"):
        find_peaks([0.5, 0.9], {"kernel_size": 1})


# ---------------------------------------------------------------- trimming


def test_a_lone_full_stop_yields_no_peak():
    assert peaks_texts("Stable. Discharged", [0.0, 1.0, 0.0]) == []


def test_a_colon_and_space_yield_no_peak():
    assert peaks_texts("HR: 90", [0.0, 1.0, 0.0]) == []


def test_full_stop_then_hr_becomes_hr():
    # tokens "Vitals", ".", " HR", " 130": the run is ". HR"
    assert peaks_texts("Vitals. HR 130", [0.0, 0.9, 0.9, 0.0]) == ["HR"]
    assert peaks_texts("Vitals. HR 130", [0.0, 0.9, 0.9, 0.0], SHARP.with_(trim=False)) == [". HR"]


def test_colon_then_number_becomes_the_number():
    assert peaks_texts("rate: 210 bpm", [0.0, 0.9, 0.9, 0.0]) == ["210"]


def test_punctuation_inside_a_peak_stays():
    assert peaks_texts("pH 7.4 today", [0.9, 0.9, 0.9, 0.9, 0.0]) == ["pH 7.4"]


def test_the_token_span_shrinks_with_the_characters():
    text = "Vitals. HR 130"
    offsets = bpe(text)
    tokens, chars = note_peaks(np.array([0.0, 0.9, 0.9, 0.0]), offsets, text, SHARP)
    assert tokens == [(2, 3)] and chars == [(8, 10)]  # the " HR" token only


def test_trimming_runs_after_word_extension():
    # "tachycardia" in two tokens, the run on the second one and the comma after it
    text = "pt tachycardia, stable"
    offsets = np.array([(0, 2), (2, 8), (8, 14), (14, 15), (15, 22)], np.int32)
    tokens, chars = note_peaks(np.array([0.0, 0.0, 0.9, 0.9, 0.0]), offsets, text, SHARP)
    assert [text[a:b] for a, b in chars] == ["tachycardia"] and tokens == [(1, 3)]


def test_trim_peaks_drops_only_peaks_without_letters_or_digits():
    text = "a . (b) -- 5"
    offsets = np.array([(0, 1), (1, 3), (3, 7), (7, 10), (10, 12)], np.int32)
    spans = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    tokens, chars = trim_peaks(spans, peak_char_spans(spans, offsets, text), offsets, text)
    assert [text[a:b] for a, b in chars] == ["a", "b", "5"]
    assert tokens == [(0, 1), (2, 3), (4, 5)]


def test_untrimmed_peaks_are_the_word_extension_as_before():
    rng = np.random.default_rng(3)
    for _ in range(50):
        text = synthetic_note(rng, 400)
        offsets = bpe_like_offsets(text, rng)
        scores = rng.random(len(offsets)) ** 4
        tokens, chars = note_peaks(scores, offsets, text, PAPER.with_(trim=False))
        words = extend_to_words(find_peaks(scores), offsets, text)
        assert tokens == words and chars == peak_char_spans(words, offsets, text)


def test_trimmed_peaks_never_start_or_end_in_punctuation_on_random_notes():
    rng = np.random.default_rng(4)
    for _ in range(100):
        text = synthetic_note(rng, 400)
        offsets = bpe_like_offsets(text, rng)
        scores = rng.random(len(offsets)) ** 4
        tokens, chars = note_peaks(scores, offsets, text)
        untrimmed, _ = note_peaks(scores, offsets, text, PAPER.with_(trim=False))
        assert len(tokens) <= len(untrimmed)
        for (s, e), (a, b) in zip(tokens, chars):
            assert text[a].isalnum() and text[b - 1].isalnum()
            # every kept token overlaps the trimmed characters, and they hold the characters
            assert offsets[s, 0] < b and offsets[e - 1, 1] > a
            assert offsets[s:e, 0].min() <= a and offsets[s:e, 1].max() >= b
            # inside one of the untrimmed peaks
            assert any(us <= s and e <= ue for us, ue in untrimmed)


# ---------------------------------------------------------------- word heat


def test_a_word_split_in_tokens_gets_the_maximum_of_its_tokens():
    text = "allopurinol 300"
    words, heat = word_heat(text, [(0, 6), (6, 11), (11, 15)], [0.2, 0.7, 0.1])
    assert words == [(0, 11), (12, 15)]
    assert heat.tolist() == [0.7, 0.1]


def test_punctuation_and_whitespace_are_not_words():
    assert words_of("HR: 90, BP 120/80.") == [(0, 2), (4, 6), (8, 10), (11, 14), (15, 17)]


def test_a_word_the_map_does_not_reach_has_no_heat():
    words, heat = word_heat("fever and cough", [(0, 5)], [0.5])
    assert heat[0] == 0.5 and math.isnan(heat[1]) and math.isnan(heat[2])


def test_word_heat_is_the_same_for_sorted_and_unsorted_offsets():
    rng = np.random.default_rng(5)
    for _ in range(30):
        text = synthetic_note(rng, 300)
        offsets = bpe_like_offsets(text, rng)
        scores = rng.random(len(offsets))
        words, fast = word_heat(text, offsets, scores)
        order = rng.permutation(len(offsets))  # unsorted: the per-character fallback
        _, slow = word_heat(text, offsets[order], scores[order])
        np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))
        np.testing.assert_allclose(fast[~np.isnan(fast)], slow[~np.isnan(slow)])
        # and the definition: the largest score of the tokens that share a character with the word
        for (a, b), h in zip(words, fast):
            touching = [sc for (s, e), sc in zip(offsets.tolist(), scores) if e > s and s < b and e > a]
            assert (max(touching) if touching else None) == (None if math.isnan(h) else h)


# ---------------------------------------------------------------- batch path


def test_batch_equals_one_note_at_a_time():
    rng = np.random.default_rng(6)
    keys, arrays, texts = [], [], {}
    for k in range(40):
        texts[k] = synthetic_note(rng, 300)
        offsets = bpe_like_offsets(texts[k], rng)
        arrays.append((offsets, rng.random(len(offsets)) ** 3))
        keys.append((k, k, 1))
    for params in (PAPER, PAPER.with_(trim=False), PAPER.with_(strict=True, kernel_size=1)):
        batch = peaks_of_arrays(keys, arrays, texts, params)
        for (_, note_id, _), (offsets, scores), peaks in zip(keys, arrays, batch):
            tokens, chars = note_peaks(scores, offsets, texts[note_id], params)
            assert list(peaks.word_spans) == tokens and list(peaks.char_spans) == chars
            assert peaks.count == len(tokens)


def test_a_map_past_the_end_of_its_note_does_not_fit():
    (peaks,) = peaks_of_arrays([(1, 1, 1)], [(np.array([(0, 50)]), np.array([1.0]))], {1: "short"}, PAPER)
    assert not peaks.fits and peaks.count == 0


def test_no_masked_example_masks_punctuation_alone():
    from ml.masking import Group, PeakItem, build_examples

    text = "Alert. HR 130 today."
    offsets = bpe(text)  # "Alert" "." " HR" " 130" " today" "."
    scores = np.array([0.9, 0.0, 0.0, 0.9, 0.0, 0.9])

    def labels(params):
        tokens, chars = note_peaks(scores, offsets, text, params)
        item = PeakItem("n1", "heart rate", text, [Group(c, t) for c, t in zip(chars, tokens)])
        return [e.label for e in build_examples([item])]

    assert labels(SHARP) == ["130"]  # "Alert" gives the left context; the final "." is no peak
    assert labels(SHARP.with_(trim=False)) == ["130", "."]  # the reference behaviour masked a lone "."
