"""Replace findings in a text with tags or surrogates, and carry offsets into the new text.

    replacer = Replacer("surrogates", "it", secret)
    done = replacer.replace(text, findings, patient="P123")
    done.text                      # the de-identified text
    done.map_span(start, end)      # gold evidence, a peak: from the original text into done.text

Two modes:
- "tags": each finding becomes its type in brackets, "[NAME]", "[DATE]", "[PHONE]".
- "surrogates": each finding becomes a stand-in of its type (ml.deid.surrogates), chosen by a
  keyed hash of (patient, type, value) so it is the same in all of a patient's notes:
  * names token by token, in the mention's shape: with a canonical identity (Finding.canonical)
    every mention token is matched to a canonical token (exactly, by its initial, or with one
    typo) and each canonical token has one surrogate token per patient, so "ROSSI Mario" ->
    "BIANCHI Luca" and "M. Rossi" -> "L. Bianchi"; a given name in the lexicon gets a given
    name of the same gender, any other token a family name; titles ("Dott.", "Sig.ra", "Mr")
    and particles ("de", "di", "van") are kept;
  * dates move by the patient's one shift (a whole number of days in [-365, -30] or [30, 365],
    keyed hash of the patient) and keep their written shape (ml.deid.dates.ParsedDate.render),
    so the intervals between a patient's dates hold; a date that does not parse becomes
    "[DATE]";
  * an age over 89 becomes "90+" (the same in Italian, Spanish and English: "90+ anni",
    "90+ años", "aged 90+"), HIPAA's "90 or older"; an age under 90 is kept;
  * every other type gets a valid surrogate of the same type in the original's shape;
  * a deny-listed word has no surrogate: it becomes "[DENY_LIST]" in both modes.

Replacing again is safe: a finding that is already a tag is left alone, an age already "90+"
stays so, and a surrogate found again in a second pass is replaced by the patient's own
surrogate of it, the same in every note (keyed, not counted), so consistency holds.

`Replacement.pairs` holds the original -> replacement pairs, for a project that keeps an
encrypted mapping; they never appear in the object's repr or str, and must never be logged.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from ml.deid.surrogates import Surrogates, given_gender, normalise
from ml.deid.types import LANGUAGES, Finding, ReplacedSpan

MODES = ("tags", "surrogates")

_WORD = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*")
_TAG = re.compile(r"\[[A-Z_]+\]")
_DIGITS = re.compile(r"\d+")

# Kept inside a name mention: titles and roles of the note's language (normalised, without their
# dots; "Sig.ra" is "sig" and "ra"), and name particles.
TITLES = {
    "it": frozenset(
        "sig ra na sigg sigra signor signore signora signorina dott ssa dottor dottore dottoressa dr prof "
        "professor professore professoressa ing avv inf infermiere infermiera paziente assistito assistita "
        "degente pz".split()
    ),
    "es": frozenset(
        "sr sra srta senor senora senorita dr dra doctor doctora dna don dona prof profa profesor profesora "
        "enf enfermero enfermera paciente".split()
    ),
    "en": frozenset("mr mrs ms miss mx dr prof professor doctor nurse sister patient pt".split()),
}
PARTICLES = frozenset(
    "de del della dello delle dei degli di da dal dalla van von der den la le lo los las y du".split()
)

AGE_OVER_89 = "90+"


@dataclass(repr=False)
class Replacement:
    """The result of Replacer.replace: the new text, what was replaced where, counts per type."""

    text: str
    spans: list[ReplacedSpan]
    counts: dict[str, int]
    pairs: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # original -> new: never log

    def __post_init__(self):
        self._ends = [s.end for s in self.spans]

    def __repr__(self) -> str:  # no text, no pairs: a repr may end up in a log
        return f"Replacement(spans={len(self.spans)}, counts={dict(self.counts)}, chars={len(self.text)})"

    __str__ = __repr__

    def map_offset(self, pos: int, end: bool = False) -> int:
        """An offset of the original text in the new one. One strictly inside a replacement goes
        to the replacement's start, or to its end where `end` (the end of a span)."""
        i = bisect_right(self._ends, pos)  # spans[:i] end at or before pos
        if i < len(self.spans) and self.spans[i].start < pos:
            return self.spans[i].new_end if end else self.spans[i].new_start
        if i == 0:
            return pos
        before = self.spans[i - 1]
        return pos + before.new_end - before.end

    def map_span(self, start: int, end: int) -> tuple[int, int]:
        """A [start, end) span of the original text in the new one: a span outside replacements
        moves; one that covers or partly overlaps a replacement grows or shrinks to cover all of
        it; one inside a replacement becomes that replacement."""
        if start > end:
            raise ValueError(f"span [{start}, {end}) ends before it starts")
        if start == end:
            point = self.map_offset(start)
            return point, point
        return self.map_offset(start), self.map_offset(end, end=True)


