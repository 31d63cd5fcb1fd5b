"""webapp.lib.rendering.heat_html (the note view's window, issue 41) writes the same bytes as the
segments and their HTML, checked against a per-character reference on many random inputs."""

import html
import math
import re

import numpy as np
import pytest

from ml.peaks import word_heat, words_of
from webapp.lib import rendering, windows
from webapp.review.noteview import window_html

# letters (some not ASCII), digits, the underscore, punctuation HTML escapes, whitespace and
# characters that are not word characters although they sit inside words (combining accent, emoji)
ALPHABET = (
    list("abcdefghxyz") * 3 + list("ÉéßøЖж日本0123456789_") + list(" " * 12) + list("\n\t\u00a0.,;:-/()&<>\"'%\u0301🙂")
)


def reference_html(text, offsets, scores, peaks=(), gold=(), *, peak_classes=(), first_peak=0, markers=None):
    """The straightforward algorithm: every character's word, peak and gold state; a segment
    wherever one of them changes; one piece of HTML per segment."""
    n = len(text)
    words = words_of(text)
    _, heat = word_heat(text, offsets, scores, words)
    word_of, peak_of, in_gold = [-1] * n, [-1] * n, [False] * n
    for k, (a, b) in enumerate(words):
        word_of[a:b] = [k] * (b - a)
    peaks = [(max(0, a), min(n, b)) for a, b in peaks if max(0, a) < min(n, b)]
    for k, (a, b) in enumerate(peaks):
        peak_of[a:b] = [k] * (b - a)
    for a, b in gold:  # may overlap, touch, be empty or reach past the text
        for x in range(max(0, a), min(n, b)):
            in_gold[x] = True
    starts = [
        x
        for x in range(n)
        if x == 0 or (word_of[x], peak_of[x], in_gold[x]) != (word_of[x - 1], peak_of[x - 1], in_gold[x - 1])
    ]
    out, open_peak = [], -1
    pending = sorted((markers or {}).items())
    for a, b in zip(starts, [*starts[1:], n]):
        while pending and pending[0][0] <= a:
            out.append(pending.pop(0)[1])
        if peak_of[a] != open_peak:
            if open_peak >= 0:
                out.append("</mark>")
            if peak_of[a] >= 0:
                extra = peak_classes[peak_of[a]] if peak_of[a] < len(peak_classes) else ""
                number = peak_of[a] + first_peak
                out.append(
                    f'<mark class="peak {extra}" id="peak-{number}" data-peak="{number}" '
                    f'data-n="{number + 1}" tabindex="-1">'
                )
            open_peak = peak_of[a]
        score = heat[word_of[a]] if word_of[a] >= 0 else math.nan
        classes = ([] if math.isnan(score) else [f"r{rendering.score_level(score)}"]) + (["g"] if in_gold[a] else [])
        piece = html.escape(text[a:b], quote=False)
        if classes:
            title = "" if math.isnan(score) else f' title="{score:.2f}"'
            out.append(f'<span class="{" ".join(classes)}"{title}>{piece}</span>')
        else:
            out.append(piece)
    if open_peak >= 0:
        out.append("</mark>")
    out.extend(marker for _, marker in pending)
    return "".join(out)


def random_text(rng, longest: int) -> str:
    return "".join(rng.choice(ALPHABET, int(rng.integers(0, longest + 1))).tolist())


