"""Peaks ("groups") of a relevance map (METHOD.md points 4-5).

A relevance map is one float score per note token. It is smoothed with a Gaussian
(window `kernel_size`, i.e. scipy radius `(kernel_size - 1) // 2`, boundary mode 'reflect',
scipy's default and the reference code's), then a peak is a MAXIMAL run of consecutive tokens
whose smoothed score is >= `lower` and which contains at least one token whose SMOOTHED score
is >= `upper` (both tests on the smoothed scores, as METHOD.md words it). `strict=True` gives
the reference code's `>` for both tests. Peaks are half-open token spans `(start, end)`.

Kernel sizes: the window length, so 1 -> no smoothing, 3 -> radius 1, 5 -> radius 2. Even sizes
round down (2 -> radius 0, i.e. no smoothing), unlike the reference code where k=2 smooths like
k=3 (METHOD.md point 6). Smoothing is always computed in float64.

`find_peaks` smooths with scipy directly. `find_peaks_many` does the same for many maps at once:
it concatenates them, smooths the interior of the concatenation with numpy slices and recomputes
the first/last `radius` tokens of each map with the reflected neighbours, repeating scipy's
arithmetic in scipy's order, so its output is identical to `find_peaks` map by map (tested).

`extend_to_words` then widens token spans so that no span cuts a word; `peak_char_spans` gives
their character spans in the note; `extend_to_words_many` does both for many maps at once. They
work at the two ends of each span with binary searches in the (sorted) token offsets, not with
passes over all the tokens or the note (see the words section); same results as the numpy loop
they replaced (tests/ml/test_peaks.py compares them with it on thousands of random notes).
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import math
import re
from collections.abc import Sequence

import numpy as np
from scipy.ndimage import gaussian_filter1d

Span = tuple[int, int]

# Maps are processed in batches of about this many tokens: the float64 working arrays of a
# batch (a few MB) stay in cache and memory stays bounded whatever the number of maps.
BATCH_TOKENS = 1 << 16

_WORD = re.compile(r"\w+")


# ---------------------------------------------------------------- parameters and smoothing


def check_params(kernel_size: int, sigma: float, lower: float, upper: float) -> int:
    """Validate peak parameters; return the smoothing radius `(kernel_size - 1) // 2`."""
    if isinstance(kernel_size, bool) or not isinstance(kernel_size, (int, np.integer)):
        raise ValueError(f"kernel_size must be an integer, got {kernel_size!r}")
    if kernel_size < 1:
        raise ValueError(f"kernel_size must be >= 1, got {kernel_size}")
    if not (isinstance(sigma, (int, float, np.floating, np.integer)) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    for name, value in (("lower", lower), ("upper", upper)):
        if not (isinstance(value, (int, float, np.floating, np.integer)) and math.isfinite(value)):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not 0 <= lower <= upper:
        raise ValueError(f"thresholds must satisfy 0 <= lower <= upper, got lower={lower}, upper={upper}")
    return (int(kernel_size) - 1) // 2


@functools.lru_cache(maxsize=64)
def gaussian_weights(sigma: float, radius: int) -> np.ndarray:
    """The exact weights scipy's gaussian_filter1d uses: its response to a unit impulse."""
    impulse = np.zeros(2 * radius + 1)
    impulse[radius] = 1.0
    weights = gaussian_filter1d(impulse, sigma, radius=radius, mode="constant")
    weights.flags.writeable = False
    return weights


def smooth(scores, *, kernel_size: int = 3, sigma: float = 1.0) -> np.ndarray:
    """Gaussian smoothing of one map (float64, mode 'reflect'); radius 0 returns a copy."""
    radius = check_params(kernel_size, sigma, 0.0, 0.0)
    x = _as_map(scores)
    if radius == 0 or x.size == 0:
        return x.copy()
    return gaussian_filter1d(x, sigma, radius=radius, mode="reflect")


def _as_map(scores) -> np.ndarray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"a relevance map must be one-dimensional, got shape {x.shape}")
    if not np.isfinite(x).all():
        bad = int(np.flatnonzero(~np.isfinite(x))[0])
        raise ValueError(f"relevance scores contain NaN or infinity (token {bad}: {x[bad]})")
    return x


# ---------------------------------------------------------------- one map


