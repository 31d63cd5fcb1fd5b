"""Names: the ones the hospital already knows (metadata values, in all their written variants)
and the ones a title or role announces ("Sig.ra Rossi", "Dr. García", "Mr Smith").

Plain Python; ml.deid.recognizers wraps these finders in Presidio recognizers.

Known identities. A metadata value such as "Mario Rossi", "ROSSI MARIO", "Rossi, Mario" or
"José García López" is split into given name(s) and surname(s):
  - "Surname, Given" when there is a comma;
  - the words in capitals are the surname when the others are not ("ROSSI Mario");
  - a value all in capitals is the registry's "SURNAME GIVEN" ("ROSSI MARIO");
  - otherwise "Given Surname": in Spanish the first word is the given name and the rest the two
    surnames, elsewhere the last word (with its particles: "De Luca", "de la Fuente") is the
    surname. When the order was guessed (the last two cases), both orders are matched.
Then every occurrence is found whatever its case and accents (text and value NFD-folded), in
either order, with or without a comma, with the given name(s) written out or as initials
("M. Rossi", "Rossi M.", "M.G. Rossi"; an initial has its dot), and the surname alone when it is capitalised in the
text ("Rossi", "ROSSI"; each of two Spanish surnames alone too). The given name alone is not
matched (it is shared with too many other people in the same note: doctors, relatives).
Values that are not names (a record number: they have a digit) match literally, whitespace-
and case-insensitively, as whole tokens.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

# words that join the parts of a surname
PARTICLES = frozenset(
    {
        "d'",
        "d’",
        "da",
        "dal",
        "dalla",
        "de",
        "de'",
        "degli",
        "dei",
        "del",
        "della",
        "dello",
        "delle",
        "der",
        "des",
        "di",
        "du",
        "la",
        "le",
        "lo",
        "los",
        "las",
        "san",
        "santa",
        "van",
        "von",
        "y",
    }
)


# ----------------------------------------------------------------------------- folding


def fold(s: str) -> str:
    """Lower case without accents: "Niccolò GARCÍA" -> "niccolo garcia"."""
    return "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.combining(c)).lower()


# one character -> its folded character where they differ, for the first 0x3000 code points
# (Latin, Greek, Cyrillic, punctuation, symbols); a text whose every character folds to exactly
# one character folds with str.translate, one character for one (the usual case)
_FOLD_TABLE: dict[int, str] = {}
_SLOW_CHARS: list[str] = []
for _cp in range(0x3000):
    _f = fold(chr(_cp))
    if len(_f) != 1:
        _SLOW_CHARS.append(chr(_cp))  # combining accents (fold to nothing), a few that widen
    elif _f != chr(_cp):
        _FOLD_TABLE[_cp] = _f
_SLOW = re.compile("[" + "".join(re.escape(c) for c in _SLOW_CHARS) + "\u3000-\U0010ffff]")
del _cp, _f, _SLOW_CHARS


def fold_with_map(text: str) -> tuple[str, list[int] | None]:
    """fold(text) and, for each of its characters, the index of the character of `text` it
    comes from (a combining accent in `text` folds to nothing, ...); None when that is the
    identity (the usual case: a text of Latin letters folds one character for one)."""
    if _SLOW.search(text) is None:
        return text.translate(_FOLD_TABLE), None
    out: list[str] = []
    index: list[int] = []
    for i, c in enumerate(text):
        f = fold(c)
        out.append(f)
        index.extend([i] * len(f))
    return "".join(out), index


def _unfold_span(index: list[int] | None, n: int, start: int, end: int) -> tuple[int, int]:
    """A [start, end) span of the folded text -> the span of the original text."""
    if index is None:
        return start, end
    s = index[start] if start < len(index) else n
    e = index[end - 1] + 1 if end > 0 else 0
    return s, e


# ----------------------------------------------------------------------------- known names

_NAME_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*['’]?", re.UNICODE)


def is_name_value(value: str) -> bool:
    """A metadata value is taken as a name when it has letters and no digit."""
    return bool(value) and not any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def split_name(value: str, language: str) -> tuple[list[str], list[str], bool]:
    """(given words, surname words, whether the order is known) of a name value."""
    value = " ".join(value.replace("\u00a0", " ").split())
    if "," in value:
        surname, _, given = value.partition(",")
        return given.split(), surname.split(), True
    words = value.split()
    if len(words) == 1:
        return [], words, True

    def caps(w):
        letters = [c for c in w if c.isalpha()]
        return len(letters) > 1 and all(c.isupper() for c in letters)

    flags = [caps(w) for w in words]
    if any(flags) and not all(flags):
        # "ROSSI Mario", "Mario ROSSI", "Maria DE LUCA": the capitals are the surname
        surname = [w for w, f in zip(words, flags) if f or fold(w) in PARTICLES and _next_caps(words, flags, w)]
        given = [w for w in words if w not in surname]
        return given, surname, True
    if all(flags):
        # a registry's "SURNAME GIVEN"
        return words[-1:], words[:-1], False
    if language == "es":
        return words[:1], words[1:], False
    # "Maria Grazia De Luca": the surname is the last word with the particles before it
    i = len(words) - 1
    while i > 1 and fold(words[i - 1]) in PARTICLES:
        i -= 1
    return words[:i], words[i:], False


def _next_caps(words, flags, w) -> bool:
    i = words.index(w)
    return i + 1 < len(words) and flags[i + 1]


def _word_rx(word: str) -> str:
    """A folded word as a pattern: a hyphen or apostrophe inside may be a space or nothing."""
    parts = re.split(r"[-'’]", fold(word))
    return r"(?:[-'’]|\s)?".join(re.escape(p) for p in parts if p)


def _seq_rx(words: Iterable[str]) -> str:
    return r"\s+".join(_word_rx(w) for w in words)


def _initials_rx(given: list[str]) -> list[str]:
    """ "m." / "m" for "Mario"; "m. g." / "m.g." for "Maria Grazia"."""
    letters = [fold(w)[0] for w in given if fold(w)[:1].isalpha()]
    if not letters:
        return []
    out = [re.escape(letters[0])]
    if len(letters) > 1:
        out.append(r"\.?\s*".join(re.escape(c) for c in letters))
    return out


@dataclass(frozen=True)
class KnownName:
    """The compiled patterns of one known name."""

    canonical: str
    two_part: re.Pattern  # given + surname in either order, initials included
    alone: re.Pattern | None  # the surname alone (must be capitalised in the text)
    alone_texts: frozenset[str]  # the folded surname forms matched alone


def compile_known_name(value: str, language: str) -> KnownName | None:
    given, surname, certain = split_name(value, language)
    if not surname:
        return None
    canonical = " ".join(value.split()).lower()
    content = [w for w in surname if fold(w) not in PARTICLES] or surname
    alone_forms = [surname] + ([[w] for w in content] if len(content) > 1 else [])
    surname_rx = "|".join(_seq_rx(f) for f in sorted(alone_forms, key=lambda f: -len(" ".join(f))))

    def pairs(g: list[str], s_rx: str) -> list[str]:
        """given then surname ("Mario Rossi", "M. Rossi", "M.Rossi"), surname then given
        ("Rossi Mario", "Rossi, Mario", "Rossi M.")."""
        if not g:
            return []
        full = [_seq_rx(g)] + ([_seq_rx(g[:1])] if len(g) > 1 else [])
        inits = _initials_rx(g)
        # an initial has its dot: "e Rossi", "Rossi e" are "and Rossi", "Rossi and" in Italian
        given_then = "|".join([rf"(?:{f})\s+" for f in full] + [rf"(?:{i})\.\s*" for i in inits])
        then_given = "|".join([f"(?:{f})" for f in full] + [rf"(?:{i})\." for i in inits])
        return [rf"(?:{given_then})(?:{s_rx})", rf"(?:{s_rx})(?:\s*,\s*|\s+)(?:{then_given})"]

    alts = pairs(given, surname_rx)
    if not certain and given:
        # the order was guessed: also the other way round ("Rossi Mario" meant Mario Rossi)
        alts += pairs(surname, _seq_rx(given))
    if not alts:
        alts = [surname_rx]
    two_part = re.compile(r"(?<!\w)(?:" + "|".join(f"(?:{a})" for a in alts) + r")(?!\w)")
    alone = re.compile(rf"(?<!\w)(?:{surname_rx})(?!\w)")
    return KnownName(canonical, two_part, alone, frozenset(" ".join(fold(w) for w in f) for f in alone_forms))


def _literal_rx(value: str) -> re.Pattern | None:
    words = re.findall(r"\w+", fold(value))
    if not words or sum(len(w) for w in words) < 3:
        return None
    return re.compile(r"(?<!\w)" + r"[\s\-./]*".join(re.escape(w) for w in words) + r"(?!\w)")


@dataclass(frozen=True)
class KnownMatch:
    start: int
    end: int
    canonical: str
    is_name: bool
    surname_alone: bool = False


class KnownIdentities:
    """The known identifiers of one note (or one patient): find them in a text."""

    def __init__(self, values: Iterable[str], language: str):
        self.names: list[KnownName] = []
        self.literals: list[tuple[str, re.Pattern]] = []
        for value in values:
            if not isinstance(value, str) or not value.strip():
                continue
            if is_name_value(value):
                compiled = compile_known_name(value, language)
                if compiled is not None:
                    self.names.append(compiled)
            else:
                rx = _literal_rx(value)
                if rx is not None:
                    self.literals.append((" ".join(value.split()).lower(), rx))

    def __bool__(self) -> bool:
        return bool(self.names or self.literals)

    def find(self, text: str) -> list[KnownMatch]:
        if not self:
            return []
        folded, index = fold_with_map(text)
        n = len(text)
        out: list[KnownMatch] = []
        for name in self.names:
            for m in name.two_part.finditer(folded):
                s, e = _unfold_span(index, n, m.start(), m.end())
                out.append(KnownMatch(s, e, name.canonical, True))
            for m in name.alone.finditer(folded):
                s, e = _unfold_span(index, n, m.start(), m.end())
                if text[s].isupper():  # "Rossi", "ROSSI"; not "rossi" (costa, fiore, ferro...)
                    out.append(KnownMatch(s, e, name.canonical, True, surname_alone=True))
        for canonical, rx in self.literals:
            for m in rx.finditer(folded):
                s, e = _unfold_span(index, n, m.start(), m.end())
                out.append(KnownMatch(s, e, canonical, False))
        return out


# ----------------------------------------------------------------------------- titled names

_UP = "A-ZÀ-ÖØ-Þ"
_LO = "a-zß-öø-ÿ"
_CAP_WORD = rf"(?:[{_UP}]['’])?[{_UP}][{_LO}]+(?:[{_UP}][{_LO}]+)*(?:[-'’][{_UP}]?[{_LO}]+)*"  # McDonald
_UPPER_WORD = rf"(?:[{_UP}]['’])?[{_UP}]{{2,}}(?:[-'’][{_UP}]{{2,}})*"
_PARTICLE = (
    r"(?:[Dd]e\s+[Ll]a|[Dd]e\s+[Ll]os|[Dd]e\s+[Ll]as|De|Di|Da|Del|Della|Dello|Dei|Dal|Dalla|de|di|da|del"
    r"|van|von|Van|Von|La|Lo|Le|DE|DI|DA|DEL|DELLA)"
)
_INITIAL = rf"[{_UP}]\."

# honorifics (any case: "sig.ra", "Dott."), then roles (lower case in running text: "paziente")
TITLES = {
    "it": (
        [
            r"Sig\.ra",
            r"Sig\.na",
            r"Sigg?\.",
            r"Signor[ae]?",
            r"Signorina",
            r"Dott\.ssa",
            r"Dott\.",
            r"Dott",
            r"Dottor(?:e|essa)?",
            r"Dr\.ssa",
            r"Dr\.",
            r"Dr",
            r"Prof\.ssa",
            r"Prof\.",
            r"Prof",
            r"Professor(?:e|essa)",
            r"Infermier[ae]",
            r"Ing\.",
            r"Avv\.",
        ],
        [r"paziente", r"assistit[oa]", r"degente"],
    ),
    "es": (
        [
            r"Sr\.",
            r"Sra\.",
            r"Srta\.",
            r"Sr",
            r"Sra",
            r"Señor(?:a|ita)?",
            r"Dr\.",
            r"Dra\.",
            r"Dr",
            r"Dra",
            r"Doctor(?:a)?",
            r"Dña\.",
            r"Dª",
            r"Doña",
            r"Don",
            r"Prof\.",
            r"Profa\.",
            r"Profesor(?:a)?",
            r"Enf\.",
            r"Enfermer[oa]",
        ],
        [r"paciente"],
    ),
    "en": (
        [
            r"Mr\.?",
            r"Mrs\.?",
            r"Ms\.?",
            r"Miss",
            r"Mx\.?",
            r"Dr\.?",
            r"Prof\.?",
            r"Professor",
            r"Doctor",
            r"Nurse",
            r"Sister",
        ],
        [r"patient"],
    ),
}
# titles written only with a capital ("D." is Spanish "Don" only so)
# ("Inf." is the nurse, "inf." is "inferiore")
CASED_TITLES = {"it": [r"Inf\."], "es": [r"D\."], "en": []}
# titles that are also common abbreviations: a name after them has two words at least
# ("D. Juan Pérez"; not "dímero D. Exámenes")
TWO_WORD_TITLES = frozenset({"D."})

# capitalised words that follow a title without being a name
STOP_WORDS = {
    "it": {
        "il", "lo", "la", "i", "gli", "le", "un", "una", "uno", "e", "è", "ed", "non", "si", "ha", "in", "con",
        "per", "nome", "cognome", "data", "età", "che", "al", "alla", "nel", "nella", "sul", "paziente",
        "ricoverato", "ricoverata", "riferisce", "presenta", "giunge", "viene", "dimesso", "dimessa", "affetto",
        "affetta", "anni", "ore", "oggi", "ieri", "sig", "dott", "dr", "prof", "critico", "pediatrico",
    },
    "es": {
        "el", "la", "los", "las", "un", "una", "es", "se", "no", "con", "en", "por", "para", "nombre",
        "apellido", "apellidos", "fecha", "edad", "que", "y", "del", "al", "paciente", "refiere", "presenta",
        "ingresa", "acude", "años", "hoy", "ayer", "sr", "sra", "dr", "dra", "crítico", "crítica", "critico",
        "pediátrico", "ambulatorio", "ingresado", "ingresada",
    },
    "en": {
        "the", "a", "an", "is", "was", "has", "had", "name", "names", "number", "no", "id", "record", "presented",
        "presents", "denies", "reports", "states", "with", "in", "on", "at", "to", "and", "of", "for", "who",
        "this", "that", "not", "will", "should", "care", "information", "details", "history", "age", "date",
        "dob", "patient", "admitted", "today", "yesterday", "mr", "mrs", "ms", "dr", "prof",
    },
}  # fmt: skip


def _titled_regex(language: str) -> re.Pattern:
    honorifics, roles = TITLES[language]
    cased = CASED_TITLES[language]
    title = (
        r"(?P<title>"
        + "|".join(f"(?i:{t})" for t in sorted(honorifics, key=len, reverse=True))
        + "|"
        + "|".join(f"(?P<role{i}>(?i:{t}))" for i, t in enumerate(sorted(roles, key=len, reverse=True)))
        + ("|" + "|".join(cased) if cased else "")
        + r")"
    )
    word = rf"(?:{_CAP_WORD}|{_UPPER_WORD})"
    # initials may come before any word ("J. Watson", "Hartmut P.H. Neumann"); a particle before
    # any word but "y", which only joins two ("García y López")
    lead = rf"(?:{_INITIAL}\s*)*(?:{_PARTICLE}\s+)?"
    join = rf"\s+(?:{_INITIAL}\s*)*(?:(?:{_PARTICLE}|y)\s+)?"
    name = rf"(?P<name>{lead}{word}(?:{join}{word}){{0,2}})"
    # the title stands alone: not inside a word or a compound ("HLA-DR", "medi-inf.")
    return re.compile(rf"(?<![\w\-./]){title}(?:(?<=\.)\s*|\s*:\s*|\s+){name}")


_TITLED: dict[str, re.Pattern] = {}
_STOP_FOLDED = {lang: frozenset(fold(w) for w in words) for lang, words in STOP_WORDS.items()}
_WORD_IN_NAME = re.compile(rf"{_INITIAL}|{_CAP_WORD}|{_UPPER_WORD}|\S+")


def find_titled_names(text: str, language: str) -> list[tuple[int, int]]:
    """The name after a title or role: "Sig.ra Maria Rossi" -> "Maria Rossi", "Dr. García" ->
    "García", "Mr O'Brien" -> "O'Brien". Up to three capitalised words (particles "De", "Di",
    "de la" between them do not count); after a role ("paziente", "patient") words in capitals
    are acronyms, not names ("paziente HIV positivo"). Stops at a common word ("Patient Name")."""
    rx = _TITLED.get(language)
    if rx is None:
        rx = _TITLED[language] = _titled_regex(language)
    stop = _STOP_FOLDED[language]
    out = []
    for m in rx.finditer(text):
        is_role = any(k.startswith("role") and v for k, v in m.groupdict().items())
        start = m.start("name")
        if not m.group("title").endswith(".") and m.group("name")[:1].islower():
            continue  # "profesora de Educación Física"; but "Sra. de García"
        # the name, word by word, until a stop word (or, after a role, a word in capitals)
        end = None
        words = 0
        for w in _WORD_IN_NAME.finditer(m.group("name")):
            token = w.group(0)
            letters = token.rstrip(".")
            low = fold(letters)
            if low in PARTICLES or low == "de la":
                continue
            if len(letters) == 1 and token.endswith("."):  # an initial ("Dr. A. Morris"): not a stop word
                continue
            if low in stop or (is_role and len(letters) > 1 and letters.isupper()):
                break
            end = start + w.end()
            words += 1
        if end is not None and m.group("title") in TWO_WORD_TITLES and words < 2:
            end = None
        if end is not None:
            # a particle before the stop is not part of the name: the span ends at a word
            out.append((start, end))
    return out
