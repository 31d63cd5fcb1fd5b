"""Smoothing and runs: the token peaks of relevance maps (docs/METHOD.md, section Peaks).

A relevance map is one float score per note token. It is smoothed with a Gaussian
(window `kernel_size`, i.e. scipy radius `(kernel_size - 1) // 2`, boundary mode 'reflect',
scipy's default and the reference code's), then a peak is a MAXIMAL run of consecutive tokens
whose smoothed score is >= `lower` and which contains at least one token whose SMOOTHED score
is >= `upper` (both tests on the smoothed scores, as docs/METHOD.md words it). `strict=True` gives
the reference code's `>` for both tests. Peaks are half-open token spans `(start, end)`.

Kernel sizes: the window length, so 1 -> no smoothing, 3 -> radius 1, 5 -> radius 2. Even sizes
round down (2 -> radius 0, i.e. no smoothing), unlike the reference code where k=2 smooths like
k=3 (docs/METHOD.md, section Peaks). Smoothing is always computed in float64.

`find_peaks` smooths with scipy directly. `find_peaks_many` does the same for many maps at once:
it concatenates them, smooths the interior of the concatenation with numpy slices and recomputes
the first/last `radius` tokens of each map with the reflected neighbours, repeating scipy's
arithmetic in scipy's order, so its output is identical to `find_peaks` map by map (tested).

These are token runs only; the peaks the product shows and masks are these runs widened to
words and trimmed (ml.peaks.words, ml.peaks.batch).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math

import numpy as np
from scipy.ndimage import gaussian_filter1d

from ml.peaks.params import PAPER, PeakParams, check_params

Span = tuple[int, int]

# Maps are processed in batches of about this many tokens: the float64 working arrays of a
# batch (a few MB) stay in cache and memory stays bounded whatever the number of maps.
BATCH_TOKENS = 1 << 16


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


def find_peaks(scores, params: PeakParams = PAPER) -> list[Span]:
    """Token peaks of one relevance map as half-open spans sorted by start (see module doc)."""
    _check_type(params)
    y = smooth(scores, kernel_size=params.kernel_size, sigma=params.sigma)
    if y.size == 0:
        return []
    starts, ends = _runs(y, np.zeros(1, np.int64), np.array([y.size]), params.lower, params.upper, params.strict)
    return list(zip(starts.tolist(), ends.tolist()))


# ---------------------------------------------------------------- many maps


def find_peaks_many(maps, params: PeakParams = PAPER) -> list[list[Span]]:
    """`[find_peaks(m, params) for m in maps]`, vectorised. `maps`: a sequence of 1-D maps of
    any lengths, or a 2-D array (one map per row). NaN/infinity -> ValueError naming the map."""
    _check_type(params)
    radius, lower, upper, strict = params.radius, params.lower, params.upper, params.strict
    weights = gaussian_weights(float(params.sigma), radius) if radius else None
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


def _check_type(params) -> None:
    if not isinstance(params, PeakParams):
        raise TypeError(f"peak parameters must be a PeakParams, got {type(params).__name__}")


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
            np.add(
                flat[radius - j : total - radius - j], flat[radius + j : total - radius + j], out=tmp, dtype=np.float64
            )
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
