"""The numbers a page writes for code rather than for a person (form values, slider bounds, data-
attributes, SVG geometry, inline style widths), and which of them would not parse back.

Italian and Spanish write 0,85 where English writes 0.85 (Django's formats); a template writes a
machine number with |unlocalize or inside {% localize off %}. `unparsable(html)` lists the
attributes whose number Python's float() (and so JavaScript's parseFloat, an <input>'s value
sanitizer, an SVG length) would refuse or read wrong; `machine_numbers(html)` lists every such
attribute it checked, so a test can also assert that the page drew what it is about."""

import html as html_module
import re

# One attribute of a start tag: name="value" or name='value'.
_ATTRIBUTE = re.compile(r"""\s([a-zA-Z_:][-\w:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_START_TAG = re.compile(r"<([a-zA-Z][-\w:]*)((?:[^<>\"']|\"[^\"]*\"|'[^']*')*)>")

# Attributes that hold one number (an SVG length may end in a unit: %, px, em).
LENGTHS = {"x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "rx", "ry", "width", "height", "offset"}
# Attributes whose value is a number when it looks like one (else text: a name, a key, a hash).
MAYBE_NUMBERS = {"value", "min", "max", "step", "low", "high", "optimum", "aria-valuenow", "aria-valuemin"}
# Lists of numbers separated by spaces (SVG's own comma separator is not used by our templates).
NUMBER_LISTS = {"viewbox"}

# A number in either notation: 12, -0.5, 1e-3, 0,85, 12.400, 1.234,5 (what a localized value looks like).
_NUMBER_LIKE = re.compile(r"^[-+]?(?:\d[\d.,]*|[.,]\d+)(?:[eE][-+]?\d+)?(?:%|px|em|ex|rem|pt)?$")
_DECIMAL_COMMA = re.compile(r"\d,\d")
_UNIT = re.compile(r"(?:%|px|em|ex|rem|pt)$")
_STYLE_NUMBER = re.compile(r"(?:^|;)\s*(?:width|height|left|right|top|bottom|flex-basis)\s*:\s*([^;]+)")


def _attributes(page: str):
    for tag in _START_TAG.finditer(page):
        for attribute in _ATTRIBUTE.finditer(" " + tag.group(2)):
            name = attribute.group(1).lower()
            value = attribute.group(2) if attribute.group(2) is not None else attribute.group(3)
            yield tag.group(1).lower(), name, html_module.unescape(value).strip()


def _parses(text: str) -> bool:
    """float() reads it, with no decimal comma and no grouping (a grouped 12.400 reads as 12.4)."""
    text = _UNIT.sub("", text.strip())
    if _DECIMAL_COMMA.search(text) or text.count(".") > 1:
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def machine_numbers(page: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value) of every machine number the page writes in an attribute."""
    found = []
    for tag, name, value in _attributes(page):
        if name in LENGTHS or name in NUMBER_LISTS:
            if value and any(c.isdigit() for c in value):
                found.append((tag, name, value))
        elif name in MAYBE_NUMBERS or name.startswith("data-"):
            if _NUMBER_LIKE.match(value):
                found.append((tag, name, value))
        elif name == "style":
            found.extend((tag, "style", m.group(1).strip()) for m in _STYLE_NUMBER.finditer(value))
    return found


def unparsable(page: str) -> list[tuple[str, str, str]]:
    """(tag, attribute, value) of every machine number on the page that would not parse back."""
    bad = []
    for tag, name, value in machine_numbers(page):
        parts = value.split() if name in NUMBER_LISTS else [value]
        if not all(_parses(part) for part in parts):
            bad.append((tag, name, value))
    return bad
