"""Postal addresses in Italian, Spanish and English notes: streets with their civic numbers,
postcodes with their towns.

    find_addresses("Residente in Via Garibaldi 12/B, 20121 Milano (MI).", "it") -> [(13, 50)]

What counts as an address (each shape a regular expression with named groups, so a surrogate
can replace the parts it names and keep the rest, ml.deid.surrogates.address_like):

- Italian: a street type written capitalised or as its abbreviation ("Via", "V.le", "Viale",
  "Piazza", "P.zza", "Piazzale", "P.le", "Corso", "C.so", "Largo", "Vicolo", "Strada",
  "Località", "Loc.", "Contrada", "Lungomare"), then a capitalised name (particles "di", "del",
  "della", "dei" ... inside it; a number first only before a capitalised word: "Via 4 Novembre"),
  then optionally a civic number ("12", "12/B", "12B", "12 bis", "n. 5"), a CAP of five digits
  with its town, a province ("(MI)"); alone, a CAP with its town and province ("20121 Milano
  (MI)").
- Spanish: "Calle", "C/", "C.", "Avda.", "Av.", "Avenida", "Plaza", "Pza.", "Paseo", "Pº",
  "Camino", "Carretera", "Ctra.", "Ronda", "Travesía", "Glorieta", then a capitalised name, a
  number ("5", "nº 5", "s/n"), a floor and door ("5º 2ª", "3º B", "izq."), a código postal with its
  town ("28001 Madrid", "(Madrid)"); alone, a código postal with its town and province.
- English: a house number, a capitalised name and a street type after it ("221B Baker Street",
  "12 Mulberry Dr", "Flat 3, 14 Station Road"), then a town, a UK postcode or a US state and
  ZIP; "Baker Street", "Oxford Road", "Park Avenue" without a number (Street, Road and Avenue
  only); alone, a UK postcode (the official shape, with its space: "SW1A 1AA") and a US ZIP
  after a state abbreviation ("Springfield, IL 62704").

Precision over clinical text, by rule:
- the street type must be capitalised (or its abbreviation): "via orale", "per via endovenosa",
  "via e.v." are routes of administration, never addresses; and it must be followed by a
  capitalised name: "Via di accesso" is not an address either. A capitalised route or airway
  word after it ("Via Orale", "VIA EV", "Via Aerea") is refused by a stop list.
- an acronym alone after the street type is a route or a device, without a number: "Via PTC",
  "Via PEG" (a street named by an acronym alone needs its civic number).
- a street type in capitals ("VIA", "CALLE"), and the weak Spanish types ("C.", "Camino",
  "Ronda": "Camino de Santiago" is a pilgrimage), need a number or a postcode.
- English abbreviations are street types only after a house number and a name, and not before a
  capitalised name: "Dr. House" and "Dr Smith" are doctors, "St. Thomas' Hospital" is a saint's
  hospital (a hospital's name is not found here), "12 March Dr Jones" is a date and a doctor.
- "Road traffic accident" is not a road.
"""

from __future__ import annotations

from functools import cache

import regex

__all__ = ["find_addresses", "address_matches", "STREET_TYPES"]

_SP = r"[ \t]+"
# a capitalised word (also in capitals), with an elided particle in front ("dell'Annunziata")
_W = r"(?:(?:[Dd]ell|[Dd]all|[Nn]ell|[Ss]ull|[Aa]ll|[Dd]|Sant)['’])?\p{Lu}[\p{L}'’]*+(?:-\p{Lu}\p{L}*+)?(?!\d)"

_PARTICLES = {
    "it": r"(?:di|del|della|dello|dei|degli|delle|de|da|dal|dalla|dalle|dai|al|alla|alle|ai|sul|sulla|e|in)",
    "es": r"(?:de|del|la|las|los|el|y|d['’]|l['’])",
    "en": r"(?:of|the|and|upon|on)",
}

