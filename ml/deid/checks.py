"""The identifiers with a structure: their shapes, their checksums, and finders for the ones a
single regular expression can't delimit (phones, IBANs, ages).

Plain Python (python-stdnum, phonenumbers, ipaddress), no Presidio: ml.deid.recognizers wraps
these in Presidio recognizers, and the benchmark may use the validators to check what it makes.
An identifier whose checksum fails is not that identifier: is_valid_* say False, finders skip it.
"""

from __future__ import annotations

import ipaddress
import re

import phonenumbers
from stdnum import iban as _iban
from stdnum.es import dni as _dni
from stdnum.es import nie as _nie
from stdnum.gb import nhs as _nhs
from stdnum.it import codicefiscale as _cf
from stdnum.us import ssn as _ssn

# ----------------------------------------------------------------------------- shapes

# (all shapes are matched case-insensitively: ml.deid.recognizers compiles them with IGNORECASE)
# a digit of the birth date or place may be replaced by a letter LMNPQRSTUV (omocodia)
CODICE_FISCALE_RE = (
    r"(?<![A-Za-z0-9])[A-Z]{6}[0-9LMNPQRSTUV]{2}[ABCDEHLMPRST][0-9LMNPQRSTUV]{2}[A-Z][0-9LMNPQRSTUV]{3}[A-Z]"
    r"(?![A-Za-z0-9])"
)
DNI_RE = r"(?<![\w-])\d{8}[\s-]?[A-Z](?![\w])"
NIE_RE = r"(?<![\w-])[XYZ][\s-]?\d{7}[\s-]?[A-Z](?![\w])"
# not after a country code: "+1 212 207 0315" is a phone number
NHS_RE = r"(?<![\w-])(?<!\+\d )(?<!\+\d\d )(?<!\+\d\d\d )(?:\d{3} \d{3} \d{4}|\d{3}-\d{3}-\d{4}|\d{10})(?![\w]|[-/.]\d)"
SSN_RE = r"(?<![\w-])(?:\d{3}-\d{2}-\d{4}|\d{3} \d{2} \d{4})(?![\w]|[-/.]\d)"
EMAIL_RE = (
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@"
    r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![\w-])"
)
# addresses with a scheme or "www.", and bare host names on the usual domains; the last
# character is never punctuation (a sentence's full stop is not part of the address)
_URL_TAIL = r"(?:[^\s<>\"'(){}\[\]]*[^\s<>\"'(){}\[\].,;:!?])?"
URL_RE = (
    r"(?<![\w@.])(?:(?:https?|ftp)://|www\.)[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::\d{1,5})?"
    + r"(?:[/?#]"
    + _URL_TAIL
    + r")?"
)
BARE_URL_RE = (
    r"(?<![\w@./-])(?:[A-Za-z0-9][A-Za-z0-9-]*\.)*[A-Za-z0-9][A-Za-z0-9-]+\.(?:com|org|net|it|es|eu|uk|gov|edu|info|io|cat|int)"
    r"(?![\w@-])(?:/" + _URL_TAIL + r")?"
)
IPV4_RE = r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d)"
IPV6_RE = r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
_TIME_RE = re.compile(r"\d{1,2}(?::\d{2}){1,2}")


# ----------------------------------------------------------------------------- validators


def _compact(s: str) -> str:
    return re.sub(r"[\s.-]", "", s).upper()


def is_valid_codice_fiscale(s: str) -> bool:
    """A personal fiscal code (16 characters) with its check character and a real birth date;
    omocodia (digits replaced by LMNPQRSTUV) included. The 11-digit company numbers are not."""
    s = _compact(s)
    return len(s) == 16 and _cf.is_valid(s)


def is_valid_dni_nie(s: str) -> bool:
    s = _compact(s)
    return _dni.is_valid(s) if s[:1].isdigit() else _nie.is_valid(s)


def is_valid_nhs(s: str) -> bool:
    """An NHS number: ten digits, the tenth the mod-11 check digit."""
    s = _compact(s)
    return len(s) == 10 and s.isdigit() and _nhs.is_valid(s)


