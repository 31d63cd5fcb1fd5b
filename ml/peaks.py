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
their character spans in the note.
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
# Token offsets are, in practice, sorted: starts and ends both non-decreasing (a tokenizer's
# offsets; ml.codec even requires sorted starts). Then the characters of a token span [s, e)
# are [starts[s], ends[e-1]) and the tokens overlapping characters [a, b) are the ones between
# a binary search of `ends` for a and one of `starts` for b, so each step of the extension is a
# few O(1)/O(log n) operations on Python ints (memoryviews of the offsets: no per-token Python
# objects), and words are found with the regex at the span's two ends only (a match forwards
# for a word's end, one on the reversed text for its start) instead of a pass over the note.
# Offsets that are not sorted take `_extend_unsorted`, the original numpy loop (same results).


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
    tokens = _Tokens(offsets, text)
    return tokens.extend(spans, text) if len(spans) else []


def peak_char_spans(spans: Sequence[Span], offsets, text: str | None = None) -> list[Span]:
    """Character span `[start, end)` of each token span (aligned with `spans`). With `text`,
    leading and trailing whitespace is trimmed, unless the span holds only whitespace."""
    return _Tokens(offsets, text).char_spans(spans, text)


def extend_to_words_many(items, *, char_spans: bool = False) -> list:
    """`[extend_to_words(spans, offsets, text) for spans, offsets, text in items]`; with
    `char_spans=True`, `(words, peak_char_spans(words, offsets, text))` pairs instead (the
    offsets are checked once for both)."""
    out = []
    for spans, offsets, text in items:
        tokens = _Tokens(offsets, text)
        words = tokens.extend(spans, text) if len(spans) else []
        out.append((words, tokens.char_spans(words, text)) if char_spans else words)
    return out