STREET_TYPES = {
    "it": (
        "Via",
        "Viale",
        "V.le",
        "Piazza",
        "P.zza",
        "P.za",
        "Piazzale",
        "P.le",
        "Corso",
        "C.so",
        "Largo",
        "Vicolo",
        "Strada",
        "Località",
        "Loc.",
        "Contrada",
        "Lungomare",
    ),
    "es": (
        "Calle",
        "C/",
        "C.",
        "Avda.",
        "Avda",
        "Av.",
        "Avenida",
        "Plaza",
        "Pza.",
        "Plza.",
        "Paseo",
        "Pº",
        "Camino",
        "Carretera",
        "Ctra.",
        "Ronda",
        "Travesía",
        "Glorieta",
    ),
    "en": (
        "Street",
        "St",
        "Road",
        "Rd",
        "Avenue",
        "Ave",
        "Lane",
        "Ln",
        "Drive",
        "Dr",
        "Close",
        "Court",
        "Ct",
        "Way",
        "Place",
        "Pl",
        "Crescent",
        "Terrace",
        "Boulevard",
        "Blvd",
        "Square",
        "Gardens",
        "Grove",
        "Mews",
    ),
}
# a Spanish type that needs a number or a postcode ("Camino de Santiago" is a pilgrimage)
_WEAK = frozenset({"C.", "Camino", "Ronda"})
_EN_ABBREVIATIONS = frozenset({"St", "Rd", "Ave", "Ln", "Dr", "Ct", "Pl", "Blvd"})
_EN_WITHOUT_NUMBER = ("Street", "Road", "Avenue")

# a first name word after the street type that makes it a clinical phrase (compared case-folded,
# dots removed): routes of administration, airways, vessels
_CLINICAL = frozenset(
    (
        "orale os ev iv im sc sl e endovenosa endovena intravenosa intramuscolare sottocutanea sublinguale "
        "rettale topica inalatoria transdermica enterale parenterale intratecale epidurale cutanea "
        "percutanea intradermica oftalmica nasale vaginale aerea aeree biliare biliari venosa arteriosa "
        "centrale periferica urinaria urinarie crucis lattea oral intravenous peg sng cvc picc ptc "
        "ercp"
    ).split()
)
_MONTHS_EN = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_EN_STOP = frozenset(
    "the a an in on at of and to from by for with patient seen lives living address home his her "
    "their mr mrs ms dr he she it they this that these there we i no not but then which who where when "
    "after before since on examination".split()
)

# UK postcodes, BS 7666 (the government data standard's pattern, capitals), and GIR 0AA
_UK_POSTCODE = (
    r"(?:GIR[ ]?0AA|(?:[A-PR-UWYZ](?:[0-9]{1,2}|[A-HK-Y][0-9]{1,2}|[0-9][A-HJKPSTUW]|[A-HK-Y][0-9][ABEHMNPRVWXY]))"
    r"[ ]?[0-9][ABD-HJLNP-UW-Z]{2})"
)
_US_STATES = (
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC "
    "ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR"
).split()
_STATE = r"(?:" + "|".join(_US_STATES) + r")"
_ZIP = r"\d{5}(?:-\d{4})?(?!\d)"


def _alternation(words) -> str:
    return "|".join(regex.escape(w) for w in sorted(words, key=len, reverse=True))


def _type_group(language: str) -> str:
    """The street type as written: capitalised or in capitals; an abbreviation as it is."""
    words, abbreviations = [], []
    for t in STREET_TYPES[language]:
        if t.endswith((".", "/")) or t == "Pº":
            abbreviations.append(t)
        else:
            words += [t, t.upper()]
    # a word type is followed by a space; an abbreviation by a space or nothing ("C/Mayor")
    return rf"(?P<type>(?:{_alternation(words)})(?=[ \t])|(?:{_alternation(abbreviations)}))[ \t]*"


# an abbreviated title or saint inside a street's name, before a capitalised word: "Calle Dr.
# Fleming", "Via S. Francesco", "Avda. Gral. Perón"
_ABBREVIATION = r"(?:S|SS|Sta|Sto|Dr|Dra|Dott|Prof|Gen|Gral|Mons|Card|Cap|Col|Pte|Fray|Ing|Avv|Mtro)\.(?=[ \t]+\p{Lu})"


def _name(language: str, tokens: str = "{0,5}") -> str:
    part = _PARTICLES[language]
    word = rf"(?:{_ABBREVIATION}|{_W})"
    return rf"(?:{part}{_SP})*(?:{word}|\d{{1,4}}(?={_SP}\p{{Lu}}))(?:{_SP}(?:{part}{_SP})*{word}){tokens}"