def find_peaks(
    scores,
    *,
    kernel_size: int = 3,
    sigma: float = 1.0,
    lower: float = 0.2,
    upper: float = 0.4,
    strict: bool = False,
) -> list[Span]:
    """Peaks of one relevance map as half-open token spans sorted by start (see module doc)."""
    check_params(kernel_size, sigma, lower, upper)
    y = smooth(scores, kernel_size=kernel_size, sigma=sigma)
    if y.size == 0:
        return []
    starts, ends = _runs(y, np.zeros(1, np.int64), np.array([y.size]), lower, upper, strict)
    return list(zip(starts.tolist(), ends.tolist()))


# ---------------------------------------------------------------- many maps


def find_peaks_many(
    maps,
    *,
    kernel_size: int = 3,
    sigma: float = 1.0,
    lower: float = 0.2,
    upper: float = 0.4,
    strict: bool = False,
) -> list[list[Span]]:
    """`[find_peaks(m, ...) for m in maps]`, vectorised. `maps`: a sequence of 1-D maps of
    any lengths, or a 2-D array (one map per row). NaN/infinity -> ValueError naming the map."""
    radius = check_params(kernel_size, sigma, lower, upper)
    weights = gaussian_weights(float(sigma), radius) if radius else None
    if isinstance(maps, np.ndarray) and maps.ndim == 2:
        rows = np.ascontiguousarray(maps)
        lengths = np.full(rows.shape[0], rows.shape[1], dtype=np.int64)

        def get(i, j):
            return rows[i:j].reshape(-1)
    else:
        if not isinstance(maps, (list, tuple)):
            maps = list(maps)
        lengths = np.array(list(map(len, maps)), dtype=np.int64)

        def get(i, j):
            return _concat(maps, i, j)
    ends_cum = np.cumsum(lengths)
    out: list[list[Span]] = []
    i = 0
    with _gc_paused():  # ~1 new list per map: the cyclic GC would rescan them, ~1/3 of the time
        while i < len(lengths):
            # next batch: maps i..j-1, about BATCH_TOKENS tokens, at least one map
            base = ends_cum[i - 1] if i else 0
            j = max(i + 1, int(np.searchsorted(ends_cum, base + BATCH_TOKENS, side="right")))
            try:
                out.extend(_peaks_of_batch(get(i, j), lengths[i:j], radius, weights, lower, upper, strict))
            except _BadScore as exc:
                raise ValueError(
                    f"relevance scores of map {i + exc.map_index} contain NaN or infinity "
                    f"(token {exc.token}: {exc.value})"
                ) from None
            i = j
    return out


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector (we create no cycles); restore its previous state."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _BadScore(Exception):
    def __init__(self, map_index: int, token: int, value: float):
        super().__init__(map_index, token, value)
        self.map_index, self.token, self.value = map_index, token, value


def _concat(maps, i: int, j: int) -> np.ndarray:
    parts = maps[i:j]
    try:
        flat = np.concatenate(parts) if len(parts) > 1 else np.asarray(parts[0])
    except ValueError as exc:
        raise ValueError(f"maps {i}..{j - 1}: every relevance map must be one-dimensional ({exc})") from None
    if flat.ndim != 1:
        raise ValueError(f"maps {i}..{j - 1}: every relevance map must be one-dimensional")
    return flat


def _peaks_of_batch(flat, lengths, radius, weights, lower, upper, strict) -> list[list[Span]]:
    n_maps = len(lengths)
    if flat.dtype not in (np.float32, np.float64):
        flat = flat.astype(np.float64)
    map_starts = np.zeros(n_maps, np.int64)
    np.cumsum(lengths[:-1], out=map_starts[1:])
    total = flat.size
    if total == 0:
        return [[] for _ in range(n_maps)]
    if not math.isfinite(flat.sum()):  # one cheap pass; a finite overflowing sum falls through
        bad = np.flatnonzero(~np.isfinite(flat))
        if bad.size:
            k = int(np.searchsorted(map_starts, bad[0], side="right") - 1)
            raise _BadScore(k, int(bad[0] - map_starts[k]), float(flat[bad[0]]))
    y = _smooth_concatenated(flat, map_starts, lengths, radius, weights)
    nonempty = lengths > 0
    starts, ends = _runs(y, map_starts[nonempty], lengths[nonempty], lower, upper, strict)
    map_of_run = np.searchsorted(map_starts, starts, side="right") - 1
    local = map_starts[map_of_run]
    pairs = list(zip((starts - local).tolist(), (ends - local).tolist()))
    bounds = np.zeros(n_maps + 1, np.int64)
    np.cumsum(np.bincount(map_of_run, minlength=n_maps), out=bounds[1:])
    bounds = bounds.tolist()
    return [pairs[bounds[k] : bounds[k + 1]] for k in range(n_maps)]


