"""Peaks benchmark: `find_peaks_many` against plain Python loops, and re-threshold latency.

Two loop baselines are timed in the same run, on a subset of the maps and extrapolated to
all of them (per-map cost x n_maps):
- `python_loop_peaks`: everything in Python, smoothing and runs, one token at a time.
- `reference_loop_peaks`: the reference code's shape, scipy `gaussian_filter1d` per map then a
  Python loop over tokens for the runs.
Both return exactly what `find_peaks` returns (tests/ml/test_peaks.py checks it).

The maps imitate normalised AttnLRP maps (|r| / max|r|): small exponential background noise
plus a few bursts of 1-5 tokens, scaled so the largest score is 1. The result reports their
density so the figures can be judged.
"""
from __future__ import annotations

import math
import statistics
import time

import numpy as np
from scipy.ndimage import gaussian_filter1d

from ml.peaks import check_params, extend_to_words, find_peaks, find_peaks_many, gaussian_weights, peak_char_spans


def python_loop_peaks(scores, *, kernel_size=3, sigma=1.0, lower=0.2, upper=0.4, strict=False):
    """Plain-Python peaks: smoothing (reflect, scipy's weights and order) and runs, per token."""
    radius = check_params(kernel_size, sigma, lower, upper)
    x = [float(v) for v in scores]
    n = len(x)
    if radius:
        w = gaussian_weights(float(sigma), radius).tolist()

        def at(p):
            p %= 2 * n
            return x[2 * n - 1 - p] if p >= n else x[p]

        y = []
        for i in range(n):
            v = x[i] * w[radius]
            for j in range(radius, 0, -1):
                v += (at(i - j) + at(i + j)) * w[radius - j]
            y.append(v)
    else:
        y = x
    return _loop_runs(y, lower, upper, strict)


def reference_loop_peaks(scores, *, kernel_size=3, sigma=1.0, lower=0.2, upper=0.4, strict=False):
    """Reference-code style: scipy smoothing per map, then a Python loop over tokens."""
    radius = check_params(kernel_size, sigma, lower, upper)
    y = np.asarray(scores, dtype=np.float64)
    if radius and y.size:
        y = gaussian_filter1d(y, sigma, radius=radius)
    return _loop_runs(y.tolist(), lower, upper, strict)


def _loop_runs(y, lower, upper, strict):
    spans, start, high = [], None, False
    for i, v in enumerate(y):
        is_low = v > lower if strict else v >= lower
        if is_low:
            if start is None:
                start, high = i, False
            if v > upper if strict else v >= upper:
                high = True
        elif start is not None:
            if high:
                spans.append((start, i))
            start = None
    if start is not None and high:
        spans.append((start, len(y)))
    return spans


def synthetic_maps(n_maps: int, n_tokens: int, seed: int = 0) -> list[np.ndarray]:
    """float32 maps shaped like normalised relevance: noise plus Poisson(3) bursts."""
    rng = np.random.default_rng(seed)
    maps = rng.exponential(0.04, size=(n_maps, n_tokens)).astype(np.float32)
    n_bursts = rng.poisson(3, size=n_maps) + 1
    rows = np.repeat(np.arange(n_maps), n_bursts)
    widths = rng.integers(1, 6, size=rows.size)
    starts = rng.integers(0, n_tokens, size=rows.size)
    heights = rng.uniform(0.3, 1.0, size=rows.size).astype(np.float32)
    for k in range(5):  # burst of width w covers starts..starts+w-1
        on = widths > k
        cols = np.minimum(starts[on] + k, n_tokens - 1)
        maps[rows[on], cols] = np.maximum(maps[rows[on], cols], heights[on])
    maps /= maps.max(axis=1, keepdims=True)
    return list(maps)


