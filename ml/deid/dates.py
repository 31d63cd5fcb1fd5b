"""Dates in Italian, Spanish and English clinical text: find them, parse them, write a new one
in the same shape.

    find_dates(text, language) -> [(start, end), ...]   sorted, non-overlapping, half-open
    parse_date(text, language) -> ParsedDate | None      one date's text (a span from find_dates)
    ParsedDate.value                                     a datetime.date
    ParsedDate.render(new_value) -> str                  the new date, written like the old one

Shapes found (month names in the note's language, any case, full or abbreviated):
  numeric        "03/03/24", "3/3/2024", "03.03.2024", "3-3-2024"  (day first; see DAYFIRST)
  ISO            "2024-03-03", "2024/3/3"
  month/year     "03/2024"                                          (value: the 1st)
  day month year "3 marzo 2024", "12 de enero de 2023", "3rd March 2024", "3rd of March, 2024",
                 "1° marzo 2024", "03-Mar-2024", "3 mar. 2024"
  month day year "March 3, 2024", "Mar 3rd 2024"                    (English)
  month year     "marzo 2024", "enero de 2023", "March 2024"        (value: the 1st)
  day month      "3 marzo", "12 de enero", "3rd March", "March 3rd" (no year: full month names
                 only, and value's year is PLACEHOLDER_YEAR; render writes no year)

render keeps everything that is not a number or a month name (separators, "de", "of", commas,
the dot of an abbreviation), the year's digits (2 or 4), the zero padding of day and month, the
month name's language, case and abbreviation, and an ordinal day ("3rd" -> "21st"; "1°" stays
only on the 1st, as Italian and Spanish write it).

Numeric dates are day-first in every language (Italian, Spanish and British notes); a numeric
date whose second number is over 12 is read month-first (an American "12/25/2024"), and
`dayfirst=False` reads the ambiguous ones month-first. The order read is the order written back.
Two-digit years up to TWO_DIGIT_PIVOT are 20yy, later ones 19yy ("03/03/45" is 1945).
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
import unicodedata
from dataclasses import dataclass, field

__all__ = ["ParsedDate", "find_dates", "parse_date", "MONTHS", "PLACEHOLDER_YEAR", "TWO_DIGIT_PIVOT"]

# the year of a ParsedDate.value whose text has none (a leap year, so "29 febbraio" parses)
PLACEHOLDER_YEAR = 2000
# two-digit years <= this are 20yy, the others 19yy: five years past the current one
TWO_DIGIT_PIVOT = (_dt.date.today().year + 5) % 100
MIN_YEAR, MAX_YEAR = 1800, 2199

# month names: (full, standard abbreviation, other abbreviations), index 0 = January
MONTHS: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "it": [
        ("gennaio", "gen", ()),
        ("febbraio", "feb", ()),
        ("marzo", "mar", ()),
        ("aprile", "apr", ()),
        ("maggio", "mag", ()),
        ("giugno", "giu", ()),
        ("luglio", "lug", ()),
        ("agosto", "ago", ()),
        ("settembre", "set", ("sett",)),
        ("ottobre", "ott", ()),
        ("novembre", "nov", ()),
        ("dicembre", "dic", ()),
    ],
    "es": [
        ("enero", "ene", ()),
        ("febrero", "feb", ()),
        ("marzo", "mar", ()),
        ("abril", "abr", ()),
        ("mayo", "may", ()),
        ("junio", "jun", ()),
        ("julio", "jul", ()),
        ("agosto", "ago", ()),
        ("septiembre", "sep", ("sept", "set", "setiembre")),
        ("octubre", "oct", ()),
        ("noviembre", "nov", ()),
        ("diciembre", "dic", ()),
    ],
    "en": [
        ("january", "jan", ()),
        ("february", "feb", ()),
        ("march", "mar", ()),
        ("april", "apr", ()),
        ("may", "may", ()),
        ("june", "jun", ()),
        ("july", "jul", ()),
        ("august", "aug", ()),
        ("september", "sep", ("sept",)),
        ("october", "oct", ()),
        ("november", "nov", ()),
        ("december", "dec", ()),
    ],
}
# English month names that are also common lower-case words: a month only when capitalised,
# unless a year follows ("may 2024", "3 march 2024" are dates; "may 3" and "3 may" are not sure)
_EN_LOWER_WORDS = frozenset({"may", "march"})


def _fold(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c)).lower()


def _month_lookup(language: str) -> dict[str, tuple[int, bool]]:
    """name (lower-cased) -> (month 1-12, is a full name)."""
    table: dict[str, tuple[int, bool]] = {}
    for i, (full, abbr, others) in enumerate(MONTHS[language], start=1):
        table[full] = (i, True)
        table.setdefault(abbr, (i, False))
        for o in others:
            table.setdefault(o, (i, len(o) > 4))
    return table


# ----------------------------------------------------------------------------- the patterns

_NUM_START = r"(?<![\w/.:])"
_NUM_END = r"(?![0-9A-SU-Za-z_]|[/.:][0-9])"  # a "T" may follow (ISO date-time)
_WORD_START = r"(?<!\w)"
_WORD_END = r"(?!\w)"
_ORD = r"(?P<ord>st|nd|rd|th|°|º|ª)?"


def _alternation(names) -> str:
    return "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))


@dataclass(frozen=True)
class _Pattern:
    name: str
    regex: re.Pattern
    has_year: bool = True


def _patterns(language: str) -> list[_Pattern]:
    lookup = _month_lookup(language)
    all_names = _alternation(lookup)
    full_names = _alternation(n for n, (_, full) in lookup.items() if full)
    # the words between the parts of a written date
    if language == "es":
        dm_sep = r"(?:\s*(?:de|del)\s+|\s+|\s*[-/.]\s*)"
        my_sep = r"(?:\s+(?:de|del)\s+|,?\s+|\s*[-/.]\s*)"
    elif language == "en":
        dm_sep = r"(?:\s+of\s+|\s+|\s*[-/.]\s*)"
        my_sep = r"(?:,?\s+|\s*[-/.]\s*)"
    else:
        dm_sep = r"(?:\s+|\s*[-/.]\s*)"
        my_sep = r"(?:,?\s+|\s*[-/.]\s*)"
    year = r"(?P<year>\d{4}|\d{2})"
    month_name = rf"(?P<mname>{all_names})\.?"
    full_month = rf"(?P<mname>{full_names})"
    flags = re.IGNORECASE
    pats = [
        _Pattern(
            "iso",
            re.compile(
                rf"{_NUM_START}(?P<year>\d{{4}})(?P<s1>[-/.])(?P<month>\d{{1,2}})(?P=s1)(?P<day>\d{{1,2}}){_NUM_END}"
            ),
        ),
        _Pattern(
            "numeric",
            re.compile(
                rf"{_NUM_START}(?P<n1>\d{{1,2}})(?P<s1>[/.\-])(?P<n2>\d{{1,2}})(?P=s1)(?P<year>\d{{4}}|\d{{2}}){_NUM_END}"
            ),
        ),
        _Pattern(
            "month_year_numeric",
            re.compile(rf"{_NUM_START}(?P<month>\d{{1,2}})(?P<s1>[/.\-])(?P<year>\d{{4}})(?![\w]|[/.:\-][0-9])"),
        ),
        _Pattern(
            "day_month_year",
            re.compile(rf"{_WORD_START}(?P<day>\d{{1,2}}){_ORD}{dm_sep}{month_name}{my_sep}{year}{_WORD_END}", flags),
        ),
        _Pattern(
            "month_year",
            re.compile(rf"{_WORD_START}{month_name}{my_sep}(?P<year>\d{{4}}){_WORD_END}", flags),
        ),
        _Pattern(
            "day_month",
            re.compile(rf"{_WORD_START}(?P<day>\d{{1,2}}){_ORD}{dm_sep}{full_month}{_WORD_END}", flags),
            has_year=False,
        ),
    ]
    if language == "en":
        pats += [
            _Pattern(
                "month_day_year",
                re.compile(
                    rf"{_WORD_START}{month_name}\s+(?P<day>\d{{1,2}}){_ORD}(?:,\s*|\s+){year}{_WORD_END}",
                    flags,
                ),
            ),
            _Pattern(
                "month_day",
                re.compile(rf"{_WORD_START}{full_month}\s+(?P<day>\d{{1,2}}){_ORD}{_WORD_END}", flags),
                has_year=False,
            ),
        ]
    return pats


_PATTERNS: dict[str, list[_Pattern]] = {}
_LOOKUPS: dict[str, dict[str, tuple[int, bool]]] = {}


def _language(language: str) -> str:
    lang = (language or "").lower()[:2]
    if lang not in MONTHS:
        raise ValueError(f"unsupported language {language!r}: dates are read in {', '.join(MONTHS)}")
    if lang not in _PATTERNS:
        _PATTERNS[lang] = _patterns(lang)
        _LOOKUPS[lang] = _month_lookup(lang)
    return lang


# ----------------------------------------------------------------------------- parsed dates


def _case_of(s: str) -> str:
    letters = [c for c in s if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return "upper"
    if letters and letters[0].isupper():
        return "title"
    return "lower"


def _apply_case(s: str, case: str) -> str:
    if case == "upper":
        return s.upper()
    if case == "title":
        return s[:1].upper() + s[1:]
    return s.lower()


def _en_ordinal(day: int) -> str:
    if 10 <= day % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


@dataclass(frozen=True)
class _Field:
    kind: str  # "day", "ord", "month", "mname", "year"
    start: int  # offsets inside ParsedDate.text
    end: int
    text: str
    padded: bool = False  # day/month: zero-padded to 2 digits


@dataclass(frozen=True)
class ParsedDate:
    """One date as written. `value` is the date it means (the 1st for a month-year, the year
    PLACEHOLDER_YEAR when the text has none); `render(d)` writes `d` in the same shape."""

    text: str
    value: _dt.date
    language: str
    shape: str  # which pattern: "numeric", "iso", "day_month_year", "month_year", ...
    order: str = ""  # numeric dates: "DMY" or "MDY"
    has_day: bool = True
    has_year: bool = True
    fields: tuple[_Field, ...] = field(default=(), repr=False)

    def render(self, new_value: _dt.date) -> str:
        out, pos = [], 0
        for f in self.fields:
            out.append(self.text[pos : f.start])
            out.append(self._render_field(f, new_value))
            pos = f.end
        out.append(self.text[pos:])
        return "".join(out)

    def _render_field(self, f: _Field, d: _dt.date) -> str:
        if f.kind == "day":
            return f"{d.day:02d}" if f.padded else str(d.day)
        if f.kind == "month":
            return f"{d.month:02d}" if f.padded else str(d.month)
        if f.kind == "year":
            return f"{d.year % 100:02d}" if len(f.text) == 2 else f"{d.year:04d}"
        if f.kind == "ord":
            if f.text.lower() in ("st", "nd", "rd", "th"):
                return _apply_case(_en_ordinal(d.day), _case_of(f.text))
            return f.text if d.day == 1 else ""  # "1° marzo", "2 marzo"
        if f.kind == "mname":
            full, abbr, others = MONTHS[self.language][d.month - 1]
            old = f.text.lower()
            lookup = _LOOKUPS[self.language]
            is_full = lookup[old][1] if old in lookup else True
            if is_full:
                name = full
            elif len(old) == 4 and others and len(others[0]) == 4:
                name = others[0]  # "Sept", "sett" stay four letters where the month has them
            else:
                name = abbr
            return _apply_case(name, _case_of(f.text))
        raise AssertionError(f.kind)


def _two_digit_year(yy: int) -> int:
    return 2000 + yy if yy <= TWO_DIGIT_PIVOT else 1900 + yy


def _padded(s: str, other: str | None) -> bool:
    """Zero padding of a 1-2 digit number: "03" is padded, "3" is not; "12" follows the other
    number of the date ("12/03" padded, "12/3" not), padded when both are over 9, and not
    padded beside a month name ("15 marzo")."""
    if len(s) == 2:
        if s.startswith("0"):
            return True
        if other is None or len(other) == 1:
            return False
        return True
    return False


def _build(m: re.Match, pat: _Pattern, lang: str, dayfirst: bool, base: int = 0) -> ParsedDate | None:
    g = m.groupdict()
    lookup = _LOOKUPS[lang]
    fields: list[tuple[str, int, int, str]] = []  # kind, start, end, text (offsets in m.string)

    def span(name: str, kind: str | None = None):
        if g.get(name) is not None:
            fields.append((kind or name, m.start(name), m.end(name), g[name]))

    order = ""
    has_day = True
    if pat.name in ("numeric", "iso") and g["s1"] == "-":
        # "06-12-34-56" is a phone number, not a date and more: a dashed date stands alone
        # (a range of dates has another separator: "01/03/24-05/03/24")
        if re.match(r"-\d", m.string[m.end() :]) or re.search(r"\d-$", m.string[: m.start()]):
            return None
    if pat.name == "numeric":
        n1, n2 = int(g["n1"]), int(g["n2"])
        if n1 > 12 or (n2 <= 12 and dayfirst):
            order, day, month = "DMY", n1, n2
            span("n1", "day")
            span("n2", "month")
        else:
            order, day, month = "MDY", n2, n1
            span("n1", "month")
            span("n2", "day")
    else:
        if g.get("mname") is not None:
            name = g["mname"].lower()
            if name not in lookup:
                return None
            month = lookup[name][0]
            if (
                lang == "en"
                and name in _EN_LOWER_WORDS
                and g["mname"] == g["mname"].lower()
                and (not pat.has_year or pat.name == "month_day_year")
            ):
                return None
            span("mname")
        else:
            month = int(g["month"])
            span("month")
        if g.get("day") is not None:
            day = int(g["day"])
            span("day")
            span("ord")
        else:
            day, has_day = 1, False
    if g.get("year") is not None:
        ytext = g["year"]
        if len(ytext) == 2:
            # a two-digit year after a month name only in "03-Mar-24", "3/mar/24" shapes
            if pat.name in ("day_month_year", "month_day_year"):
                before = m.string[m.start("year") - 1 : m.start("year")]
                if before not in "-/.":
                    return None
            year = _two_digit_year(int(ytext))
        else:
            year = int(ytext)
            if not MIN_YEAR <= year <= MAX_YEAR:
                return None
        span("year")
    else:
        year = PLACEHOLDER_YEAR
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year, month)[1]:
        return None
    value = _dt.date(year, month, day)

    # zero padding of numeric day and month
    nums = {k: t for k, _, _, t in fields if k in ("day", "month")}
    start = m.start()
    out_fields = []
    for kind, s, e, t in sorted(fields, key=lambda f: f[1]):
        padded = False
        if kind in ("day", "month"):
            other = nums.get("month" if kind == "day" else "day")
            padded = _padded(t, other)
        out_fields.append(_Field(kind, s - start, e - start, t, padded))
    return ParsedDate(
        text=m.group(0),
        value=value,
        language=lang,
        shape=pat.name,
        order=order,
        has_day=has_day,
        has_year=pat.has_year,
        fields=tuple(out_fields),
    )


def _default_dayfirst(dayfirst: bool | None) -> bool:
    return True if dayfirst is None else dayfirst


def find_dates(text: str, language: str, *, dayfirst: bool | None = None) -> list[tuple[int, int]]:
    """The [start, end) spans of the dates in `text`, sorted and non-overlapping (of two that
    overlap, the longer: "3 marzo 2024" rather than its "marzo 2024")."""
    return [(s, e) for s, e, _ in _find(text, language, dayfirst)]


def find_parsed_dates(text: str, language: str, *, dayfirst: bool | None = None) -> list[tuple[int, int, ParsedDate]]:
    """find_dates with each span's ParsedDate."""
    return _find(text, language, dayfirst)


