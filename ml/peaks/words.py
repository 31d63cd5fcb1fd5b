r"""Words and character spans of peaks: widening to whole words, trimming, and word heat.

`extend_to_words` widens token spans so that no span cuts a word; `peak_char_spans` gives
their character spans in the note; `extend_to_words_many` does both for many maps at once. They
work at the two ends of each span with binary searches in the (sorted) token offsets, not with
passes over all the tokens or the note (see below); same results as the numpy loop they
replaced (tests/ml/test_peaks.py compares them with it on thousands of random notes).

`trim_peaks` is the rule that makes a peak something a clinician reads as a finding: after word
extension, the characters at a peak's edges that are not a letter or a digit (punctuation,
whitespace, underscores) are cut off, the token span shrinks to the tokens that still overlap
what is left, and a peak with no letter or digit at all is dropped. ". HR" becomes "HR", ": 210"
becomes "210", a lone "." disappears. Punctuation INSIDE a peak stays ("7.4", "q.d.").

`word_heat` gives the heat the note view colours: one value per word (the same `\w+` words as
the extension), the MAXIMUM of the relevance of the tokens that cover the word's characters. Max,
not sum, so a word split into many tokens is not hotter than the same word as one token and the
heat keeps the scores' [0, 1] scale and the peak thresholds' meaning. Characters outside words
(punctuation, whitespace) get no heat.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence

import numpy as np

from ml.peaks.runs import BATCH_TOKENS, _gc_paused

Span = tuple[int, int]

_WORD = re.compile(r"\w+")
_WORD_CHAR = re.compile(r"\w")


# ---------------------------------------------------------------- words
#
# How extend_to_words is fast. Token offsets are sorted in practice (starts and ends both
# non-decreasing, as tokenizers give them; ml.codec even requires sorted starts), which a
# comparison or two over the whole array confirms. Then a token span [s, e)'s characters are
# [starts[s], ends[e-1]), and the tokens overlapping characters [a, b) are those between a
# binary search of `ends` for a and one of `starts` for b: each step of the extension is a few
# O(1) / O(log n) operations on Python ints (memoryviews of the offsets, so no token is
# converted), and a word is looked for only at a span's two ends (one dict lookup per character
# looked at; the regex itself, forwards for a word's end and on the reversed text for its start,
# only when a word is cut). Offsets that are not sorted take `_extend_unsorted`, the original
# numpy loop. Same results either way (tests/ml/test_peaks.py compares them with the original
# loop on thousands of random notes).


def extend_to_words(spans: Sequence[Span], offsets, text: str) -> list[Span]:
    """Widen token spans so that none cuts a word; merge spans that then overlap.

    A word is a maximal run of `\\w` characters (letters, digits, underscore; Unicode-aware) of
    `text`. `offsets[t] = (start, end)` is token t's character span in `text`. A span's
    characters (leading/trailing whitespace trimmed) are widened to the words they touch at
    either end, then the span takes every token overlapping those characters (so neither a word
    nor a character split into byte tokens is cut), until nothing changes.

    Tokens that hold no word character (punctuation, whitespace) join no word: a span of such
    tokens stays as it is, and punctuation inside a token of a word goes with the word ("ia,"
    as one token: extending to "tachycardia" takes the comma too). A hyphen separates words.
    Spans sharing a token or a character after extension are merged; spans that only touch are
    kept apart. Returned sorted by start.
    """
    off, is_sorted = _checked_offsets(offsets, text)
    if is_sorted:
        return _extend_sorted(spans, memoryview(off[:, 0]), memoryview(off[:, 1]), 0, len(off), text)
    return _extend_unsorted(spans, off, text)


def peak_char_spans(spans: Sequence[Span], offsets, text: str | None = None) -> list[Span]:
    """Character span `[start, end)` of each token span (aligned with `spans`). With `text`,
    leading and trailing whitespace is trimmed, unless the span holds only whitespace."""
    off, is_sorted = _checked_offsets(offsets, text)
    if is_sorted:
        return _char_spans_sorted(spans, memoryview(off[:, 0]), memoryview(off[:, 1]), 0, len(off), text)
    return _char_spans_unsorted(spans, off, text)


def extend_to_words_many(items, *, char_spans: bool = False) -> list:
    """`[extend_to_words(spans, offsets, text) for spans, offsets, text in items]`, or with
    `char_spans=True` the pairs `(words, peak_char_spans(words, offsets, text))`: the same
    results, and errors. The offsets of about BATCH_TOKENS tokens are checked at once, and once
    for both words and characters."""
    if not isinstance(items, (list, tuple)):
        items = list(items)
    sizes = [_size(item) for item in items]
    out: list = []
    with _gc_paused():  # a few small lists per map: the cyclic GC would rescan them
        i = 0
        while i < len(items):
            j, n_tokens = i + 1, sizes[i]
            while j < len(items) and n_tokens + sizes[j] <= BATCH_TOKENS:
                n_tokens += sizes[j]
                j += 1
            out += _words_of_batch(items[i:j], char_spans)
            i = j
    return out


def _size(item) -> int:
    try:
        return len(item[1])
    except (TypeError, IndexError):
        return 0  # not a (spans, offsets, text) item: extend_to_words will say


def _words_of_batch(items, char_spans: bool) -> list:
    try:
        ok, starts, ends, bases, lengths, arrays = _check_batch(items)
    except Exception:  # something is not what it should be: extend_to_words raises it, map by map
        ok = None
    out = []
    if ok is None:
        for spans, offsets, text in items:
            words = extend_to_words(spans, offsets, text)
            out.append((words, peak_char_spans(words, offsets, text)) if char_spans else words)
        return out
    for (spans, _, text), offsets, fast, lo, n in zip(items, arrays, ok, bases, lengths):
        if fast:
            words = _extend_sorted(spans, starts, ends, lo, n, text)
            out.append((words, _char_spans_sorted(words, starts, ends, lo, n, text)) if char_spans else words)
        else:  # unsorted, or an error to raise as extend_to_words raises it
            words = extend_to_words(spans, offsets, text)
            out.append((words, peak_char_spans(words, offsets, text)) if char_spans else words)
    return out


def _check_batch(items):
    """The offsets of several notes concatenated, and per note whether they are sorted and valid
    (the per-note checks of `_checked_offsets`, vectorised over the batch)."""
    arrays = [_offsets_array(offsets) for _, offsets, _ in items]
    lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))
    base = np.zeros(len(arrays), np.int64)
    np.cumsum(lengths[:-1], out=base[1:])
    ok = np.ones(len(arrays), bool)
    flat = np.concatenate(arrays)
    nonempty = np.flatnonzero(lengths)
    if nonempty.size:
        # per note: no negative width, starts and ends non-decreasing, first start >= 0 and last
        # end <= len(text) (then all are)
        first, last = base[nonempty], base[nonempty] + lengths[nonempty] - 1
        bad = flat[:, 1] < flat[:, 0]
        pairs = flat.reshape(-1)
        decreasing = (pairs[2:] < pairs[:-2]).view(np.uint16) != 0  # start or end below the previous one's
        decreasing[first[first > 0] - 1] = False  # from one note to the next
        bad[1:] |= decreasing
        text_lengths = np.fromiter((len(items[k][2]) for k in nonempty.tolist()), np.int64, nonempty.size)
        ok[nonempty] = ~np.logical_or.reduceat(bad, first) & (flat[first, 0] >= 0) & (flat[last, 1] <= text_lengths)
    return ok.tolist(), memoryview(flat[:, 0]), memoryview(flat[:, 1]), base.tolist(), lengths.tolist(), arrays


_NATIVE_INTS = (np.dtype(np.int32), np.dtype(np.int64))


def _offsets_array(offsets) -> np.ndarray:
    """offsets as an (n, 2) integer array; as given when it is one (int32 or int64)."""
    if type(offsets) is np.ndarray and offsets.dtype in _NATIVE_INTS and offsets.ndim == 2 and offsets.shape[1] == 2:
        return offsets
    return np.asarray(offsets, dtype=np.int64).reshape(-1, 2) if len(offsets) else np.zeros((0, 2), np.int64)


def _checked_offsets(offsets, text: str | None) -> tuple[np.ndarray, bool]:
    """(offsets as an (n, 2) array, whether starts and ends are both non-decreasing); raises
    `_as_offsets`'s errors."""
    off = _offsets_array(offsets)
    if not len(off):
        return off, True
    flat = off.reshape(-1)
    # s0 <= e0 <= s1 <= e1 ...: sorted and no negative width, unless tokens overlap (e0 > s1)
    down = flat[1:] < flat[:-1]
    if 1 in down.tobytes():
        if 1 in down[0::2].tobytes() or 1 in (off[1:] < off[:-1]).tobytes():  # end < start, or unsorted
            _as_offsets(off, text)  # raises if a pair is not 0 <= start <= end or ends past the text
            return off, False
    if flat[0] < 0 or (text is not None and flat[-1] > len(text)):
        _as_offsets(off, text)  # raises: sorted, so these are the smallest start and the largest end
    return off, True