def is_valid_ssn(s: str) -> bool:
    """A US SSN in a usable range (no 000, 666 or 9xx area, no 00 group, no 0000 serial, not
    one of the published specimen numbers). SSNs have no check digit."""
    digits = re.sub(r"\D", "", s)
    return len(digits) == 9 and _ssn.is_valid(f"{digits[:3]}-{digits[3:5]}-{digits[5:]}")


def is_valid_iban(s: str) -> bool:
    """An IBAN: mod-97 check digits and the country's length and format."""
    return _iban.is_valid(_compact(s))


def is_valid_ip(s: str) -> bool:
    """An IPv4 or IPv6 address (not a time of day such as "10:30:00")."""
    if _TIME_RE.fullmatch(s):
        return False
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- SSNs

_SSN_SHAPE = re.compile(SSN_RE)
# a bare nine-digit SSN counts only after the words saying so
_SSN_BARE = re.compile(r"(?i:\bSSN|\bsocial security (?:number|no\.?))\s*(?:#|:|is)?\s*(?P<n>\d{9})(?!\w)")


def find_ssns(text: str) -> list[tuple[int, int]]:
    """US SSNs in a usable range: "123-45-6789", "123 45 6789", and "SSN 123456789"."""
    spans = [(m.start(), m.end()) for m in _SSN_SHAPE.finditer(text) if is_valid_ssn(m.group(0))]
    spans += [(m.start("n"), m.end("n")) for m in _SSN_BARE.finditer(text) if is_valid_ssn(m.group("n"))]
    return sorted(set(spans))


# ----------------------------------------------------------------------------- phones

# a run of digit groups, with an international prefix or an area code in brackets
_PHONE_CANDIDATE = re.compile(
    r"""
    (?<![\w+/.\-])
    (?:(?:\+|00)\s?\d{1,3}(?:\s?\(0\))?(?:\s?[.\-/]\s?|\s)?)?
    (?:\(\d{1,5}\)\s?)?
    \d{1,12}(?:(?:\s|\s?[.\-/]\s?)\d{1,12}){0,20}
    (?!\w)
    """,
    re.X,
)
_DIGIT_RUN = re.compile(r"\d+")
_IPV4_SHAPE = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_DATE_SHAPE = re.compile(
    r"\d{1,2}[/.\-]\d{1,2}[/.\-](?:\d{2}|\d{4})|\d{4}[/.\-]\d{1,2}[/.\-]\d{1,2}|\d{1,2}[/.\-]\d{4}"
)

# the regions whose numbers a note in a language holds (numbers with +NN or 00NN: any country)
PHONE_REGIONS = {"it": ("IT",), "es": ("ES",), "en": ("GB", "US")}


_PHONE_PREFIX = re.compile(r"(?:\+|00)\s?\d{1,3}(?:\s?\(0\))?(?:\s?[.\-/]\s?|\s)?|\(\d{1,5}\)\s?")
_PHONE_SEPARATOR = re.compile(r"\D+")


