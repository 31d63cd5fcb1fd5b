"""Peaks: smoothing, thresholds, many maps at once, word extension. Hand-computed answers."""
import math

import numpy as np
import pytest

import ml.peaks as peaks_module
from ml.benchmarks.peaks import python_loop_peaks, reference_loop_peaks
from ml.peaks import extend_to_words, find_peaks, find_peaks_many, peak_char_spans, smooth

# kernel 3, sigma 1: weights exp(-x^2/2) / sum at x = -1, 0, 1
W1 = math.exp(-0.5) / (1 + 2 * math.exp(-0.5))  # 0.27407
W0 = 1 / (1 + 2 * math.exp(-0.5))  # 0.45186


# ---------------------------------------------------------------- smoothing


def test_kernel_3_smooths_an_impulse_with_the_gaussian_weights():
    assert smooth([0, 0, 1, 0, 0]) == pytest.approx([0, W1, W0, W1, 0])


def test_smoothing_reflects_at_the_edges():
    # scipy 'reflect': the token before the first is the first itself
    assert smooth([1, 0, 0]) == pytest.approx([W0 + W1, W1, 0])


def test_kernel_1_and_kernel_2_do_not_smooth():
    x = [0.1, 0.9, 0.3]
    assert smooth(x, kernel_size=1).tolist() == x
    assert smooth(x, kernel_size=2).tolist() == x


def test_kernel_4_smooths_like_kernel_3():
    x = np.random.default_rng(0).random(20)
    assert np.array_equal(smooth(x, kernel_size=4), smooth(x, kernel_size=3))


# ---------------------------------------------------------------- find_peaks


def test_an_impulse_gives_one_peak_over_its_smoothed_neighbourhood():
    # smoothed: 0, .274, .452, .274, 0 -> >= .2 on tokens 1..3, .452 >= .4
    assert find_peaks([0, 0, 1, 0, 0]) == [(1, 4)]


def test_a_run_needs_a_smoothed_token_at_the_upper_threshold():
    assert find_peaks([0, 0, 1, 0, 0], upper=0.46) == []  # the smoothed max is .452 < .46


def test_upper_threshold_uses_smoothed_scores_not_raw_ones():
    # raw 0.5 >= 0.4 but smoothed it is 0.226: a low run without a high token
    assert find_peaks([0, 0, 0.5, 0, 0]) == []


def test_kernel_1_takes_runs_of_the_raw_scores():
    scores = [0.1, 0.3, 0.5, 0.1, 0.25, 0.3, 0.0, 0.9]
    assert find_peaks(scores, kernel_size=1) == [(1, 3), (7, 8)]


def test_thresholds_are_inclusive_by_default():
    assert find_peaks([0.2, 0.4, 0.1], kernel_size=1) == [(0, 2)]


def test_strict_comparison_is_the_reference_codes():
    assert find_peaks([0.2, 0.4, 0.1], kernel_size=1, strict=True) == []
    assert find_peaks([0.2, 0.41, 0.1], kernel_size=1, strict=True) == [(1, 2)]


def test_empty_map_has_no_peaks():
    assert find_peaks([]) == []
    assert find_peaks(np.zeros(0, np.float32)) == []


def test_a_single_token_map():
    assert find_peaks([0.9]) == [(0, 1)]  # reflect: the smoothed value stays 0.9
    assert find_peaks([0.1]) == []


def test_a_constant_map_is_one_peak_or_none():
    assert find_peaks([0.5] * 6) == [(0, 6)]
    assert find_peaks([0.3] * 6) == []  # low everywhere, high nowhere
    assert find_peaks([0.0] * 6) == []


def test_a_peak_can_touch_both_ends_of_the_map():
    assert find_peaks([0.9, 0.9, 0.0, 0.0, 0.0, 0.9], kernel_size=1) == [(0, 2), (5, 6)]


def test_lower_equal_upper_is_allowed():
    assert find_peaks([0.1, 0.4, 0.4, 0.1], kernel_size=1, lower=0.4, upper=0.4) == [(1, 3)]


def test_nan_is_refused_with_its_position():
    with pytest.raises(ValueError, match=r"NaN.*token 2"):
        find_peaks([0.1, 0.2, math.nan])
    with pytest.raises(ValueError, match="NaN or infinity"):
        find_peaks([0.1, math.inf])