class _WordCharacters(dict):
    """character -> whether `\\w` matches it; asks the regex itself on a character's first lookup."""

    def __missing__(self, char: str) -> bool:
        is_word = self[char] = _WORD.match(char) is not None
        return is_word


_IS_WORD = _WordCharacters()


def _extend_sorted(spans, starts, ends, lo: int, n_tokens: int, text: str) -> list[Span]:
    """extend_to_words for sorted offsets: the note's tokens are starts/ends[lo:lo + n_tokens]."""
    n_chars, hi = len(text), lo + n_tokens
    is_word, match, bisect_left, bisect_right = _IS_WORD, _WORD.match, bisect.bisect_left, bisect.bisect_right
    reversed_text = None
    extended = []
    for s, e in spans:
        s, e = int(s), int(e)
        if not 0 <= s < e <= n_tokens:
            raise ValueError(f"token span {(s, e)} is not inside a note of {n_tokens} tokens")
        s, e = s + lo, e + lo
        # first step: the span's characters, trimmed, widened to words: [a, b)
        a, b = starts[s], ends[e - 1]  # sorted: the span's first and last characters
        while a < b and text[a].isspace():
            a += 1
        if a == b:
            extended.append((s, e))  # whitespace only: no word to extend to
            continue
        while text[b - 1].isspace():
            b -= 1
        if a and is_word[text[a - 1]] and is_word[text[a]]:  # a word goes on before a: its start
            if reversed_text is None:
                reversed_text = _reversed(text)
            a = n_chars - match(reversed_text, n_chars - 1 - a).end()
        if b < n_chars and is_word[text[b]] and is_word[text[b - 1]]:  # a word goes on after b: its end
            b = match(text, b).end()
        # the tokens of non-zero width with start < b and end > a: first..last
        first, stop = bisect_right(ends, a, lo, hi), bisect_left(starts, b, lo, hi)
        while first < stop and starts[first] == ends[first]:
            first += 1
        if first == stop:
            extended.append((s, e))  # zero-width tokens only
            continue
        last = stop - 1
        while starts[last] == ends[last]:
            last -= 1
        # Further steps. From here on the span holds non-whitespace and overlaps a token, so `a`
        # depends on s alone (the first non-space character from starts[s] on, widened to its
        # word) and `b` on e alone; both only move outwards, so the tokens found keep
        # overlapping [a, b), and the start and the end reach their fixed points separately.
        while first < s:
            s = first
            a = starts[s]
            while text[a].isspace():
                a += 1
            if a and is_word[text[a - 1]] and is_word[text[a]]:
                if reversed_text is None:
                    reversed_text = _reversed(text)
                a = n_chars - match(reversed_text, n_chars - 1 - a).end()
            first = bisect_right(ends, a, lo, hi)
            while starts[first] == ends[first]:
                first += 1
        while last >= e:
            e = last + 1
            b = ends[last]
            while text[b - 1].isspace():
                b -= 1
            if b < n_chars and is_word[text[b]] and is_word[text[b - 1]]:
                b = match(text, b).end()
            last = bisect_left(starts, b, lo, hi) - 1
            while starts[last] == ends[last]:
                last -= 1
        extended.append((s, e))
    # merge spans sharing a token, or a character (tokens of one character may share offsets)
    extended.sort()
    merged = extended[:1]
    for s, e in extended[1:]:
        ps, pe = merged[-1]
        if s < pe or starts[s] < ends[pe - 1]:
            if e > pe:
                merged[-1] = (ps, e)
        else:
            merged.append((s, e))
    return [(s - lo, e - lo) for s, e in merged] if lo else merged