class Replacer:
    def __init__(self, mode: str, language: str, secret: bytes = b""):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        if language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        if mode == "surrogates" and not secret:
            raise ValueError("surrogates need a secret key: one secret per project, kept outside the data")
        self.mode = mode
        self.language = language
        self.surrogates = Surrogates(language, secret) if mode == "surrogates" else None

    def replace(self, text: str, findings: list[Finding], patient: str = "") -> Replacement:
        """Replace `findings` (sorted, non-overlapping; overlapping ones are merged into the first)
        in `text`. `patient`: the key surrogates and the date shift are kept under; notes of one
        patient must share it, and "" is one shared key for all notes given none."""
        pieces: list[str] = []
        spans: list[ReplacedSpan] = []
        counts: Counter = Counter()
        pairs: dict[str, str] = {}
        pos = new_pos = 0
        for finding in _checked(findings, len(text)):
            original = text[finding.start : finding.end]
            new = self._render(finding, original, text, patient)
            if new is None or new == original:
                continue
            pieces.append(text[pos : finding.start])
            new_pos += finding.start - pos
            spans.append(ReplacedSpan(finding.type, finding.start, finding.end, new_pos, new_pos + len(new)))
            pieces.append(new)
            new_pos += len(new)
            pos = finding.end
            counts[finding.type] += 1
            pairs.setdefault(original, new)
        pieces.append(text[pos:])
        return Replacement("".join(pieces), spans, dict(counts), tuple(pairs.items()))

    # --- one finding -----------------------------------------------------------------------------

    def _render(self, finding: Finding, original: str, text: str, patient: str) -> str | None:
        """The replacement of one finding, or None to leave it as it is."""
        if _TAG.fullmatch(original):
            return None  # already replaced
        if finding.type == "AGE":
            return self._age(finding, original, text)
        if self.mode == "tags" or finding.type == "DENY_LIST":
            return f"[{finding.type}]"
        if finding.type == "NAME":
            return self._name(original, finding.canonical, patient)
        if finding.type == "DATE":
            return self._date(original, patient)
        return self.surrogates.value(finding.type, original, patient)

    def _age(self, finding: Finding, original: str, text: str) -> str | None:
        number = _DIGITS.search(original)
        if number is None:
            return "[AGE]"  # spelled out: no number to aggregate
        if int(number.group()) < 90:
            return None
        if self.mode == "tags":
            return "[AGE]"
        after = original[number.end() :] or text[finding.end : finding.end + 1]
        plus = "" if after.startswith("+") else "+"
        return original[: number.start()] + "90" + plus + original[number.end() :]

    def _date(self, original: str, patient: str) -> str:
        from ml.deid.dates import parse_date

        parsed = parse_date(original, self.language)
        if parsed is None:
            return "[DATE]"
        try:
            return parsed.render(parsed.value + timedelta(days=self.surrogates.date_shift(patient)))
        except (ValueError, OverflowError):  # moved out of the calendar's range
            return "[DATE]"

    def _name(self, original: str, canonical: str, patient: str) -> str:
        identity = [normalise(t) for t in _WORD.findall(canonical)]
        titles = TITLES[self.language]
        identity = [t for t in identity if t not in titles and t not in PARTICLES]
        pieces, pos, after_particle = [], 0, False
        for match in _WORD.finditer(original):
            token, suffix = match.group(), ""
            if self.language == "en" and re.search(r"['’]s$", token):
                token, suffix = token[:-2], token[-2:]
            key = normalise(token)
            pieces.append(original[pos : match.start()])
            pos = match.end()
            if key in titles or key in PARTICLES:
                pieces.append(match.group())
                after_particle = key in PARTICLES
                continue
            key = _identity_token(key, identity)
            family = after_particle or given_gender(key, self.language) is None
            surrogate = self.surrogates.name_token(patient, key, family=family)
            pieces.append(_shaped(token, surrogate, initial=len(normalise(token)) == 1) + suffix)
            after_particle = False
        if pos == 0:
            return "[NAME]"  # no name token in it at all
        pieces.append(original[pos:])
        return "".join(pieces)


def _checked(findings: list[Finding], length: int) -> list[Finding]:
    """Findings sorted; one that overlaps the one before is dropped (its text is inside a
    replacement already, or was its own finding: the detector's contract says none overlap)."""
    kept: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if not 0 <= finding.start < finding.end <= length:
            raise ValueError(f"finding [{finding.start}, {finding.end}) is outside a text of {length} characters")
        if kept and finding.start < kept[-1].end:
            if finding.end > kept[-1].end:  # reaches further: one replacement over both
                last = kept[-1]
                kept[-1] = Finding(last.type, last.start, finding.end, last.score, last.recognizer, last.canonical)
            continue
        kept.append(finding)
    return kept


def _identity_token(key: str, identity: list[str]) -> str:
    """The canonical token a mention token stands for: itself, the first canonical token with its
    initial (given names first), one within one typo; else the mention token itself."""
    if not identity or key in identity:
        return key
    if len(key) == 1:
        starting = [t for t in identity if t.startswith(key)]
        if starting:
            return sorted(starting, key=lambda t: given_gender(t, "it") is None)[0]
        return key
    if len(key) >= 4:
        for token in identity:
            if _one_edit(key, token):
                return token
    return key


def _one_edit(a: str, b: str) -> bool:
    """Whether a and b differ by at most one insertion, deletion or substitution."""
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :] or (len(a) == len(b) and a[i + 1 :] == b[i + 1 :])


def _shaped(token: str, surrogate: str, initial: bool) -> str:
    """The surrogate written like the mention token: an initial, UPPER, lower or as listed."""
    if initial:
        letter = surrogate[0]
        return letter.lower() if token.islower() else letter.upper()
    if token.isupper():
        return surrogate.upper()
    if token.islower():
        return surrogate.lower()
    return surrogate
