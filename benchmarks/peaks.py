"""Peaks benchmark: `find_peaks_many` against plain Python loops, re-threshold latency, and word
extension (`extend_to_words` + `peak_char_spans`) against the loop it replaced.

Two loop baselines are timed in the same run, on a subset of the maps and extrapolated to
all of them (per-map cost x n_maps):
- `python_loop_peaks`: everything in Python, smoothing and runs, one token at a time.
- `reference_loop_peaks`: the reference code's shape, scipy `gaussian_filter1d` per map then a
  Python loop over tokens for the runs.
Both return exactly what `find_peaks` returns (tests/ml/test_peaks.py checks it).

Word extension is timed on BPE-like tokenisations of synthetic clinical notes (leading-space
tokens, long words split, non-ASCII characters as byte tokens sharing one character), in the
same run as `reference_extend_to_words` / `reference_peak_char_spans`, the loops ml.peaks had
before (kept verbatim below; tests/ml/test_peaks.py compares ml.peaks with them).

The maps imitate normalised AttnLRP maps (|r| / max|r|): small exponential background noise
plus a few bursts of 1-5 tokens, scaled so the largest score is 1. The result reports their
density so the figures can be judged.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
import time

import numpy as np
from scipy.ndimage import gaussian_filter1d

from ml.peaks import (
    PeakParams,
    check_params,
    extend_to_words,
    extend_to_words_many,
    find_peaks,
    find_peaks_many,
    gaussian_weights,
    note_peaks,
    peak_char_spans,
    word_heat,
)


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


def run(
    n_maps: int = 100_000,
    n_tokens: int = 300,
    *,
    loop_maps: int = 2_000,
    rethreshold_tokens: int = 1_000,
    rethreshold_runs: int = 200,
    word_maps: int = 2_000,
    seed: int = 0,
) -> dict:
    """Time find_peaks_many on n_maps maps of n_tokens, the loops on `loop_maps` of them
    (extrapolated), the re-threshold latency of one `rethreshold_tokens` note and word extension
    on `word_maps` maps (see `word_extension`). Times are the best of two runs; default peak
    parameters (kernel 3, sigma 1, 0.2 / 0.4)."""
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
    return {
        "peaks": peaks_stats,
        "rethreshold": rethreshold(rethreshold_tokens, rethreshold_runs, seed),
        "word_extension": word_extension(word_maps, n_tokens, seed=seed),
    }


def rethreshold(n_tokens: int = 1_000, runs: int = 200, seed: int = 0) -> dict:
    """Median latency of recomputing one note's peaks at new thresholds, on a BPE-like
    tokenisation of a synthetic clinical note (punctuation, split words, byte tokens): token runs
    alone (find_peaks), the peaks as the product shows them (note_peaks: runs, words, trimming),
    and those plus the per-word heat of the note view (word_heat). Baseline in the same run: the
    reference-code loop for the runs plus the word-extension loop ml.peaks had before, untrimmed."""
    rng = np.random.default_rng(seed)
    text = synthetic_note(rng, n_chars=n_tokens * 6)
    offsets = bpe_like_offsets(text, rng)
    while len(offsets) < n_tokens:  # a longer note until it has enough tokens
        text = text + " " + synthetic_note(rng, n_chars=n_tokens * 3)
        offsets = bpe_like_offsets(text, rng)
    offsets = offsets[:n_tokens]
    text = text[: int(offsets[-1, 1])]
    scores = synthetic_maps(1, n_tokens, seed)[0]
    grid = [(0.2, 0.4), (0.2, 0.6), (0.4, 0.6), (0.5, 0.6)]
    timings: dict[str, list[float]] = {"runs": [], "peaks": [], "peaks_and_heat": [], "baseline": []}
    n_peaks = []
    for i in range(runs):
        lower, upper = grid[i % len(grid)]
        params = PeakParams(lower=lower, upper=upper)
        t0 = time.perf_counter()
        find_peaks(scores, params)
        t1 = time.perf_counter()
        token_spans, _ = note_peaks(scores, offsets, text, params)
        t2 = time.perf_counter()
        word_heat(text, offsets, scores)
        t3 = time.perf_counter()
        words = reference_extend_to_words(reference_loop_peaks(scores, lower=lower, upper=upper), offsets, text)
        reference_peak_char_spans(words, offsets, text)
        t4 = time.perf_counter()
        timings["runs"].append(t1 - t0)
        timings["peaks"].append(t2 - t1)
        timings["peaks_and_heat"].append(t3 - t1)
        timings["baseline"].append(t4 - t3)
        n_peaks.append(len(token_spans))
    ms = {name: statistics.median(values) * 1e3 for name, values in timings.items()}
    return {
        "n_tokens": int(len(scores)),
        "note_chars": len(text),
        "runs": runs,
        "mean_peaks": round(statistics.mean(n_peaks), 2),
        "find_peaks_ms_median": round(ms["runs"], 3),
        "note_peaks_ms_median": round(ms["peaks"], 3),
        "note_peaks_and_word_heat_ms_median": round(ms["peaks_and_heat"], 3),
        "baseline_loops_ms_median": round(ms["baseline"], 3),
        "note_peaks_speedup_vs_baseline": round(ms["baseline"] / ms["peaks"], 2),
        "target_ms": 5.0,
        "note": "note_peaks = runs + word extension + trimming (what every page and the dataset build use); "
        "baseline = reference-code runs loop + the old word-extension loop, untrimmed, no heat",
    }


# ---------------------------------------------------------------- word extension

_NOTE_WORDS = (
    "pt has tachycardia hypertension denies chest pain dyspnea syncope at rest ECG sinus rhythm "
    "troponin negative creatinine mg/dL SpO2 HR BP RR GCS alert oriented collaborating paziente "
    "riferisce dolore toracico anticoagulant warfarin apixaban INR allergy penicillin no known "
    "Müller perché già febbre µg temp °C bilateral crackles"
).split()
_NOTE_PUNCT = (",", ".", ":", ";", " -", " (", ")", "/", "%", " +")
_PRETOKENS = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?_+| ?[^\s\w]+|\s+(?!\S)|\s+")


def synthetic_note(rng, n_chars: int = 2_000) -> str:
    """About n_chars of terse clinical text: words, numbers, punctuation, line breaks."""
    parts, size = [], 0
    while size < n_chars:
        r = rng.random()
        if r < 0.72:
            part = " " + _NOTE_WORDS[rng.integers(len(_NOTE_WORDS))]
        elif r < 0.83:
            part = " " + str(rng.integers(0, 400)) + ("." + str(rng.integers(10)) if rng.random() < 0.3 else "")
        elif r < 0.95:
            part = _NOTE_PUNCT[rng.integers(len(_NOTE_PUNCT))]
        else:
            part = "\n\n" if rng.random() < 0.3 else "\n"
        parts.append(part)
        size += len(part)
    return "".join(parts).strip()


def bpe_like_offsets(text: str, rng) -> np.ndarray:
    """int32 (n, 2) offsets as a byte-level BPE tokenizer gives them: GPT-2-style pieces with
    their leading space, letter runs over 6 characters split in pieces of 2-5, and a non-ASCII
    character inside a piece as one token per UTF-8 byte, all with that character's offsets."""
    out = []
    for m in _PRETOKENS.finditer(text):
        a, b = m.span()
        while b - a > 6 and text[a:b].strip().isalpha():
            cut = a + int(rng.integers(2, 6)) + (text[a] == " ")
            out.append((a, cut))
            a = cut
        for i in range(a, b):  # byte tokens for a non-ASCII character
            if ord(text[i]) > 127:
                if i > a:
                    out.append((a, i))
                out += [(i, i + 1)] * len(text[i].encode())
                a = i + 1
        if a < b:
            out.append((a, b))
    return np.array(out, np.int32).reshape(-1, 2)


