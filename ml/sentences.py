"""Relevance aggregated to sentences or lines, so a long note can be scanned at a glance.

Units (`units(text, by)`), each a character span with its surrounding whitespace left out;
empty units (blank lines) are dropped, so the spans are ordered and disjoint:
* "line": every line (split at "\\n"; "\\r\\n" counts as one break).
* "sentence": every line, cut further after ".", "!", "?" or ";" followed by whitespace, unless
  the dot follows a single letter ("p. o.", "y.o.", "E. coli"), read as an abbreviation. ("3.5"
  has no whitespace after its dot; "since 2019. BP" ends a sentence.) Clinical notes break lines
  far more reliably than they punctuate, so a line break always ends a sentence.

Aggregation (`aggregate(units, offsets, scores, how)`): each token belongs to the unit holding
its last character (a token's leading space lies in the gap before a unit); tokens outside
every unit, or beyond the map's reach, belong to none. A unit's value is
* "max" (default): its most relevant token. A sentence holding one strong peak stands out
  whatever its length; the mean would dilute it in a long sentence.
* "mean": mean token relevance (favours short, dense sentences).
* "sum": relevance mass (favours long sentences; the shares of the note's mass add up to 1).
A unit no token reaches has value None (not computed: the map stops before it).
`levels` bins the values over [0, 1] relative to the note's highest unit, for colour.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BY = ("sentence", "line")
HOW = ("max", "mean", "sum")
_END = re.compile(r"[.!?;]+(?=\s)")
_ABBREVIATION = re.compile(r"(?:^|[\s(.])[^\W\d]$")


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    value: float | None = None  # aggregated relevance; None: no token of the map reaches it
    tokens: int = 0


def units(text: str, by: str = "sentence") -> list[tuple[int, int]]:
    """The character spans of the note's lines or sentences (module doc)."""
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}")
    out = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        pieces = [(start, end)] if by == "line" else _sentences(text, start, end)
        out += [span for span in (_strip(text, a, b) for a, b in pieces) if span is not None]
        start = end + 1
    return out


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out, begin = [], start
    for m in _END.finditer(text, start, end):
        if m.group() == "." and _ABBREVIATION.search(text, begin, m.start()):
            continue  # "p." or "y.o." is not the end of a sentence
        out.append((begin, m.end()))
        begin = m.end()
    out.append((begin, end))
    return out


def _strip(text: str, a: int, b: int) -> tuple[int, int] | None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if b > a else None


def aggregate(spans: Sequence[tuple[int, int]], offsets, scores, how: str = "max") -> list[Unit]:
    """Each unit's value from the tokens it holds (module doc)."""
    if how not in HOW:
        raise ValueError(f"how must be one of {', '.join(HOW)}")
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    scores = np.asarray(scores, dtype=np.float64)
    if len(offsets) != len(scores):
        raise ValueError("offsets and scores must have the same length")
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    ends = np.array([e for _, e in spans], dtype=np.int64)
    last = offsets[:, 1] - 1  # a token's last character
    unit = np.searchsorted(starts, last, side="right") - 1
    inside = (unit >= 0) & (offsets[:, 1] > offsets[:, 0])
    inside[inside] &= last[inside] < ends[unit[inside]]
    out = []
    for k, (s, e) in enumerate(spans):
        held = scores[inside & (unit == k)]
        if not held.size:
            out.append(Unit(s, e))
            continue
        value = float(held.max() if how == "max" else held.mean() if how == "mean" else held.sum())
        out.append(Unit(s, e, value, int(held.size)))
    return out


def levels(values: Sequence[Unit], n_levels: int = 8) -> list[int | None]:
    """Colour bin of each unit, 0..n_levels-1, relative to the note's highest value (None: no value)."""
    top = max((u.value for u in values if u.value is not None), default=0.0)
    out = []
    for u in values:
        if u.value is None:
            out.append(None)
        else:
            share = u.value / top if top > 0 else 0.0
            out.append(min(n_levels - 1, max(0, int(share * n_levels))))
    return out