def _char_spans_sorted(spans, starts, ends, lo: int, n_tokens: int, text: str | None) -> list[Span]:
    out = []
    for s, e in spans:
        if not 0 <= s < e <= n_tokens:
            raise ValueError(f"token span {(s, e)} is not inside a note of {n_tokens} tokens")
        a, b = starts[lo + s], ends[lo + e - 1]
        if text is not None:
            ta = a
            while ta < b and text[ta].isspace():
                ta += 1
            if ta < b:
                while text[b - 1].isspace():
                    b -= 1
                a = ta
        out.append((a, b))
    return out


@functools.lru_cache(maxsize=16)  # the maps of one note come together
def _reversed(text: str) -> str:
    return text[::-1]


def _extend_unsorted(spans, off: np.ndarray, text: str) -> list[Span]:
    """extend_to_words for offsets whose starts or ends decrease somewhere: the original loop,
    numpy masks over all the tokens at each step."""
    starts, ends = off[:, 0], off[:, 1]
    extended = []
    for s, e in spans:
        s, e = int(s), int(e)
        if not 0 <= s < e <= len(off):
            raise ValueError(f"token span {(s, e)} is not inside a note of {len(off)} tokens")
        while True:
            a, b = _trim(text, int(starts[s:e].min()), int(ends[s:e].max()))
            if a == b:
                break  # whitespace only: no word to extend to
            if _IS_WORD[text[a]]:
                a = len(text) - _WORD.match(_reversed(text), len(text) - 1 - a).end()
            if _IS_WORD[text[b - 1]]:
                b = _WORD.match(text, b - 1).end()
            touched = np.flatnonzero((starts < b) & (ends > a) & (ends > starts))
            if touched.size == 0:
                break  # zero-width tokens only
            new_s, new_e = min(s, int(touched[0])), max(e, int(touched[-1]) + 1)
            if (new_s, new_e) == (s, e):
                break
            s, e = new_s, new_e
        extended.append((s, e))
    merged: list[list[int]] = []
    for s, e in sorted(extended):
        if merged:
            ps, pe = merged[-1]
            if s < pe or starts[s:e].min() < ends[ps:pe].max():
                merged[-1][1] = max(pe, e)
                continue
        merged.append([s, e])
    return [(s, e) for s, e in merged]