def random_spans(rng, n: int, most: int) -> list[tuple[int, int]]:
    """Spans anywhere, some past either edge, empty or reversed, at 0 and at n."""
    spans = []
    for _ in range(int(rng.integers(0, most + 1))):
        a = int(rng.choice([0, n, int(rng.integers(-3, n + 4))]))
        spans.append((a, a + int(rng.integers(-2, max(3, n // 3)))))
    return spans


def random_map(rng, text: str):
    """Tokens cutting words anywhere: sorted, or shuffled, overlapping and of zero width; scores
    outside [0, 1], NaN, float32."""
    n = len(text)
    cuts = np.unique(rng.integers(0, n + 1, int(rng.integers(0, n // 2 + 2))))
    offsets = np.stack([cuts[:-1], cuts[1:]], axis=1) if len(cuts) > 1 else np.zeros((0, 2), np.int64)
    if len(offsets) and rng.random() < 0.3:
        offsets = offsets[: int(rng.integers(0, len(offsets) + 1))]  # the map stops early
    if len(offsets) and rng.random() < 0.2:
        extra = np.sort(rng.integers(0, n + 1, (int(rng.integers(1, 6)), 2)), axis=1)
        offsets = rng.permutation(np.concatenate([offsets, extra]))
    scores = rng.uniform(-0.2, 1.3, len(offsets))
    scores[rng.random(len(offsets)) < 0.1] = np.nan
    return offsets, scores.astype(np.float32) if rng.random() < 0.5 else scores


def random_case(rng, longest: int):
    text = random_text(rng, longest)
    n = len(text)
    offsets, scores = random_map(rng, text)
    peaks = random_spans(rng, n, 5)
    if rng.random() < 0.7:  # as ml.peaks gives them: sorted, not overlapping
        peaks = [(a, b) for a, b in sorted(peaks) if a < b]
        peaks = [span for k, span in enumerate(peaks) if k == 0 or span[0] >= peaks[k - 1][1]]
    markers = {
        int(x): f'<span class="map-edge" id="m{x}"></span>'
        for x in rng.choice([-1, 0, n, n + 1, *range(n)], int(rng.integers(0, 4)))
    }
    options = {
        "peak_classes": [f"state-{k}" for k in range(int(rng.integers(0, 6)))],
        "first_peak": int(rng.integers(0, 20)),
        "markers": markers or None,
    }
    return text, offsets, scores, peaks, random_spans(rng, n, 4), options


@pytest.mark.parametrize("seed, cases, longest", [(0, 1500, 60), (1, 400, 600), (2, 40, 5000)])
def test_heat_html_writes_the_bytes_of_the_reference_and_of_the_segments(seed, cases, longest):
    rng = np.random.default_rng(seed)
    for _ in range(cases):
        text, offsets, scores, peaks, gold, options = random_case(rng, longest)
        fast = rendering.heat_html(text, offsets, scores, peaks, gold, **options)
        assert fast == reference_html(text, offsets, scores, peaks, gold, **options), (text, peaks, gold, options)
        segs = rendering.segments(text, offsets, scores, peaks, gold)
        assert fast == rendering.segments_html(text, segs, **options)


@pytest.mark.parametrize(
    "text, offsets, scores, peaks, gold, markers",
    [
        ("", [], [], [], [], {0: "<i></i>", 3: "<b></b>"}),
        ("abc", [(0, 3)], [0.5], [(0, 3)], [(0, 3)], {0: "<i></i>", 3: "<b></b>"}),
        ("a<b & c>d", [(0, 9)], [np.nan], [(2, 3)], [(1, 2), (2, 4)], {5: "<i></i>"}),  # touching gold: one run
        ("  ,;  ", [(0, 6)], [0.9], [], [(0, 6)], None),  # no word at all
        ("tachycardic", [(0, 5), (5, 11)], [0.3, 0.95], [(2, 4), (4, 9)], [(3, 8)], {3: "<i></i>", 11: "<b></b>"}),
    ],
)
def test_heat_html_on_edge_cases(text, offsets, scores, peaks, gold, markers):
    fast = rendering.heat_html(text, offsets, scores, peaks, gold, markers=markers, peak_classes=["x"])
    assert fast == reference_html(text, offsets, scores, peaks, gold, markers=markers, peak_classes=["x"])
    assert html.unescape(re.sub(r"<[^>]+>", "", fast)) == text


def test_window_html_of_every_window_matches_the_reference_on_the_window():
    rng = np.random.default_rng(3)
    for _ in range(20):
        text = random_text(rng, 3000)
        offsets, scores = random_map(rng, text)
        offsets = np.sort(offsets, axis=0)  # a stored map's tokens are in order
        peaks = sorted({(a, b) for a, b in random_spans(rng, len(text), 6) if 0 <= a < b})
        peaks = [span for k, span in enumerate(peaks) if k == 0 or span[0] >= peaks[k - 1][1]]
        gold = random_spans(rng, len(text), 4)
        for win in windows.windows(text, size=int(rng.integers(50, 800))):
            local_offsets, local_scores = rendering.tokens_in(offsets, scores, win.start, win.end)
            shown = windows.spans_in(peaks, win)
            classes = [f"@@peak-{k}@@" for k in shown]
            markers = {int(rng.integers(0, win.end - win.start + 1)): "<span></span>"}
            expected = reference_html(
                text[win.start : win.end],
                local_offsets,
                local_scores,
                windows.clip([peaks[k] for k in shown], win),
                windows.clip(gold, win),
                peak_classes=classes,
                first_peak=shown.start,
                markers=markers,
            )
            got = window_html(
                text,
                win,
                offsets,
                scores,
                [peaks[k] for k in shown],
                gold,
                first_peak=shown.start,
                peak_classes=classes,
                markers=markers,
            )
            assert got == expected
