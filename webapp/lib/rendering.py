"""A note's text with its relevance, peaks and gold evidence, as segments and as HTML.

Pure (numpy and the standard library, no Django): the note view, the live tuning, the
validation round and the comparison all render through here.

Heat is shown per WORD, never per token: `segments(text, offsets, scores, peaks, gold)` cuts the
text at every word boundary, peak boundary and gold boundary, so each segment lies in at most
one word and one peak and is wholly in or out of gold evidence. A word's heat is the MAXIMUM
relevance of the tokens overlapping it (ml.peaks.word_heat), so a word split into several tokens
("allopur|inol") is one colour. Punctuation, whitespace and text the map does not reach get no
heat and no colour. The concatenated segment texts are the note text exactly.

`segments_html` writes them as HTML: the text HTML-escaped and nothing else added, so the
element's text content is the note as written (whitespace and newlines kept by CSS
`white-space: pre-wrap`); colour classes `r0`..`r7` (LEVELS bins of the score over [0, 1]),
`g` for gold evidence, and each peak wrapped in one `<mark class="peak">` whose number is
drawn by CSS from `data-n` (a pseudo-element, not text). `heat_html` writes the same bytes
straight from the map, the text's words and the gaps between them, with no Segment and no
per-character array: the note view renders a window through it on every request (issue 41).

A long note is rendered one window at a time (webapp.lib.windows): the caller passes the
window's text, the map's tokens in it (`tokens_in`: clipped and counted from the window's start)
and the peak and gold spans cut to it; `segments_html(first_peak=...)` keeps the peaks' numbers
in the whole note, and `markers` puts a marker (where a map cut by the model's context stops)
between two segments (`diff_html` too). The per-character arrays of `segments` are then as long
as the window.

Two maps of the same note may come from different tokenisers. `diff_segments` compares them
word by word: each word takes its heat in each map (as above), so the tokenisations do not
matter, and each segment carries both heats and their signed difference (first minus second).
`project_scores` puts a map onto another map's tokens (length-weighted mean of the source's
per-character scores; characters no source token covers count 0), so token-level metrics of
ml.metrics apply to two tokenisations.
"""

from __future__ import annotations

import bisect
import html
import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ml.peaks import word_heat, words_of

Span = tuple[int, int]

LEVELS = 8  # colour bins of a relevance score in [0, 1]: r0 = [0, 1/8), ..., r7 = [7/8, 1]
DIFF_LEVELS = 4  # bins of |first - second| per side, beyond the neutral band
DIFF_NEUTRAL = 0.1  # |difference| below this is drawn neutral (maps carry noise of about this size)
# A colour-blind-safe single-hue ramp (ColorBrewer Blues, light end first); the two darkest
# bins take white text (contrast >= 4.5:1 for both text colours). Mirrored in review.css.
PALETTE = ("#ffffff", "#eef5fc", "#dbe9f6", "#c2d9ee", "#a0cae3", "#74b0d8", "#4a8fc6", "#2c6fad")
DARK_LEVELS = frozenset({7})


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    end: int
    score: float | None  # heat of the word holding the segment; None outside words or where the map stops
    level: int | None  # colour bin of the score
    peak: int | None  # index of the peak holding the segment
    gold: bool


@dataclass(frozen=True, slots=True)
class DiffSegment:
    start: int
    end: int
    first: float | None
    second: float | None
    level: int  # -DIFF_LEVELS..DIFF_LEVELS: > 0 where the first map is higher, < 0 where the second is
    gold: bool


def score_level(score: float) -> int:
    """Colour bin of a score; scores are clipped to [0, 1]."""
    if not math.isfinite(score):
        return 0
    return min(LEVELS - 1, max(0, int(score * LEVELS)))


def diff_level(difference: float) -> int:
    """Signed bin of first - second: 0 inside the neutral band, else 1..DIFF_LEVELS by size."""
    size = abs(difference)
    if not math.isfinite(size) or size < DIFF_NEUTRAL:
        return 0
    bin_ = min(DIFF_LEVELS, 1 + int((min(size, 1.0) - DIFF_NEUTRAL) / ((1 - DIFF_NEUTRAL) / DIFF_LEVELS)))
    return bin_ if difference > 0 else -bin_


def legend() -> list[dict]:
    """The colour scale: level, lower and upper score, colour."""
    return [{"level": k, "low": k / LEVELS, "high": (k + 1) / LEVELS, "colour": PALETTE[k]} for k in range(LEVELS)]