def _city(language: str) -> str:
    return rf"{_W}(?:{_SP}(?:{_PARTICLES[language]}{_SP})?{_W}){{0,3}}"


_NOT_AFTER_NUMBER = r"(?<![\d.,:/\p{L}])"


@cache
def _patterns(language: str) -> tuple:
    city = _city(language)
    if language in ("it", "es"):
        if language == "it":
            number = (
                r"(?:(?:n\.|n°|nr\.|num\.|civ\.|civico)[ \t]*)?"
                r"(?P<num>\d{1,4}(?!\d)(?![.,]\d)(?:[ \t]*/[ \t]*[A-Za-z0-9]{1,3}\b|[A-Za-z]\b|[ \t]+bis\b)?)"
            )
            floor = ""
            province = r"(?:[ \t]*\((?P<prov>\p{Lu}{2})\))?"
        else:
            number = (
                r"(?:(?:nº|n\.º|n°|núm\.|num\.|número|no\.|n\.)[ \t]*)?"
                r"(?P<num>\d{1,4}(?!\d)(?![.,]\d)[A-Za-z]?\b|s/n)"
            )
            door = (
                r"(?:\d{1,2}[ \t]?[ºª°](?:[ \t]*[A-Z]\b)?"
                r"|bajo|ático|izq(?:da)?\.?|izquierda|dcha\.?|derecha|puerta[ \t]+\d{1,3})"
            )
            floor = rf"(?P<floor>(?:[ \t]*,?[ \t]*{door}){{1,3}})?"
            province = r"(?:[ \t]*\((?P<prov>\p{Lu}[\p{L} ]{1,30})\))?"
        postcode = rf"(?P<cap>\d{{5}})(?!\d)[ \t]+(?P<city>{city}){province}"
        street = (
            rf"(?<![\p{{L}}\d]){_type_group(language)}(?P<name>{_name(language)})"
            rf"(?:[ \t]*,?[ \t]*{number}{floor}"
            rf"(?:[ \t]*[,\-–]?[ \t]*{postcode}|[ \t]*,[ \t]*(?P<city>{city}){province})?"
            rf"|[ \t]*[,\-–]?[ \t]*{postcode})?"
        )
        if language == "it":
            alone = rf"{_NOT_AFTER_NUMBER}(?P<cap>\d{{5}})(?!\d)[ \t]+(?P<city>{city})[ \t]*\((?P<prov>\p{{Lu}}{{2}})\)"
        else:
            alone = (
                rf"{_NOT_AFTER_NUMBER}(?P<cap>\d{{5}})(?!\d)[ \t]+(?P<city>{city})"
                r"[ \t]*\((?P<prov>\p{Lu}[\p{L} ]{1,30})\)"
            )
        return (("street", regex.compile(street)), ("alone", regex.compile(alone)))
    # English
    types = [t for t in STREET_TYPES["en"] if t not in _EN_ABBREVIATIONS]
    abbreviations = sorted(_EN_ABBREVIATIONS, key=len, reverse=True)
    suffix = (
        rf"(?P<type>(?:{_alternation(types)})(?![\p{{L}}\d])"
        rf"|(?:{'|'.join(abbreviations)})(?!\.?[ \t]+\p{{Lu}}\p{{Ll}})\.?(?![\p{{L}}\d]))"
    )
    tail = (
        rf"(?:[ \t]*,[ \t]*(?P<city>{city}))?"
        rf"(?:[ \t]*,?[ \t]*(?P<postcode>{_UK_POSTCODE})(?![\p{{L}}\d])"
        rf"|[ \t]*,?[ \t]*(?P<state>{_STATE})[ \t]+(?P<zip>{_ZIP}))?"
    )
    unit = r"(?:(?:Flat|Apt\.?|Apartment|Unit|Suite)[ \t]+(?P<unit>\d{1,4}[A-Za-z]?),?[ \t]+)?"
    numbered = (
        rf"{_NOT_AFTER_NUMBER}{unit}(?P<num>\d{{1,5}}[A-Za-z]?(?:-\d{{1,5}})?)(?![\d.,:/])[ \t]*,?[ \t]+"
        rf"(?P<name>{_W}(?:{_SP}{_W}){{0,3}}){_SP}{suffix}{tail}"
    )
    bare = (
        rf"(?<![\p{{L}}\d])(?P<name>{_W}(?:{_SP}{_W}){{0,2}}){_SP}"
        rf"(?P<type>{'|'.join(_EN_WITHOUT_NUMBER)})(?![\p{{L}}\d])"
        rf"(?![ \t]+(?:[Tt]raffic|[Aa]ccident|RTA|[Cc]ollision)){tail}"
    )
    postcode = rf"(?<![\p{{L}}\d])(?P<postcode>{_UK_POSTCODE.replace('[ ]?', '[ ]')})(?![\p{{L}}\d])"
    state_zip = rf"(?:(?P<city>{city}),[ \t]*)?(?<![\p{{L}}\d])(?P<state>{_STATE})[ \t]+(?P<zip>{_ZIP})"
    return (
        ("street", regex.compile(numbered)),
        ("bare", regex.compile(bare)),
        ("alone", regex.compile(postcode)),
        ("alone", regex.compile(state_zip)),
    )