def _char_spans_unsorted(spans, off: np.ndarray, text: str | None) -> list[Span]:
    out = []
    for s, e in spans:
        if not 0 <= s < e <= len(off):
            raise ValueError(f"token span {(s, e)} is not inside a note of {len(off)} tokens")
        a, b = int(off[s:e, 0].min()), int(off[s:e, 1].max())
        if text is not None:
            ta, tb = _trim(text, a, b)
            if ta < tb:
                a, b = ta, tb
        out.append((a, b))
    return out


def _trim(text: str, a: int, b: int) -> Span:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _as_offsets(offsets, text: str | None) -> np.ndarray:
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2) if len(offsets) else np.zeros((0, 2), np.int64)
    if off.size and ((off[:, 0] < 0).any() or (off[:, 1] < off[:, 0]).any()):
        raise ValueError("offsets must be pairs 0 <= start <= end")
    if text is not None and off.size and off[:, 1].max() > len(text):
        raise ValueError(f"offsets reach character {int(off[:, 1].max())} of a {len(text)}-character note")
    return off


# ---------------------------------------------------------------- trimming


def trim_peaks(spans: Sequence[Span], char_spans: Sequence[Span], offsets, text: str) -> tuple[list[Span], list[Span]]:
    """The trimming rule (see module doc) on word-extended peaks: `spans` (token spans) and
    their aligned `char_spans` (peak_char_spans). Returns the kept peaks as aligned
    (token spans, character spans); a peak with no letter or digit is dropped."""
    off = _offsets_array(offsets)
    starts, ends = memoryview(off[:, 0]), memoryview(off[:, 1])
    kept_tokens: list[Span] = []
    kept_chars: list[Span] = []
    for (s, e), (a, b) in zip(spans, char_spans):
        while a < b and not text[a].isalnum():
            a += 1
        while b > a and not text[b - 1].isalnum():
            b -= 1
        if a == b:
            continue  # punctuation and whitespace only
        # edge tokens that no longer reach the trimmed characters (or have no width) leave
        while s < e and not (starts[s] < b and ends[s] > a and ends[s] > starts[s]):
            s += 1
        while e > s and not (starts[e - 1] < b and ends[e - 1] > a and ends[e - 1] > starts[e - 1]):
            e -= 1
        if s == e:
            continue  # no token holds the letters (offsets with gaps): nothing to mask
        kept_tokens.append((s, e))
        kept_chars.append((a, b))
    return kept_tokens, kept_chars