@pytest.mark.parametrize(
    "params",
    [
        {"kernel_size": 0},
        {"kernel_size": 2.5},
        {"kernel_size": True},
        {"sigma": 0},
        {"sigma": -1.0},
        {"sigma": math.nan},
        {"lower": -0.1},
        {"lower": 0.5, "upper": 0.4},
        {"upper": math.inf},
    ],
)
def test_bad_parameters_are_refused(params):
    with pytest.raises(ValueError):
        find_peaks([0.5, 0.5], **params)
    with pytest.raises(ValueError):
        find_peaks_many([[0.5, 0.5]], **params)


def test_a_two_dimensional_map_is_refused():
    with pytest.raises(ValueError, match="one-dimensional"):
        find_peaks([[0.1, 0.2]])


# ---------------------------------------------------------------- many maps


def _random_maps(rng, n_maps):
    maps = []
    for _ in range(n_maps):
        n = int(rng.choice([0, 1, 2, 3, 4, 5, 7, 30, 120]))
        m = rng.random(n) ** 2
        if rng.random() < 0.3:
            m = np.round(m * 5) / 5  # exact ties with the thresholds
        maps.append(m.astype(np.float32) if rng.random() < 0.5 else m)
    return maps


@pytest.mark.parametrize("kernel_size,sigma", [(1, 1.0), (2, 1.0), (3, 1.0), (3, 0.5), (5, 2.0), (9, 1.5)])
@pytest.mark.parametrize("strict", [False, True])
def test_many_maps_equal_one_at_a_time(kernel_size, sigma, strict, monkeypatch):
    monkeypatch.setattr(peaks_module, "BATCH_TOKENS", 50)  # many batches, maps across batches
    rng = np.random.default_rng(kernel_size * 10 + int(strict))
    maps = _random_maps(rng, 80)
    params = {"kernel_size": kernel_size, "sigma": sigma, "lower": 0.2, "upper": 0.4, "strict": strict}
    expected = [find_peaks(m, **params) for m in maps]
    assert find_peaks_many(maps, **params) == expected
    assert any(expected)


def test_many_maps_equal_the_python_loops():
    rng = np.random.default_rng(7)
    maps = _random_maps(rng, 60)
    for params in ({}, {"kernel_size": 5, "sigma": 2.0}, {"kernel_size": 1, "strict": True}):
        fast = find_peaks_many(maps, **params)
        assert fast == [python_loop_peaks(m, **params) for m in maps]
        assert fast == [reference_loop_peaks(m, **params) for m in maps]


def test_many_accepts_a_two_dimensional_array_and_a_generator():
    rows = np.random.default_rng(3).random((20, 15))
    expected = [find_peaks(r) for r in rows]
    assert find_peaks_many(rows) == expected
    assert find_peaks_many(r for r in rows) == expected


def test_runs_do_not_cross_from_one_map_into_the_next():
    assert find_peaks_many([[0.0, 0.9], [0.9, 0.0], [], [0.9]], kernel_size=1) == [[(1, 2)], [(0, 1)], [], [(0, 1)]]


def test_many_names_the_map_with_a_nan():
    with pytest.raises(ValueError, match=r"map 2 .*token 1"):
        find_peaks_many([[0.1], [0.2, 0.3], [0.1, math.nan]])


def test_many_of_nothing_is_nothing():
    assert find_peaks_many([]) == []
    assert find_peaks_many([[], []]) == [[], []]


# ---------------------------------------------------------------- words

# "Pt has tachycardia, HR 120." split as a BPE tokenizer would (leading spaces in tokens)
TEXT = "Pt has tachycardia, HR 120."
OFFSETS = [(0, 2), (2, 6), (6, 12), (12, 16), (16, 18), (18, 19), (19, 22), (22, 26), (26, 27)]
#          Pt      ' has'  ' tachy' 'card'    'ia'      ','       ' HR'     ' 120'    '.'


def test_a_span_inside_a_word_grows_to_the_whole_word():
    assert extend_to_words([(3, 4)], OFFSETS, TEXT) == [(2, 5)]
    assert peak_char_spans([(2, 5)], OFFSETS, TEXT) == [(7, 18)]
    assert TEXT[7:18] == "tachycardia"