def word_extension(
    n_maps: int = 2_000,
    n_tokens: int = 300,
    n_chars: int = 2_000,
    *,
    maps_per_note: int = 10,
    repeat: int = 3,
    seed: int = 0,
) -> dict:
    """extend_to_words + peak_char_spans per map, against the reference loops, same run.

    Maps of `n_tokens` tokens (the first n_tokens of a note of about `n_chars` characters),
    `maps_per_note` maps per note in a row (the maps of one note come together, as in a dataset
    build: the reference's one regex pass per note is cached between them), peaks of
    `synthetic_maps` under the default parameters; only maps with peaks are timed (the others
    never reach word extension). CPU time (time.process_time: other processes on a shared
    machine do not count), best of `repeat` interleaved runs; results checked equal."""
    rng = np.random.default_rng(seed)
    notes = [synthetic_note(rng, n_chars) for _ in range(-(-n_maps // maps_per_note))]
    note_offsets = [bpe_like_offsets(t, rng)[:n_tokens] for t in notes]
    maps = synthetic_maps(n_maps, n_tokens, seed)
    jobs = [(i // maps_per_note, maps[i][: len(note_offsets[i // maps_per_note])]) for i in range(n_maps)]
    items = [
        (spans, note_offsets[k], notes[k])
        for (k, _), spans in zip(jobs, find_peaks_many([m for _, m in jobs]))
        if spans
    ]

    runs = {
        "reference": lambda: [
            (w := reference_extend_to_words(s, o, t), reference_peak_char_spans(w, o, t)) for s, o, t in items
        ],
        "new": lambda: [(w := extend_to_words(s, o, t), peak_char_spans(w, o, t)) for s, o, t in items],
        "many": lambda: extend_to_words_many(items, char_spans=True),
        "reference_words": lambda: [reference_extend_to_words(s, o, t) for s, o, t in items],
        "new_words": lambda: [extend_to_words(s, o, t) for s, o, t in items],
    }
    best, results = {}, {}
    for _ in range(repeat):  # interleaved, so that a busy spell of the machine hits them all
        for name, fn in runs.items():
            t = time.process_time()
            results[name] = fn()
            best[name] = min(best.get(name, math.inf), time.process_time() - t)
    if (
        not results["new"] == results["many"] == results["reference"]
        or results["new_words"] != results["reference_words"]
    ):
        raise AssertionError("extend_to_words / peak_char_spans disagree with the reference loops")
    us = {name: round(t * 1e6 / len(items), 1) for name, t in best.items()}
    return {
        "maps_with_peaks": len(items),
        "n_tokens": n_tokens,
        "mean_note_chars": round(statistics.mean(map(len, notes))),
        "maps_per_note": maps_per_note,
        "mean_peaks_per_map": round(sum(len(s) for s, _, _ in items) / len(items), 2),
        "reference_us_per_map": us["reference"],
        "new_us_per_map": us["new"],
        "many_us_per_map": us["many"],
        "speedup": round(best["reference"] / best["new"], 1),
        "speedup_many": round(best["reference"] / best["many"], 1),
        "words_only_reference_us_per_map": us["reference_words"],
        "words_only_new_us_per_map": us["new_words"],
        "words_only_speedup": round(best["reference_words"] / best["new_words"], 1),
        "note": "CPU microseconds per map with peaks, best of interleaved runs: extend_to_words then "
        "peak_char_spans (new; reference: the loops they replaced), extend_to_words_many(char_spans=True) "
        "(many: what ml.peaks.peaks_of_arrays calls); words_only: extend_to_words alone",
    }


# The word extension and character spans of ml.peaks before they were rewritten (verbatim but
# for the names): the baseline of `word_extension`.

_REFERENCE_WORD = re.compile(r"\w+")


def reference_extend_to_words(spans, offsets, text: str) -> list[tuple[int, int]]:
    """ml.peaks.extend_to_words as it was: numpy masks over all tokens at every step."""
    off = _reference_as_offsets(offsets, text)
    starts, ends = off[:, 0], off[:, 1]
    word_starts, word_ends = _reference_word_bounds(text) if spans else (np.zeros(0, np.int64),) * 2

    def word_at(pos):
        k = int(np.searchsorted(word_starts, pos, side="right")) - 1
        return k if k >= 0 and pos < word_ends[k] else None

    extended = []
    for s, e in spans:
        s, e = int(s), int(e)
        if not 0 <= s < e <= len(off):
            raise ValueError(f"token span {(s, e)} is not inside a note of {len(off)} tokens")
        while True:
            a, b = _reference_trim(text, int(starts[s:e].min()), int(ends[s:e].max()))
            if a == b:
                break  # whitespace only: no word to extend to
            k = word_at(a)
            if k is not None:
                a = int(word_starts[k])
            k = word_at(b - 1)
            if k is not None:
                b = int(word_ends[k])
            touched = np.flatnonzero((starts < b) & (ends > a) & (ends > starts))
            if touched.size == 0:
                break  # zero-width tokens only
            new_s, new_e = min(s, int(touched[0])), max(e, int(touched[-1]) + 1)
            if (new_s, new_e) == (s, e):
                break
            s, e = new_s, new_e
        extended.append((s, e))
    # merge spans sharing a token, or a character (tokens of one character may share offsets)
    merged: list[list[int]] = []
    for s, e in sorted(extended):
        if merged:
            ps, pe = merged[-1]
            if s < pe or starts[s:e].min() < ends[ps:pe].max():
                merged[-1][1] = max(pe, e)
                continue
        merged.append([s, e])
    return [(s, e) for s, e in merged]


@functools.lru_cache(maxsize=16)  # the tasks of one note come together: one regex pass per note
def _reference_word_bounds(text: str) -> tuple[np.ndarray, np.ndarray]:
    bounds = np.array([m.span() for m in _REFERENCE_WORD.finditer(text)], np.int64).reshape(-1, 2)
    starts, ends = bounds[:, 0].copy(), bounds[:, 1].copy()
    starts.flags.writeable = ends.flags.writeable = False  # shared through the cache
    return starts, ends


def reference_peak_char_spans(spans, offsets, text: str | None = None) -> list[tuple[int, int]]:
    """Character span `[start, end)` of each token span (aligned with `spans`). With `text`,
    leading and trailing whitespace is trimmed, unless the span holds only whitespace."""
    off = _reference_as_offsets(offsets, text)
    out = []
    for s, e in spans:
        if not 0 <= s < e <= len(off):
            raise ValueError(f"token span {(s, e)} is not inside a note of {len(off)} tokens")
        a, b = int(off[s:e, 0].min()), int(off[s:e, 1].max())
        if text is not None:
            ta, tb = _reference_trim(text, a, b)
            if ta < tb:
                a, b = ta, tb
        out.append((a, b))
    return out


def _reference_trim(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _reference_as_offsets(offsets, text: str | None) -> np.ndarray:
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2) if len(offsets) else np.zeros((0, 2), np.int64)
    if off.size and ((off[:, 0] < 0).any() or (off[:, 1] < off[:, 0]).any()):
        raise ValueError("offsets must be pairs 0 <= start <= end")
    if text is not None and off.size and off[:, 1].max() > len(text):
        raise ValueError(f"offsets reach character {int(off[:, 1].max())} of a {len(text)}-character note")
    return off