def diff_legend() -> list[dict]:
    """The difference scale, strongest 'first higher' first."""
    step = (1 - DIFF_NEUTRAL) / DIFF_LEVELS
    out = []
    for k in range(DIFF_LEVELS, 0, -1):
        out.append(
            {
                "level": k,
                "css": f"dA{k}",
                "low": DIFF_NEUTRAL + (k - 1) * step,
                "high": DIFF_NEUTRAL + k * step,
                "side": "first",
            }
        )
    out.append({"level": 0, "css": "d0", "low": 0.0, "high": DIFF_NEUTRAL, "side": "neither"})
    for k in range(1, DIFF_LEVELS + 1):
        out.append(
            {
                "level": -k,
                "css": f"dB{k}",
                "low": DIFF_NEUTRAL + (k - 1) * step,
                "high": DIFF_NEUTRAL + k * step,
                "side": "second",
            }
        )
    return out


# ---------------------------------------------------------------- characters


def char_owner(offsets, n_chars: int) -> np.ndarray:
    """Index of the token covering each character (-1: none). Offsets past the text are cut."""
    owner = np.full(n_chars, -1, np.int64)
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    for t, (s, e) in enumerate(off.tolist()):
        if e > s:
            owner[max(s, 0) : min(e, n_chars)] = t
    return owner


def char_scores(offsets, scores, n_chars: int) -> tuple[np.ndarray, np.ndarray]:
    """(score per character (0 where no token), covered mask)."""
    owner = char_owner(offsets, n_chars)
    values = np.asarray(scores, dtype=np.float64)
    covered = owner >= 0
    out = np.zeros(n_chars)
    out[covered] = values[owner[covered]]
    return out, covered


def project_scores(offsets_src, scores_src, offsets_dst, n_chars: int) -> np.ndarray:
    """Scores of the source map on the destination map's tokens (see module doc)."""
    per_char, _ = char_scores(offsets_src, scores_src, n_chars)
    cumulative = np.concatenate(([0.0], np.cumsum(per_char)))
    dst = np.clip(np.asarray(offsets_dst, dtype=np.int64).reshape(-1, 2), 0, n_chars)
    widths = dst[:, 1] - dst[:, 0]
    sums = cumulative[dst[:, 1]] - cumulative[dst[:, 0]]
    return np.divide(sums, widths, out=np.zeros(len(dst)), where=widths > 0)


def same_tokens(offsets_a, offsets_b) -> bool:
    a, b = np.asarray(offsets_a).reshape(-1, 2), np.asarray(offsets_b).reshape(-1, 2)
    return a.shape == b.shape and bool((a == b).all())


def _clip(spans: Sequence[Span], n: int) -> list[Span]:
    out = []
    for a, b in spans:
        a, b = max(0, int(a)), min(n, int(b))
        if a < b:
            out.append((a, b))
    return out


def _span_index(spans: Sequence[Span], n: int) -> np.ndarray:
    index = np.full(n, -1, np.int64)
    for i, (a, b) in enumerate(spans):
        index[a:b] = i
    return index


def _cuts(n: int, *arrays_and_spans) -> list[int]:
    cuts = {0, n}
    for item in arrays_and_spans:
        if isinstance(item, np.ndarray):
            if item.size > 1:
                cuts.update((np.flatnonzero(item[1:] != item[:-1]) + 1).tolist())
        else:
            for a, b in item:
                cuts.update((a, b))
    return sorted(cuts)


# ---------------------------------------------------------------- one map


def segments(text: str, offsets, scores, peaks: Sequence[Span] = (), gold: Sequence[Span] = ()) -> list[Segment]:
    """Segments of the note (see module doc). `peaks` and `gold` are character spans; peaks
    must not overlap each other (ml.peaks merges them); gold spans may overlap."""
    n = len(text)
    words = words_of(text)
    _, heat = word_heat(text, offsets, scores, words)
    word_of = _span_index(words, n)
    peaks = _clip(peaks, n)
    gold = _clip(gold, n)
    peak_of = _span_index(peaks, n)
    gold_mask = _mask(gold, n)
    levels = token_levels(heat).tolist()
    values = [None if math.isnan(h) else h for h in heat.tolist()]
    word_list, peak_list, gold_list = word_of.tolist(), peak_of.tolist(), gold_mask.tolist()
    out = []
    bounds = _cuts(n, word_of, peak_of, gold_mask)
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        w = word_list[a]
        score = values[w] if w >= 0 else None
        p = peak_list[a]
        out.append(Segment(a, b, score, levels[w] if score is not None else None, p if p >= 0 else None, gold_list[a]))
    return out


def _mask(spans: Sequence[Span], n: int) -> np.ndarray:
    mask = np.zeros(n, bool)
    for a, b in spans:
        mask[a:b] = True
    return mask


