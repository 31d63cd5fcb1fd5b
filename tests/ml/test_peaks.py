"""Peaks: smoothing, thresholds, many maps at once, word extension. Hand-computed answers, and
the word extension compared with the loop it replaced on thousands of random cases."""

import math

import numpy as np
import pytest

import ml.peaks as peaks_module
from benchmarks.peaks import (
    python_loop_peaks,
    reference_loop_peaks,
    word_extension,
)
from ml.peaks import (
    PeakParams,
    extend_to_words,
    extend_to_words_many,
    find_peaks,
    find_peaks_many,
    peak_char_spans,
    smooth,
)

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
    assert find_peaks([0, 0, 1, 0, 0], PeakParams(upper=0.46)) == []  # the smoothed max is .452 < .46


def test_upper_threshold_uses_smoothed_scores_not_raw_ones():
    # raw 0.5 >= 0.4 but smoothed it is 0.226: a low run without a high token
    assert find_peaks([0, 0, 0.5, 0, 0]) == []


def test_kernel_1_takes_runs_of_the_raw_scores():
    scores = [0.1, 0.3, 0.5, 0.1, 0.25, 0.3, 0.0, 0.9]
    assert find_peaks(scores, PeakParams(kernel_size=1)) == [(1, 3), (7, 8)]


def test_thresholds_are_inclusive_by_default():
    assert find_peaks([0.2, 0.4, 0.1], PeakParams(kernel_size=1)) == [(0, 2)]


def test_strict_comparison_is_the_reference_codes():
    assert find_peaks([0.2, 0.4, 0.1], PeakParams(kernel_size=1, strict=True)) == []
    assert find_peaks([0.2, 0.41, 0.1], PeakParams(kernel_size=1, strict=True)) == [(1, 2)]


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
    assert find_peaks([0.9, 0.9, 0.0, 0.0, 0.0, 0.9], PeakParams(kernel_size=1)) == [(0, 2), (5, 6)]


def test_lower_equal_upper_is_allowed():
    assert find_peaks([0.1, 0.4, 0.4, 0.1], PeakParams(kernel_size=1, lower=0.4, upper=0.4)) == [(1, 3)]


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
        find_peaks([0.5, 0.5], PeakParams(**params))
    with pytest.raises(ValueError):
        find_peaks_many([[0.5, 0.5]], PeakParams(**params))


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
    expected = [find_peaks(m, PeakParams(**params)) for m in maps]
    assert find_peaks_many(maps, PeakParams(**params)) == expected
    assert any(expected)


def test_many_maps_equal_the_python_loops():
    rng = np.random.default_rng(7)
    maps = _random_maps(rng, 60)
    for params in ({}, {"kernel_size": 5, "sigma": 2.0}, {"kernel_size": 1, "strict": True}):
        fast = find_peaks_many(maps, PeakParams(**params))
        assert fast == [python_loop_peaks(m, **params) for m in maps]
        assert fast == [reference_loop_peaks(m, **params) for m in maps]


def test_many_accepts_a_two_dimensional_array_and_a_generator():
    rows = np.random.default_rng(3).random((20, 15))
    expected = [find_peaks(r) for r in rows]
    assert find_peaks_many(rows) == expected
    assert find_peaks_many(r for r in rows) == expected


def test_runs_do_not_cross_from_one_map_into_the_next():
    assert find_peaks_many([[0.0, 0.9], [0.9, 0.0], [], [0.9]], PeakParams(kernel_size=1)) == [
        [(1, 2)],
        [(0, 1)],
        [],
        [(0, 1)],
    ]


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
    text = "ok \U0001f600 ok"
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


def test_words_and_characters_of_many_maps_at_once():
    items = [([(3, 4)], OFFSETS, TEXT), ([], OFFSETS, TEXT), ([(4, 5), (3, 4), (7, 8)], OFFSETS, TEXT)]
    assert extend_to_words_many(items) == [[(2, 5)], [], [(2, 5), (7, 8)]]
    assert extend_to_words_many(items, char_spans=True) == [
        ([(2, 5)], [(7, 18)]),
        ([], []),
        ([(2, 5), (7, 8)], [(7, 18), (23, 26)]),
    ]
    assert extend_to_words_many([]) == []


def test_unsorted_offsets_give_the_same_words():
    # a special token at (0, 0) after the note's tokens: offsets no longer sorted
    offsets = OFFSETS + [(0, 0)]
    assert extend_to_words([(3, 4)], offsets, TEXT) == [(2, 5)]
    assert extend_to_words([(8, 10)], offsets, TEXT) == [(0, 10)]  # its start 0 is in "Pt"
    assert peak_char_spans([(8, 10)], offsets, TEXT) == [(0, 27)]


# ---------------------------------------------------------------- words: against the old loop
#
# The reference is ml.peaks' word extension before it was vectorised, kept verbatim in the
# benchmark module (it is also the benchmark's baseline). The new one must give exactly its
# results, or raise exactly its errors.
from benchmarks.peaks import reference_extend_to_words as _reference_extend_to_words  # noqa: E402
from benchmarks.peaks import reference_peak_char_spans as _reference_peak_char_spans  # noqa: E402