# ---------------------------------------------------------------- word heat


def words_of(text: str) -> list[Span]:
    """The words of a text (maximal `\\w+` runs) as character spans."""
    return [m.span() for m in _WORD.finditer(text)]


def word_heat(text: str, offsets, scores, words: Sequence[Span] | None = None) -> tuple[list[Span], np.ndarray]:
    """(words, heat): each word's heat is the maximum score of the tokens overlapping it (see the
    module doc); NaN for a word no token reaches (the map stops before it). `words` defaults to
    `words_of(text)`."""
    if words is None:
        words = words_of(text)
    heat = np.full(len(words), np.nan)
    off = _offsets_array(offsets)
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    if not words or not len(off):
        return list(words), heat
    if x.size != len(off):
        raise ValueError(f"{x.size} scores for {len(off)} tokens")
    w = np.asarray(words, dtype=np.int64).reshape(-1, 2)
    tok_starts, tok_ends = off[:, 0].astype(np.int64), off[:, 1].astype(np.int64)
    if (np.diff(tok_starts) >= 0).all() and (np.diff(tok_ends) >= 0).all():
        # sorted: the tokens overlapping word [a, b) are first..last-1, with first the first
        # token ending after a and last the first token starting at or after b
        first = np.searchsorted(tok_ends, w[:, 0], side="right")
        last = np.searchsorted(tok_starts, w[:, 1], side="left")
        values = np.where(tok_ends > tok_starts, x, -np.inf)  # zero-width tokens cover nothing
        has = first < last
        if has.any():
            padded = np.append(values, -np.inf)
            bounds = np.stack([first[has], last[has]], axis=1).reshape(-1)
            heat[has] = np.maximum.reduceat(padded, bounds)[0::2]
        heat[~np.isfinite(heat)] = np.nan
        return list(words), heat
    # unsorted offsets: per-character maximum, then per word
    per_char = np.full(len(text) + 1, -np.inf)
    for (s, e), value in zip(off.tolist(), x.tolist()):
        if e > s:
            np.maximum(per_char[s:e], value, out=per_char[s:e])
    heat = np.maximum.reduceat(per_char, w.reshape(-1))[0::2]
    heat[~np.isfinite(heat)] = np.nan
    return list(words), heat


def snap_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    """A span a person marked, [start, end) in characters, widened to the words it touches, then
    trimmed to letters and digits at both ends, as a peak is; a caret (start == end) gives the
    word at it. (a, a) when there is none. Reviewers' added spans and missed identifiers both
    snap through it, so the two agree on what a word is."""
    n = len(text)
    a, b = sorted((max(0, min(int(start), n)), max(0, min(int(end), n))))
    if a == b:
        if a < n and _WORD_CHAR.match(text[a]):
            b = a + 1
        elif a > 0 and _WORD_CHAR.match(text[a - 1]):
            a -= 1
        else:
            return a, a
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if a < b and _WORD_CHAR.match(text[a]):
        while a > 0 and _WORD_CHAR.match(text[a - 1]):
            a -= 1
    if a < b and _WORD_CHAR.match(text[b - 1]):
        while b < n and _WORD_CHAR.match(text[b]):
            b += 1
    while a < b and not text[a].isalnum():
        a += 1
    while b > a and not text[b - 1].isalnum():
        b -= 1
    return (a, b) if a < b else (a, a)