def _find(text: str, language: str, dayfirst: bool | None) -> list[tuple[int, int, ParsedDate]]:
    lang = _language(language)
    df = _default_dayfirst(dayfirst)
    candidates: list[tuple[int, int, ParsedDate]] = []
    for pat in _PATTERNS[lang]:
        for m in pat.regex.finditer(text):
            parsed = _build(m, pat, lang, df)
            if parsed is not None:
                candidates.append((m.start(), m.end(), parsed))
    # longest first, then earliest; keep those that overlap nothing kept
    candidates.sort(key=lambda c: (-(c[1] - c[0]), c[0]))
    kept: list[tuple[int, int, ParsedDate]] = []
    for c in candidates:
        if all(c[1] <= k[0] or c[0] >= k[1] for k in kept):
            kept.append(c)
    kept.sort(key=lambda c: c[0])
    return kept


def parse_date(text: str, language: str, *, dayfirst: bool | None = None) -> ParsedDate | None:
    """The date that `text` is (the whole of it, surrounding blanks aside), or None.

    Surrounding blanks are kept in ParsedDate.text, so render() gives them back."""
    lang = _language(language)
    df = _default_dayfirst(dayfirst)
    stripped = text.strip()
    if not stripped:
        return None
    lead = len(text) - len(text.lstrip())
    best: ParsedDate | None = None
    for pat in _PATTERNS[lang]:
        m = pat.regex.fullmatch(stripped)
        if m is None:
            continue
        parsed = _build(m, pat, lang, df)
        if parsed is not None:
            best = parsed
            break
    if best is None or stripped == text:
        return best
    shifted = tuple(_Field(f.kind, f.start + lead, f.end + lead, f.text, f.padded) for f in best.fields)
    return ParsedDate(
        text=text,
        value=best.value,
        language=best.language,
        shape=best.shape,
        order=best.order,
        has_day=best.has_day,
        has_year=best.has_year,
        fields=shifted,
    )