class _Tokens:
    """Checked token offsets of one note. `sorted`: starts and ends both non-decreasing; then
    `starts` and `ends` are memoryviews of them (Python ints on indexing and in bisect, without
    converting every token)."""

    __slots__ = ("off", "n", "sorted", "starts", "ends")

    def __init__(self, offsets, text: str | None):
        off = offsets
        if not (type(off) is np.ndarray and off.dtype in _NATIVE_INTS and off.ndim == 2 and off.shape[1] == 2):
            off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2) if len(offsets) else np.zeros((0, 2), np.int64)
        self.off = off
        self.n = n = len(off)
        self.sorted = True
        if n:
            flat = off.reshape(-1)
            # s0 <= e0 <= s1 <= e1 ...: sorted, no negative width (one check, true unless tokens overlap)
            if not (flat[1:] >= flat[:-1]).all():
                self.sorted = bool((off[1:] >= off[:-1]).all())
                if not self.sorted or (off[:, 1] < off[:, 0]).any():
                    _as_offsets(off, text)  # raises if a pair is not 0 <= start <= end
            if self.sorted and (flat[0] < 0 or (text is not None and flat[-1] > len(text))):
                _as_offsets(off, text)  # raises: a start < 0, or an end past the text
            if not self.sorted and text is not None and off[:, 1].max() > len(text):
                _as_offsets(off, text)
        if self.sorted:
            self.starts, self.ends = memoryview(off[:, 0]), memoryview(off[:, 1])

    def check(self, s, e) -> None:
        if not 0 <= s < e <= self.n:
            raise ValueError(f"token span {(s, e)} is not inside a note of {self.n} tokens")

    def extend(self, spans, text: str) -> list[Span]:
        if not self.sorted:
            return _extend_unsorted(spans, self.off, text)
        starts, ends = self.starts, self.ends
        n_chars, n_tokens = len(text), self.n
        match, bisect_left, bisect_right = _WORD.match, bisect.bisect_left, bisect.bisect_right
        reversed_text = None
        extended = []
        for s, e in spans:
            s, e = int(s), int(e)
            if not 0 <= s < e <= n_tokens:
                self.check(s, e)
            # first step: the span's characters, trimmed, widened to words: [a, b)
            a, b = starts[s], ends[e - 1]  # offsets sorted: the first and last characters
            while a < b and text[a].isspace():
                a += 1
            if a == b:
                extended.append((s, e))  # whitespace only: no word to extend to
                continue
            while text[b - 1].isspace():
                b -= 1
            if a and (m := match(text, a - 1)) is not None and m.end() > a:  # a inside a word
                if reversed_text is None:
                    reversed_text = _reversed(text)
                a = n_chars - match(reversed_text, n_chars - 1 - a).end()
            if (m := match(text, b - 1)) is not None:  # b - 1 inside a word
                b = m.end()
            # the tokens of non-zero width with start < b and end > a: first..last
            first, stop = bisect_right(ends, a), bisect_left(starts, b)
            while first < stop and starts[first] == ends[first]:
                first += 1
            if first == stop:
                extended.append((s, e))  # zero-width tokens only
                continue
            last = stop - 1
            while starts[last] == ends[last]:
                last -= 1
            # Further steps. From here on the span holds non-whitespace and overlaps a token, so
            # `a` depends on s alone (the first non-space character from starts[s] on, widened to
            # its word) and `b` on e alone; both only move outwards, so the tokens found keep
            # overlapping, and the start and the end reach their fixed points separately.
            while first < s:
                s = first
                a = starts[s]
                while text[a].isspace():
                    a += 1
                if a and (m := match(text, a - 1)) is not None and m.end() > a:
                    if reversed_text is None:
                        reversed_text = _reversed(text)
                    a = n_chars - match(reversed_text, n_chars - 1 - a).end()
                first = bisect_right(ends, a)
                while starts[first] == ends[first]:
                    first += 1
            while last >= e:
                e = last + 1
                b = ends[last]
                while text[b - 1].isspace():
                    b -= 1
                if (m := match(text, b - 1)) is not None:
                    b = m.end()
                last = bisect_left(starts, b) - 1
                while starts[last] == ends[last]:
                    last -= 1
            extended.append((s, e))
        # merge spans sharing a token, or a character (tokens of one character may share offsets)
        extended.sort()
        merged = [extended[0]]
        for s, e in extended[1:]:
            ps, pe = merged[-1]
            if s < pe or starts[s] < ends[pe - 1]:
                if e > pe:
                    merged[-1] = (ps, e)
            else:
                merged.append((s, e))
        return merged

    def char_spans(self, spans, text: str | None) -> list[Span]:
        out = []
        off, n_tokens = self.off, self.n
        starts, ends = (self.starts, self.ends) if self.sorted else (None, None)
        for s, e in spans:
            if not 0 <= s < e <= n_tokens:
                self.check(s, e)
            if starts is not None:
                a, b = starts[s], ends[e - 1]
            else:
                a, b = int(off[s:e, 0].min()), int(off[s:e, 1].max())
            if text is not None:
                ta, tb = a, b
                while ta < tb and text[ta].isspace():
                    ta += 1
                if ta < tb:
                    while text[tb - 1].isspace():
                        tb -= 1
                    a, b = ta, tb
            out.append((a, b))
        return out


_NATIVE_INTS = (np.dtype(np.int32), np.dtype(np.int64))


@functools.lru_cache(maxsize=16)  # the maps of one note come together
def _reversed(text: str) -> str:
    return text[::-1]


def _word_start(text: str, pos: int) -> int:
    """Start of the word (run of \\w) holding character `pos`, or `pos` if it is not a word character."""
    if _WORD.match(text, pos) is None:
        return pos
    return len(text) - _WORD.match(_reversed(text), len(text) - 1 - pos).end()


def _word_end(text: str, pos: int) -> int:
    """End of the word holding character `pos`, or `pos + 1` if it is not a word character."""
    m = _WORD.match(text, pos)
    return pos + 1 if m is None else m.end()


def _extend_unsorted(spans, off: np.ndarray, text: str) -> list[Span]:
    """extend_to_words for offsets whose starts or ends decrease somewhere: the original loop,
    with numpy masks over all tokens at each step."""
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
            a, b = _word_start(text, a), _word_end(text, b - 1)
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