def token_levels(scores) -> np.ndarray:
    """score_level of every score at once."""
    x = np.asarray(scores, dtype=np.float64)
    x = np.where(np.isfinite(x), x, 0.0)  # as score_level: not a number -> bin 0
    return np.clip((x * LEVELS).astype(np.int64), 0, LEVELS - 1)


def segments_html(
    text: str,
    segs: Sequence[Segment],
    *,
    peak_classes: Sequence[str] = (),
    titles: bool = True,
    first_peak: int = 0,
    markers: Mapping[int, str] | None = None,
) -> str:
    """HTML of the segments (see module doc). `peak_classes[i]` is added to peak i's mark
    (e.g. its review state). Peaks are numbered from `first_peak` (a window's first peak in the
    note). `markers` {offset: HTML} are written, as given, before the first segment starting at
    or after the offset (e.g. where a relevance map ends)."""
    escape = html.escape
    out: list[str] = []
    open_peak = None
    pending = sorted((markers or {}).items())
    for s in segs:
        while pending and pending[0][0] <= s.start:
            out.append(pending.pop(0)[1])
        if s.peak != open_peak:
            if open_peak is not None:
                out.append("</mark>")
            if s.peak is not None:
                out.append(_peak_mark(s.peak, peak_classes, first_peak))
            open_peak = s.peak
        piece = escape(text[s.start : s.end], quote=False)
        classes = []
        if s.level is not None:
            classes.append(f"r{s.level}")
        if s.gold:
            classes.append("g")
        if classes:
            title = f' title="{s.score:.2f}"' if titles and s.score is not None else ""
            out.append(f'<span class="{" ".join(classes)}"{title}>{piece}</span>')
        else:
            out.append(piece)
    if open_peak is not None:
        out.append("</mark>")
    out.extend(marker for _, marker in pending)
    return "".join(out)


def _peak_mark(peak: int, peak_classes: Sequence[str], first_peak: int) -> str:
    extra = peak_classes[peak] if peak < len(peak_classes) else ""
    number = peak + first_peak
    return f'<mark class="peak {extra}" id="peak-{number}" data-peak="{number}" data-n="{number + 1}" tabindex="-1">'


# re.split keeps the captured words: gap, word, gap, ..., word, gap (the words of words_of)
_WORD_RUNS = re.compile(r"(\w+)")
_ESCAPED = re.compile(r"[&<>]")  # what html.escape(quote=False) rewrites; never inside a word