def _fold(word: str) -> str:
    return word.casefold().replace(".", "")


def _accept(match, kind: str, text: str, language: str) -> bool:
    groups = match.groupdict()
    if kind == "alone":
        return True
    street_type, name = groups.get("type") or "", groups.get("name") or ""
    words = name.split()
    has_number = bool(groups.get("num")) or bool(groups.get("cap")) or bool(groups.get("postcode"))
    if language in ("it", "es"):
        first = next((w for w in words if not regex.fullmatch(_PARTICLES[language], w)), "")
        if _fold(first) in _CLINICAL:
            return False
        if (street_type.isupper() and len(street_type) > 1 or street_type in _WEAK) and not has_number:
            return False
        # an acronym alone after the type is a route or a device ("Via PTC", "Via PEG"), not a street
        if not has_number and all(w.isupper() for w in words if w[:1].isalpha()):
            return False
        if street_type == "C." and regex.search(r"(?:Dr|Dra|Sr|Sra|Srta|Dña|Dª|D)\.?[ \t]*$", text[: match.start()]):
            return False
        return True
    folded = [_fold(w) for w in words]
    if any(w in _MONTHS_EN for w in folded):
        return False
    if kind == "bare":
        while folded and folded[0] in _EN_STOP:
            folded.pop(0)
        return bool(folded)
    return True


def _end_of_groups(match, language: str) -> int:
    """A match's end without the spaces and commas an optional part left behind. An English town
    after a comma that is a clause's first word ("12 Mill Lane, The patient ...") is not a town:
    the address ends before it."""
    end = match.end()
    text = match.string
    city = match.groupdict().get("city")
    if language == "en" and city and _fold(city.split()[0]) in _EN_STOP and match.start("city") > match.start():
        end = match.start("city")
    while end > match.start() and text[end - 1] in " \t,-–":
        end -= 1
    return end


def address_matches(text: str, language: str) -> list:
    """The regex matches of the address shapes in `text`, accepted by the clinical rules,
    leftmost and then longest first, none overlapping."""
    candidates = []
    for kind, pattern in _patterns(language):
        for m in pattern.finditer(text):
            if m.end() > m.start() and _accept(m, kind, text, language):
                candidates.append(m)
    candidates.sort(key=lambda m: (m.start(), -m.end()))
    kept, last_end = [], -1
    for m in candidates:
        if m.start() >= last_end:
            kept.append(m)
            last_end = m.end()
    return kept


def find_addresses(text: str, language: str) -> list[tuple[int, int]]:
    """[(start, end)] of the addresses in `text`; a street and a postcode and town just after it
    (", " or " - " between) are one address."""
    if language not in STREET_TYPES:
        return []
    spans: list[list[int]] = []
    for m in address_matches(text, language):
        start, end = m.start(), _end_of_groups(m, language)
        if spans and regex.fullmatch(r"[ \t]*[,\-–]?[ \t]*", text[spans[-1][1] : start]):
            spans[-1][1] = end
        else:
            spans.append([start, end])
    return [(s, e) for s, e in spans]
