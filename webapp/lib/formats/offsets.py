"""UTF-16 code units <-> code points. Formats made by Java or JavaScript tools (UIMA CAS XMI,
Label Studio) count offsets in UTF-16 code units: a character outside the Basic Multilingual
Plane (an emoji, U+1F600) is one code point in Python and two units there. No Django here."""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate


class Utf16Offsets:
    """Offset conversion for one text; O(1) to units, O(log n) back. An ASCII/BMP-only text
    needs no table (both counts agree)."""

    def __init__(self, text: str):
        self.n = len(text)
        if all(ord(c) < 0x10000 for c in text):
            self.units = None
        else:
            self.units = [0, *accumulate(2 if ord(c) >= 0x10000 else 1 for c in text)]

    def to_units(self, point: int) -> int:
        return point if self.units is None else self.units[point]

    def to_points(self, unit: int) -> int:
        """The code point at `unit`; ValueError when it falls inside a surrogate pair or past the end."""
        if self.units is None:
            if not 0 <= unit <= self.n:
                raise ValueError(f"UTF-16 offset {unit} is outside the text ({self.n} units)")
            return unit
        i = bisect_left(self.units, unit)
        if i > self.n or self.units[i] != unit:
            if unit > self.units[-1] or unit < 0:
                raise ValueError(f"UTF-16 offset {unit} is outside the text ({self.units[-1]} units)")
            raise ValueError(f"UTF-16 offset {unit} falls inside a character outside the BMP (a surrogate pair)")
        return i