def _valid_phone(s: str, regions: tuple[str, ...]) -> bool:
    digits = sum(c.isdigit() for c in s)
    international = s.startswith(("+", "00"))
    # after the country prefix or bracketed area code, one kind of separator: in
    # "+39.333.123.4567 02" the " 02" is something else
    prefix = _PHONE_PREFIX.match(s)
    body = s[prefix.end() :] if prefix else s
    if len({sep.strip() or " " for sep in _PHONE_SEPARATOR.findall(body)}) > 1:
        return False
    if not (8 if international else 6) <= digits <= 15:
        return False
    if _IPV4_SHAPE.fullmatch(s) or _DATE_SHAPE.fullmatch(s):
        return False
    groups = _DIGIT_RUN.findall(s)
    if len(groups) >= 4 and all(len(g) <= 2 for g in groups):
        return False  # "12 11 21 22 23": a list of small numbers (teeth, scores), not a phone
    for region in regions:
        try:
            number = phonenumbers.parse(s, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
        if international:
            break
    return False


def find_phones(text: str, regions: tuple[str, ...] = ("IT",)) -> list[tuple[int, int]]:
    """Phone numbers valid in one of `regions` (or, written with +NN / 00NN, in their own
    country), in any grouping: "333 1234567", "333.123.4567", "06-12345678", "(06) 1234 5678",
    "+39 333 1234567", "0039 02 12345678", "02/1234567". Of the digit groups of a run, the
    longest valid number from the left is taken ("dal 12 333 1234567" gives "333 1234567")."""
    out: list[tuple[int, int]] = []
    for m in _PHONE_CANDIDATE.finditer(text):
        cand, base = m.group(0), m.start()
        runs = [(r.start(), r.end()) for r in _DIGIT_RUN.finditer(cand)]
        # where a number may start: the candidate's own start (a "+", "00" or "("), each run
        starts = sorted({0} | {s for s, _ in runs[1:]})
        ends = [e for _, e in runs]
        i = 0
        while i < len(starts):
            s = starts[i]
            found = None
            for e in reversed(ends):
                if e <= s:
                    break
                if _valid_phone(cand[s:e], regions):
                    found = e
                    break
            if found is None:
                i += 1
                continue
            out.append((base + s, base + found))
            while i < len(starts) and starts[i] < found:
                i += 1
    return out


# ----------------------------------------------------------------------------- IBANs

_IBAN_CANDIDATE = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}[A-Za-z0-9]*(?: [A-Za-z0-9]+){0,9}")


def find_ibans(text: str) -> list[tuple[int, int]]:
    """IBANs written whole or in groups ("IT60 X054 2811 1010 0000 0123 456"); the longest run of
    groups that is a valid IBAN (mod 97 and the country's format), so a word after it stays out."""
    out = []
    for m in _IBAN_CANDIDATE.finditer(text):
        cand = m.group(0)
        ends = [r.end() for r in re.finditer(r"[A-Za-z0-9]+", cand)]
        for e in reversed(ends):
            if 15 <= len(cand[:e].replace(" ", "")) <= 34 and is_valid_iban(cand[:e]):
                out.append((m.start(), m.start() + e))
                break
    return out


# ----------------------------------------------------------------------------- ages over 89

_N = r"(?P<n>\d{2,3})"
_AGE_PATTERNS = {
    "it": [
        rf"(?<![\w.,]){_N}\s*(?:anni|aa\.?)(?!\w)",
        rf"(?<![\w.,]){_N}\s?-?\s?enne(?!\w)",
        rf"(?i:\bet[àa]['’]?)\s*(?:di\s+)?:?\s*{_N}(?![\w.,]\d|\w)",
    ],
    "es": [
        rf"(?<![\w.,]){_N}\s*(?:años|anos|a\.)(?!\w)",
        rf"(?i:\bedad)\s*(?:de\s+)?:?\s*{_N}(?![\w.,]\d|\w)",
    ],
    "en": [
        rf"(?<![\w.,]){_N}\s*-?\s*(?i:years?|yrs?|y)\s*-?\s*(?i:old)(?!\w)",
        rf"(?<![\w.,]){_N}\s*(?i:yo|y/o|y\.o\.|years of age)(?!\w)",
        rf"(?i:\bage(?:d)?)\s*:?\s*{_N}(?![\w.,]\d|\w)",
    ],
}
_AGE_RES = {lang: [re.compile(p) for p in pats] for lang, pats in _AGE_PATTERNS.items()}
MIN_AGE, MAX_AGE = 90, 130


def find_ages(text: str, language: str) -> list[tuple[int, int]]:
    """Ages over 89 ("92 anni", "età 95", "95enne", "edad 93", "93 años", "95-year-old",
    "aged 91", "91 yo"): the span is the number (the words around it stay)."""
    spans = set()
    for rx in _AGE_RES.get(language, ()):
        for m in rx.finditer(text):
            if MIN_AGE <= int(m.group("n")) <= MAX_AGE:
                spans.add((m.start("n"), m.end("n")))
    return sorted(spans)