def heat_html(
    text: str,
    offsets,
    scores,
    peaks: Sequence[Span] = (),
    gold: Sequence[Span] = (),
    *,
    peak_classes: Sequence[str] = (),
    first_peak: int = 0,
    markers: Mapping[int, str] | None = None,
) -> str:
    """`segments_html(text, segments(text, offsets, scores, peaks, gold), ...)`, the same bytes,
    built from the text's pieces (its words and the gaps between them) rather than from a
    Segment per piece and arrays as long as the text: the note view renders a window per request.

    Most of the text lies outside peaks and gold, so each piece's HTML there is built once and
    joined; only the few stretches between peak, gold and marker positions are cut apart."""
    n = len(text)
    escape = html.escape
    pieces = _WORD_RUNS.split(text)  # odd indices: words; only the first and last gap may be empty
    edges = list(itertools.accumulate(map(len, pieces), initial=0))  # piece i is [edges[i], edges[i + 1])
    words = list(zip(edges[1:-1:2], edges[2::2]))
    _, heat = word_heat(text, offsets, scores, words)
    heats, levels = heat.tolist(), token_levels(heat).tolist()

    plain = pieces[:]  # each piece's HTML outside gold evidence
    plain[1::2] = [
        word if math.isnan(h) else f'<span class="r{level}" title="{h:.2f}">{word}</span>'
        for word, h, level in zip(pieces[1::2], heats, levels)
    ]
    for i in {bisect.bisect_right(edges, m.start()) - 1 for m in _ESCAPED.finditer(text)}:
        plain[i] = escape(pieces[i], quote=False)

    def piece_html(i: int, a: int, b: int, in_gold: bool) -> str:
        """HTML of characters [a, b) of piece i, as segments_html writes that segment."""
        piece = text[a:b]
        h = heats[i // 2] if i % 2 else math.nan  # piece 2k + 1 is word k; gaps carry no heat
        if math.isnan(h):
            return f'<span class="g">{escape(piece, quote=False)}</span>' if in_gold else escape(piece, quote=False)
        css = f"r{levels[i // 2]} g" if in_gold else f"r{levels[i // 2]}"
        return f'<span class="{css}" title="{h:.2f}">{piece}</span>'

    peaks, gold = _clip(peaks, n), _clip(gold, n)

    def peak_at(x: int) -> int | None:  # the last peak holding x, as _span_index writes them
        return max((i for i, (a, b) in enumerate(peaks) if a <= x < b), default=None)

    def gold_at(x: int) -> bool:
        return any(a <= x < b for a, b in gold)

    # a segment ends where the peak or gold evidence changes, not at every span edge (spans may
    # overlap or touch)
    edges_of_spans = {x for a, b in (*peaks, *gold) for x in (a, b) if 0 < x < n}
    cuts = sorted(x for x in edges_of_spans if peak_at(x) != peak_at(x - 1) or gold_at(x) != gold_at(x - 1))
    pending = sorted((markers or {}).items())
    # a marker goes before the first segment starting at or after its offset: a cut (already a
    # stop) or the next piece's start, made a stop here
    marker_stops = [edges[bisect.bisect_left(edges, offset)] for offset, _ in pending if offset < n]
    stops = sorted({0, n, *cuts, *marker_stops}) if n else []

    out: list[str] = []
    open_peak = None
    for x, y in zip(stops, stops[1:]):  # one peak and gold state from x to y
        while pending and pending[0][0] <= x:
            out.append(pending.pop(0)[1])
        peak, in_gold = peak_at(x), gold_at(x)
        if peak != open_peak:
            if open_peak is not None:
                out.append("</mark>")
            if peak is not None:
                out.append(_peak_mark(peak, peak_classes, first_peak))
            open_peak = peak
        first, last = bisect.bisect_right(edges, x) - 1, bisect.bisect_right(edges, y - 1) - 1
        if first == last:
            out.append(piece_html(first, x, y, in_gold))
            continue
        out.append(piece_html(first, x, edges[first + 1], in_gold))
        if in_gold:
            out.extend(piece_html(i, edges[i], edges[i + 1], True) for i in range(first + 1, last))
        else:
            out.extend(plain[first + 1 : last])
        out.append(piece_html(last, edges[last], y, in_gold))
    if open_peak is not None:
        out.append("</mark>")
    out.extend(marker for _, marker in pending)
    return "".join(out)


def tokens_in(offsets, scores, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """The tokens overlapping characters [start, end) of a note, clipped to them and counted from
    `start`, with their scores: a window's part of a map (numpy masks, no per-token object)."""
    off = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    values = np.asarray(scores).reshape(-1)
    keep = (off[:, 1] > start) & (off[:, 0] < end)
    return np.clip(off[keep] - start, 0, end - start), values[keep]


# ---------------------------------------------------------------- two maps


def diff_segments(text: str, offsets_a, scores_a, offsets_b, scores_b, gold: Sequence[Span] = ()) -> list[DiffSegment]:
    """Word-level comparison of two maps of one note (see module doc)."""
    n = len(text)
    words = words_of(text)
    _, heat_a = word_heat(text, offsets_a, scores_a, words)
    _, heat_b = word_heat(text, offsets_b, scores_b, words)
    word_of = _span_index(words, n)
    gold_mask = _mask(_clip(gold, n), n)
    va = [None if math.isnan(h) else h for h in heat_a.tolist()]
    vb = [None if math.isnan(h) else h for h in heat_b.tolist()]
    word_list, gold_list = word_of.tolist(), gold_mask.tolist()
    out = []
    bounds = _cuts(n, word_of, gold_mask)
    for a, b in zip(bounds, bounds[1:]):
        if a == b:
            continue
        w = word_list[a]
        first, second = (va[w], vb[w]) if w >= 0 else (None, None)
        level = 0 if first is None and second is None else diff_level((first or 0.0) - (second or 0.0))
        out.append(DiffSegment(a, b, first, second, level, gold_list[a]))
    return out


def diff_html(text: str, segs: Sequence[DiffSegment], *, markers: Mapping[int, str] | None = None) -> str:
    """HTML of the difference segments; `markers` as in segments_html."""
    escape = html.escape
    out = []
    pending = sorted((markers or {}).items())
    for s in segs:
        while pending and pending[0][0] <= s.start:
            out.append(pending.pop(0)[1])
        piece = escape(text[s.start : s.end], quote=False)
        if s.first is None and s.second is None and not s.gold:
            out.append(piece)
            continue
        css = "d0" if s.level == 0 else (f"dA{s.level}" if s.level > 0 else f"dB{-s.level}")
        if s.gold:
            css += " g"
        a = "-" if s.first is None else f"{s.first:.2f}"
        b = "-" if s.second is None else f"{s.second:.2f}"
        out.append(f'<span class="{css}" title="{a} vs {b}">{piece}</span>')
    out.extend(marker for _, marker in pending)
    return "".join(out)