def test_a_span_at_the_end_of_a_word_grows_to_its_start():
    assert extend_to_words([(4, 6)], OFFSETS, TEXT) == [(2, 6)]
    assert peak_char_spans([(2, 6)], OFFSETS, TEXT) == [(7, 19)]  # "tachycardia,"


def test_a_punctuation_span_is_left_alone():
    assert extend_to_words([(5, 6)], OFFSETS, TEXT) == [(5, 6)]
    assert extend_to_words([(8, 9)], OFFSETS, TEXT) == [(8, 9)]


def test_whole_words_are_unchanged_and_leading_spaces_are_trimmed():
    assert extend_to_words([(6, 8)], OFFSETS, TEXT) == [(6, 8)]
    assert peak_char_spans([(6, 8)], OFFSETS, TEXT) == [(20, 26)]  # "HR 120", no leading space
    assert peak_char_spans([(6, 8)], OFFSETS) == [(19, 26)]  # without the text: raw offsets


def test_spans_that_overlap_after_extension_merge():
    assert extend_to_words([(2, 3), (4, 5)], OFFSETS, TEXT) == [(2, 5)]
    assert extend_to_words([(4, 5), (3, 4), (7, 8)], OFFSETS, TEXT) == [(2, 5), (7, 8)]


def test_spans_that_only_touch_stay_apart():
    assert extend_to_words([(0, 1), (1, 2)], OFFSETS, TEXT) == [(0, 1), (1, 2)]


def test_a_word_split_in_three_without_spaces_in_offsets():
    # a tokenizer that reports offsets without the leading space (trim_offsets)
    text = "no Müllerian duct"
    offsets = [(0, 2), (3, 5), (5, 8), (8, 12), (13, 17)]  # no | Mü | ller | ian | duct
    assert extend_to_words([(2, 3)], offsets, text) == [(1, 4)]
    assert peak_char_spans([(1, 4)], offsets, text) == [(3, 12)]


def test_a_hyphen_separates_words():
    text = "heart-rate"
    offsets = [(0, 5), (5, 6), (6, 10)]
    assert extend_to_words([(0, 1)], offsets, text) == [(0, 1)]


def test_a_whitespace_only_span_keeps_its_characters():
    text = "a \n b"
    offsets = [(0, 1), (1, 3), (3, 5)]
    assert extend_to_words([(1, 2)], offsets, text) == [(1, 2)]
    assert peak_char_spans([(1, 2)], offsets, text) == [(1, 3)]


def test_tokens_sharing_one_character_merge():
    text = "ok \U0001F600 ok"
    offsets = [(0, 2), (2, 3), (3, 4), (3, 4), (4, 7)]  # ok | ' ' | two byte tokens of the emoji | ' ok'
    assert extend_to_words([(2, 3), (3, 4)], offsets, text) == [(2, 4)]
    assert extend_to_words([(2, 3)], offsets, text) == [(2, 4)]  # a character is never cut either
    assert peak_char_spans([(2, 4)], offsets, text) == [(3, 4)]


def test_span_outside_the_note_is_refused():
    with pytest.raises(ValueError, match="not inside"):
        extend_to_words([(8, 10)], OFFSETS, TEXT)
    with pytest.raises(ValueError, match="offsets reach"):
        extend_to_words([(0, 1)], [(0, 50)], TEXT)


def test_no_spans_no_work():
    assert extend_to_words([], OFFSETS, TEXT) == []
    assert peak_char_spans([], OFFSETS, TEXT) == []


def test_punctuation_inside_a_word_token_goes_with_the_word():
    text = "tachycardia, HR"
    offsets = [(0, 5), (5, 9), (9, 12), (12, 15)]  # tachy | card | 'ia,' | ' HR'
    assert extend_to_words([(2, 3)], offsets, text) == [(0, 3)]
    assert peak_char_spans([(0, 3)], offsets, text) == [(0, 12)]  # "tachycardia,"


def test_integer_maps_are_scores_too():
    assert find_peaks_many([[0, 1, 0], [1]]) == [find_peaks([0, 1, 0]), find_peaks([1])] == [[(0, 3)], [(0, 1)]]