Span = tuple[int, int]
_WORD_CHARS = "abcdxyzABXYZ0123456789_éßжñ中µ²½٣\U0001d400"  # \w (µ, ², ½, ٣ too), 𝐀 outside the BMP
_OTHER_CHARS = ",.;:-()/%°'!?+\u0301\u200b\U0001f600"  # not \w: a combining accent, a zero-width space, 😀
_SPACES = "  \n\t\u00a0\u2003\x1c\x85"  # str.isspace: no-break space, em space, \x1c, \x85 too


def _random_text(rng) -> str:
    parts = []
    for _ in range(int(rng.integers(0, 14))):
        kind = rng.random()
        if kind < 0.5:
            word = rng.choice(list(_WORD_CHARS), size=int(rng.integers(1, 9)))
            if rng.random() < 0.1:  # a combining accent inside a word cuts it in two
                word[int(rng.integers(len(word)))] = "\u0301"
            parts.append("".join(word))
        elif kind < 0.75:
            parts.append("".join(rng.choice(list(_OTHER_CHARS), size=int(rng.integers(1, 4)))))
        else:
            parts.append("".join(rng.choice(list(_SPACES), size=int(rng.choice([1, 1, 2, 3, 12])))))
    return "".join(parts)


def _random_offsets(rng, text: str) -> list[Span]:
    """Tokens as tokenizers make them, sorted: leading spaces or trimmed ones, words split
    anywhere, whitespace or punctuation alone, byte tokens sharing a character, zero-width
    tokens, tokens overlapping, a note cut at either end. Sometimes unsorted (a special token at (0, 0) at the end,
    a token over others, two tokens swapped)."""
    n = len(text)
    cuts = (
        sorted(set(rng.choice(np.arange(1, n), size=int(rng.integers(0, n)), replace=False).tolist())) if n > 1 else []
    )
    bounds = [0, *cuts, n] if n else []
    tokens = list(zip(bounds[:-1], bounds[1:]))
    if rng.random() < 0.3:  # trimmed offsets: no whitespace at a token's ends (gaps between tokens)
        trimmed = []
        for a, b in tokens:
            while a < b and text[a].isspace():
                a += 1
            while b > a and text[b - 1].isspace():
                b -= 1
            if a < b or rng.random() < 0.5:
                trimmed.append((a, b))
        tokens = trimmed
    out = []
    for a, b in tokens:
        if b - a == 1 and rng.random() < 0.2:
            out += [(a, b)] * int(rng.integers(2, 4))  # byte tokens of one character
        elif b - a > 1 and rng.random() < 0.1:
            out += [(a, a + 1), (a, a + 1), (a + 1, b)]  # a character in bytes, then the rest
        else:
            out.append((a, b))
        if rng.random() < 0.05:
            out.append((b, b))  # zero width
    for _ in range(int(rng.choice([0, 0, 0, 1, 3]))):  # tokens overlapping by more than a character
        if len(out) > 1:
            i = int(rng.integers(len(out) - 1))
            (a, b), (c, d) = out[i], out[i + 1]
            if rng.random() < 0.5:
                out[i] = (a, int(rng.integers(b, d + 1)))  # stretch the end, up to the next one's
            else:
                out[i + 1] = (int(rng.integers(a, c + 1)), d)  # stretch the start, back to the previous one's
    if out and rng.random() < 0.2:  # cut at the start or at the end
        k = int(rng.integers(0, len(out)))
        out = out[k:] if rng.random() < 0.5 else out[: k + 1]
    if out and rng.random() < 0.12:
        kind = rng.random()
        if kind < 0.4:
            out.append((0, 0))
        elif kind < 0.7:
            i = int(rng.integers(len(out)))
            out.insert(i, (out[i][0], out[-1][1]))  # one token over the following ones
        elif len(out) > 1:
            i = int(rng.integers(len(out) - 1))
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def _random_spans(rng, n_tokens: int) -> list[Span]:
    if n_tokens == 0:
        return []
    spans = []
    for _ in range(int(rng.choice([0, 1, 1, 2, 3, 5]))):
        kind = rng.random()
        if kind < 0.15 and spans:  # adjacent to, or overlapping, the previous span
            s = min(spans[-1][1] - int(rng.integers(0, 2)), n_tokens - 1)
        elif kind < 0.3:
            s = int(rng.choice([0, n_tokens - 1]))  # at an edge
        else:
            s = int(rng.integers(0, n_tokens))
        e = int(rng.integers(s + 1, min(n_tokens, s + int(rng.choice([1, 2, 4, n_tokens]))) + 1))
        spans.append((s, e) if rng.random() < 0.9 else (0, n_tokens))
    if spans and rng.random() < 0.1:
        spans.append(spans[0])  # twice the same span
    return spans


