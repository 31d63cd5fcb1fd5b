"""The sentence (or line) view of a note: the whole note at a glance, one mark per sentence.

`view=sentences` on the review note page swaps the word heat of one window for:
* a map of the whole note: one SVG rectangle per sentence (or line, `by=line`), as wide as its
  text (wrapped like the text, so a 20,000-character note fits in about 40 rows), coloured by
  the sentence's relevance (ml.sentences: the most relevant token's score by default), each a
  link to that sentence;
* the chosen sentence (`sentence=K`, 0-based; by default the most relevant one) with its word
  heat, between the sentences before and after it, also with heat;
* the most relevant sentences, each a link.
Colours are ml.sentences.levels (the bins r0-r7 of the word heat, relative to the note's most
relevant sentence). The rectangles are placed by the server in SVG user units (the page's CSP
refuses style attributes); no script is needed, htmx only swaps the panel faster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ml import sentences
from webapp.lib import rendering, windows

VIEWS = ("words", "sentences")
ROW_WIDTH = 1000  # SVG user units of one row of the map
TARGET_ROWS = 40  # a long note's map is scaled to about this many rows
MAX_UNITS_PER_CHAR = 4.0  # a short note's sentences stay this wide per character at most
ROW_HEIGHT, ROW_GAP = 10, 3
CONTEXT = 2  # sentences shown before and after the chosen one
TOP = 8  # most relevant sentences listed
TITLE_CHARS = 160


@dataclass
class Mark:
    index: int
    x: float
    y: int
    width: float
    level: int | None
    title: str = ""  # the sentence's text (truncated), shown on hover


@dataclass
class SentenceView:
    by: str
    units: list = field(default_factory=list)  # ml.sentences.Unit
    levels: list = field(default_factory=list)
    marks: list = field(default_factory=list)
    height: int = 0
    chosen: int | None = None
    shown: list = field(default_factory=list)  # [{"index", "html", "chosen", "value", "level"}]
    top: list = field(default_factory=list)  # [{"index", "text", "value", "level"}]
    titles: dict = field(default_factory=dict)  # index -> plain text (truncated) for the marks

    @property
    def count(self) -> int:
        return len(self.units)


def build(text: str, offsets, scores, gold=(), *, by: str = "sentence", chosen=None) -> SentenceView:
    """The sentence view of a note (module doc); offsets/scores may be empty (no map yet)."""
    by = by if by in sentences.BY else "sentence"
    spans = sentences.units(text, by)
    units = sentences.aggregate(spans, offsets, scores)
    levels = sentences.levels(units, rendering.LEVELS)
    view = SentenceView(by, units, levels)
    if not units:
        return view
    view.titles = {i: _title(text, u) for i, u in enumerate(units)}
    view.marks, view.height = layout(units, levels, len(text))
    for mark in view.marks:
        mark.title = view.titles[mark.index]
    ranked = sorted((i for i, u in enumerate(units) if u.value is not None), key=lambda i: (-units[i].value, i))
    pick = _int(chosen)
    view.chosen = pick if pick is not None and 0 <= pick < len(units) else (ranked[0] if ranked else 0)
    for i in range(max(0, view.chosen - CONTEXT), min(len(units), view.chosen + CONTEXT + 1)):
        unit = units[i]
        win = windows.Window(index=0, start=unit.start, end=unit.end, count=1)
        local_offsets, local_scores = rendering.tokens_in(offsets, scores, unit.start, unit.end)
        piece = text[unit.start : unit.end]
        view.shown.append(
            {
                "index": i,
                "number": i + 1,
                "html": rendering.heat_html(piece, local_offsets, local_scores, (), windows.clip(gold, win)),
                "chosen": i == view.chosen,
                "value": unit.value,
                "level": levels[i],
            }
        )
    view.top = [
        {"index": i, "number": i + 1, "text": view.titles[i], "value": units[i].value, "level": levels[i]}
        for i in ranked[:TOP]
    ]
    return view


def layout(units, levels, n_chars: int) -> tuple[list[Mark], int]:
    """Rectangles flowing like the text: each unit as wide as its characters (at least 2 units)
    times the scale, wrapped at ROW_WIDTH; a unit reaching past a row's end continues on the next."""
    scale = min(MAX_UNITS_PER_CHAR, ROW_WIDTH * TARGET_ROWS / max(n_chars, 1))
    marks, x, row = [], 0.0, 0
    for i, (unit, level) in enumerate(zip(units, levels)):
        width = max(2.0, (unit.end - unit.start) * scale)
        while width > 0:
            if x >= ROW_WIDTH - 1:
                x, row = 0.0, row + 1
            part = min(width, ROW_WIDTH - x)
            marks.append(Mark(i, round(x, 1), row * (ROW_HEIGHT + ROW_GAP), round(max(part - 1, 1), 1), level))
            x += part
            width -= part
        x += 2  # a gap between sentences
    return marks, (row + 1) * (ROW_HEIGHT + ROW_GAP)


def _title(text: str, unit) -> str:
    piece = " ".join(text[unit.start : unit.end].split())
    return piece if len(piece) <= TITLE_CHARS else piece[: TITLE_CHARS - 1] + "…"


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