def _smooth_concatenated(flat, map_starts, lengths, radius, weights) -> np.ndarray:
    """Smooth every map of a concatenation exactly as scipy's gaussian_filter1d (mode 'reflect')
    would smooth it alone: scipy's correlate1d with a symmetric kernel computes, per token,
    `x[i]*w[r]` then adds `(x[i-j] + x[i+j]) * w[r-j]` for j = r..1, in double precision."""
    total = flat.size
    if radius == 0:
        return flat.astype(np.float64)
    y = np.empty(total)
    inner = slice(radius, total - radius)
    if total > 2 * radius:
        np.multiply(flat[inner], weights[radius], out=y[inner], dtype=np.float64)
        tmp = np.empty(total - 2 * radius)
        for j in range(radius, 0, -1):
            np.add(flat[radius - j : total - radius - j], flat[radius + j : total - radius + j], out=tmp, dtype=np.float64)
            tmp *= weights[radius - j]
            y[inner] += tmp
    # the first and last `radius` tokens of each map: recompute with reflected neighbours
    positions, columns, sizes = _edge_tokens(map_starts, lengths, radius)
    base = positions - columns
    edge = flat[positions].astype(np.float64) * weights[radius]
    for j in range(radius, 0, -1):
        left = flat[base + _reflect(columns - j, sizes)].astype(np.float64)
        right = flat[base + _reflect(columns + j, sizes)].astype(np.float64)
        edge += (left + right) * weights[radius - j]
    y[positions] = edge
    return y


def _edge_tokens(map_starts, lengths, radius):
    """Flat positions, in-map columns and map lengths of every token within `radius` of an end
    of its map (each token once)."""
    cols, owners = [], []
    idx = np.arange(len(lengths))
    for k in range(radius):
        left = idx[lengths > k]  # column k, counted from the left
        right = idx[lengths - 1 - k >= radius]  # column n-1-k, unless already a left column
        cols += [np.full(left.size, k, np.int64), lengths[right] - 1 - k]
        owners += [left, right]
    cols, owners = np.concatenate(cols), np.concatenate(owners)
    return map_starts[owners] + cols, cols, lengths[owners]


def _reflect(p, n):
    """scipy 'reflect' (d c b a | a b c d | d c b a) index of position p in a map of length n."""
    m = np.mod(p, 2 * n)
    return np.where(m >= n, 2 * n - 1 - m, m)


def _runs(y, starts_of_maps, lengths, lower, upper, strict):
    """Maximal runs of y >= lower (> if strict) that do not cross a map start and contain a
    value >= upper (> if strict). Maps are the non-empty ones, given by start and length."""
    if strict:
        low, high = y > lower, y > upper
    else:
        low, high = y >= lower, y >= upper
    # positions where `low` changes; they alternate run start, run end
    edges = np.flatnonzero(low[1:] != low[:-1]) + 1
    if low[0]:
        edges = np.concatenate(([0], edges))
    if low[-1]:
        edges = np.concatenate((edges, [low.size]))
    run_starts, run_ends = edges[0::2], edges[1::2]
    # a run continuing over a map start is two runs: cut it there
    inner = starts_of_maps[1:]
    cuts = inner[low[inner] & low[inner - 1]]
    if cuts.size:
        run_starts = np.sort(np.concatenate((run_starts, cuts)))
        run_ends = np.sort(np.concatenate((run_ends, cuts)))
    run_of_high = np.searchsorted(run_starts, np.flatnonzero(high), side="right") - 1
    keep = np.zeros(run_starts.size, bool)
    keep[run_of_high] = True
    return run_starts[keep], run_ends[keep]


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