def _time(fn, repeat=1):
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def run(n_maps: int = 100_000, n_tokens: int = 300, *, loop_maps: int = 2_000, rethreshold_tokens: int = 1_000,
        rethreshold_runs: int = 200, seed: int = 0) -> dict:
    """Time find_peaks_many on n_maps maps of n_tokens, the loops on `loop_maps` of them
    (extrapolated), and the re-threshold latency of one `rethreshold_tokens` note. Times are
    the best of two runs; default peak parameters (kernel 3, sigma 1, 0.2 / 0.4)."""
    maps = synthetic_maps(n_maps, n_tokens, seed)
    t_fast, peaks = _time(lambda: find_peaks_many(maps), repeat=2)
    subset = maps[: min(loop_maps, n_maps)]
    t_py, loop_peaks = _time(lambda: [python_loop_peaks(m) for m in subset], repeat=2)
    t_ref, ref_peaks = _time(lambda: [reference_loop_peaks(m) for m in subset], repeat=2)
    if loop_peaks != peaks[: len(subset)] or ref_peaks != loop_peaks:
        raise AssertionError("find_peaks_many disagrees with the Python loops")
    fast_rate = n_maps / t_fast
    py_rate, ref_rate = len(subset) / t_py, len(subset) / t_ref
    flat = np.concatenate(maps[: min(n_maps, 2_000)])
    peaks_stats = {
        "n_maps": n_maps,
        "n_tokens": n_tokens,
        "raw_scores_ge_lower_fraction": round(float((flat >= 0.2).mean()), 4),
        "mean_peaks_per_map": round(sum(map(len, peaks)) / n_maps, 3),
        "find_peaks_many_s": round(t_fast, 4),
        "find_peaks_many_maps_per_s": round(fast_rate),
        "python_loop_maps_per_s": round(py_rate),
        "reference_loop_maps_per_s": round(ref_rate),
        "loop_maps_timed": len(subset),
        "loop_note": f"loops timed on {len(subset)} maps and extrapolated (per-map cost x {n_maps})",
        "speedup_vs_python_loop": round(fast_rate / py_rate, 1),
        "speedup_vs_reference_loop": round(fast_rate / ref_rate, 1),
    }
    return {"peaks": peaks_stats, "rethreshold": rethreshold(rethreshold_tokens, rethreshold_runs, seed)}


def rethreshold(n_tokens: int = 1_000, runs: int = 200, seed: int = 0) -> dict:
    """Median latency of recomputing one note's peaks at new thresholds: find_peaks alone, and
    with word extension and character spans (what the UI needs)."""
    rng = np.random.default_rng(seed)
    scores = synthetic_maps(1, n_tokens, seed)[0]
    words = ["".join(rng.choice(list("abcdefghij"), size=rng.integers(1, 9))) for _ in range(n_tokens // 2)]
    text, offsets, pos = "", [], 0
    for w in words:  # two tokens per word: a split word everywhere
        cut = max(1, len(w) // 2)
        offsets += [(pos, pos + cut), (pos + cut, pos + len(w))] if len(w) > 1 else [(pos, pos + 1), (pos + 1, pos + 1)]
        text += w + " "
        pos += len(w) + 1
    offsets = np.array(offsets[:n_tokens], np.int32)
    scores = scores[: len(offsets)]
    grid = [(0.2, 0.4), (0.2, 0.6), (0.4, 0.6), (0.5, 0.6)]
    peaks_only, with_words = [], []
    for i in range(runs):
        lower, upper = grid[i % len(grid)]
        t = time.perf_counter()
        spans = find_peaks(scores, lower=lower, upper=upper)
        t1 = time.perf_counter()
        peak_char_spans(extend_to_words(spans, offsets, text), offsets, text)
        t2 = time.perf_counter()
        peaks_only.append(t1 - t)
        with_words.append(t2 - t)
    return {
        "n_tokens": int(len(scores)),
        "runs": runs,
        "find_peaks_ms_median": round(statistics.median(peaks_only) * 1e3, 3),
        "with_word_extension_ms_median": round(statistics.median(with_words) * 1e3, 3),
    }