def _outcome(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ValueError as exc:
        return ("ValueError", str(exc))


def _as_given(rng, offsets):
    """The offsets as a caller might pass them: list of pairs, int32 (as decoded) or int64 array,
    a non-contiguous array."""
    kind = rng.random()
    if kind < 0.25:
        return offsets
    if kind < 0.75:
        return np.array(offsets, np.int32).reshape(-1, 2)
    array = np.array(offsets, np.int64).reshape(-1, 2)
    return array if kind < 0.9 else np.asfortranarray(array)


def _random_case(rng):
    text = _random_text(rng)
    offsets = _random_offsets(rng, text)
    return _random_spans(rng, len(offsets)), offsets, text


@pytest.mark.parametrize("seed", range(4))
def test_words_and_characters_equal_the_old_loop_on_random_notes(seed, monkeypatch):
    if seed % 2:
        monkeypatch.setattr(peaks_module, "BATCH_TOKENS", 50)  # extend_to_words_many: many batches
    rng = np.random.default_rng(1000 + seed)
    cases, n_merged, n_unsorted = [], 0, 0
    for _ in range(1_000):
        spans, offsets, text = _random_case(rng)
        given = _as_given(rng, offsets)
        expected = _reference_extend_to_words(spans, offsets, text)
        assert extend_to_words(spans, given, text) == expected, (spans, offsets, text)
        assert peak_char_spans(expected, given, text) == _reference_peak_char_spans(expected, offsets, text)
        assert peak_char_spans(spans, given, text) == _reference_peak_char_spans(spans, offsets, text)
        assert peak_char_spans(spans, given) == _reference_peak_char_spans(spans, offsets)
        cases.append((spans, given, text, expected))
        n_merged += len(expected) < len(set(spans))
        n_unsorted += offsets != sorted(offsets) or any(b < d for (_, b), (_, d) in zip(offsets[1:], offsets))
    items = [(spans, given, text) for spans, given, text, _ in cases]
    assert extend_to_words_many(items) == [expected for *_, expected in cases]
    assert extend_to_words_many(items, char_spans=True) == [
        (expected, _reference_peak_char_spans(expected, given, text)) for _, given, text, expected in cases
    ]
    assert n_merged > 20 and n_unsorted > 20  # the cases did reach merging and unsorted offsets


def test_word_extension_on_benchmark_notes_equals_the_old_loop():
    # longer notes tokenised as a BPE tokenizer would
    result = word_extension(n_maps=60, n_tokens=300, repeat=1)  # raises if new and old disagree
    assert result["maps_with_peaks"] > 40 and result["mean_note_chars"] > 1_500


def _random_bad_case(rng):
    spans, offsets, text = _random_case(rng)
    kind = rng.random()
    if kind < 0.4:
        n = len(offsets)
        bad = [(-1, 1), (0, n + 1), (2, 2), (3, 1), (n, n + 1)][int(rng.integers(5))]
        spans = spans[: int(rng.integers(0, len(spans) + 1))] + [bad] + spans
    elif kind < 0.8 and offsets:
        i = int(rng.integers(len(offsets)))
        a, b = offsets[i]
        offsets = list(offsets)
        offsets[i] = [(-1, b), (b + 1, b), (a, len(text) + 1), (a, b + 5)][int(rng.integers(4))]
    return spans, _as_given(rng, offsets), text


def test_bad_spans_and_offsets_raise_what_the_old_loop_raised():
    rng = np.random.default_rng(7)
    n_errors = 0
    for _ in range(1_500):
        spans, offsets, text = _random_bad_case(rng)
        for fn, ref in ((extend_to_words, _reference_extend_to_words), (peak_char_spans, _reference_peak_char_spans)):
            expected = _outcome(ref, spans, offsets, text)
            assert _outcome(fn, spans, offsets, text) == expected, (fn.__name__, spans, offsets, text)
            n_errors += isinstance(expected, tuple)
    assert n_errors > 500


@pytest.mark.parametrize("batch_tokens", [50, 1 << 16])
def test_many_raises_the_first_error_a_loop_would_raise(batch_tokens, monkeypatch):
    monkeypatch.setattr(peaks_module, "BATCH_TOKENS", batch_tokens)
    rng = np.random.default_rng(batch_tokens)
    n_errors = 0
    for _ in range(150):
        items = [_random_case(rng) if rng.random() < 0.9 else _random_bad_case(rng) for _ in range(20)]
        for char_spans in (False, True):

            def loop(items=items, char_spans=char_spans):
                out = []
                for spans, offsets, text in items:
                    words = _reference_extend_to_words(spans, offsets, text)
                    out.append((words, _reference_peak_char_spans(words, offsets, text)) if char_spans else words)
                return out

            expected = _outcome(loop)
            assert _outcome(extend_to_words_many, items, char_spans=char_spans) == expected
            n_errors += isinstance(expected, tuple)
    assert n_errors > 50
    assert _outcome(extend_to_words_many, [([(0, 1)], OFFSETS, TEXT), ([(0, 1)], "ab", TEXT)]) == _outcome(
        lambda: [extend_to_words([(0, 1)], OFFSETS, TEXT), extend_to_words([(0, 1)], "ab", TEXT)]
    )
