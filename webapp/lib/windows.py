"""Windows of a long note: the part of it that a page shows at once.

A note may be long (up to settings.IMPORT_MAX_NOTE_CHARS characters, and far longer than a
model's context). Its pages show one window of about WINDOW_CHARS characters at a time: the
HTML, the colours and the peaks' forms are built for that window only, so what a request
renders and sends is bounded by the window, not by the note.

Windows depend on the text alone, never on a map or a peak setting, so moving a slider or
switching the task keeps the reader on the same window. A window ends after the last line break
in its final quarter, else after the last space or tab, so no word is cut; only a run of
WINDOW_CHARS characters without whitespace is cut where the window is full. A remainder of at
most a quarter window joins the last window. Finding the windows takes a few `str.rfind` calls a
window: no per-character object is built.

Pure (standard library only): the review note page and the corpus note page both cut through here.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

WINDOW_CHARS = 20_000  # characters a page shows at once (about 3,000 words, 5,000 tokens)

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Window:
    index: int
    start: int
    end: int
    count: int  # windows of the note

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def previous(self) -> int | None:
        return self.index - 1 if self.index > 0 else None

    @property
    def next(self) -> int | None:
        return self.index + 1 if self.index + 1 < self.count else None

    @property
    def only(self) -> bool:
        return self.count == 1

    def holds(self, offset: int) -> bool:
        return self.start <= offset < self.end


def bounds(text: str, size: int | None = None) -> list[int]:
    """The windows' start offsets, then len(text): [0, s1, s2, ..., len(text)]."""
    size = max(1, size or WINDOW_CHARS)
    n = len(text)
    cuts = [0]
    start = 0
    while n - start > size + size // 4:
        end = start + size
        tail = start + size - size // 4
        cut = text.rfind("\n", tail, end)
        if cut < 0:
            cut = max(text.rfind(" ", start + 1, end), text.rfind("\t", start + 1, end))
        start = cut + 1 if cut >= 0 else end
        cuts.append(start)
    cuts.append(n)
    return cuts


def windows(text: str, size: int | None = None) -> list[Window]:
    cuts = bounds(text, size)
    count = len(cuts) - 1
    return [Window(k, a, b, count) for k, (a, b) in enumerate(zip(cuts, cuts[1:]))]


def pick(parts: Sequence[Window], index) -> Window:
    """The window of that index (a query value); the first for anything else."""
    try:
        k = int(index)
    except (TypeError, ValueError):
        return parts[0]
    return parts[min(max(k, 0), len(parts) - 1)]


def holding(parts: Sequence[Window], offset: int) -> Window:
    """The window holding a character offset."""
    starts = [w.start for w in parts]
    return parts[max(0, bisect.bisect_right(starts, offset) - 1)]


def spans_in(spans: Sequence[Span], window: Window) -> range:
    """Indices of the spans overlapping the window, for spans sorted by start that do not overlap
    each other (peaks): their ends are sorted too, so two binary searches find them."""
    ends = [b for _, b in spans]
    starts = [a for a, _ in spans]
    return range(bisect.bisect_right(ends, window.start), bisect.bisect_left(starts, window.end))


def clip(spans: Iterable[Span], window: Window) -> list[Span]:
    """The parts of the spans inside the window, relative to its start (spans may overlap)."""
    out = []
    for a, b in spans:
        a, b = max(int(a), window.start), min(int(b), window.end)
        if a < b:
            out.append((a - window.start, b - window.start))
    return out
