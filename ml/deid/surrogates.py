"""Surrogate values: valid stand-ins for identifiers, chosen by a keyed hash so they are consistent.

Lists per language ("it", "es", "en"): given names (female and male, about 50 each), family
names (about 100), streets and cities: common, unremarkable, written for this project. Family
names that are also clinical words or eponyms ("Bell", "Turner", "Costa", "Campos") are left
out, so a surrogate never reads as a finding.

Generators (each takes a `random.Random`, so the synthetic benchmark draws from them too) make
values that pass their checks: a codice fiscale with its check character, a DNI or NIE with its
check letter, an NHS number passing mod 11, a US SSN outside the never-issued ranges, an IBAN
passing mod 97 (with the Italian CIN and the Spanish CCC check digits), Italian, Spanish, UK and
US phone numbers, e-mail addresses and URLs on the reserved example domains (RFC 2606),
IP addresses in the documentation ranges (RFC 5737, RFC 3849), postal addresses of the language
(a street of the list, a number, a town with its own postcode: an Italian CAP and province, a
Spanish código postal of the town's province, a UK postcode of the town's area in the official
shape, a US ZIP after the town's state).

`Surrogates(language, secret)` picks the surrogate of one value deterministically: a random
stream seeded by HMAC-SHA256(secret, patient, type, canonical value), so one identity of one
patient always gets the same surrogate in all of that patient's notes, another patient (or
another secret) gets another one, and nobody without the secret can tell which surrogate an
original value gets. A surrogate is never the original itself. Numbers keep the original's
shape (separators, case, grouping): "943 476 5919" becomes another NHS number written "xxx xxx
xxxx"; a record number keeps digits as digits and letters as letters.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import re
import string
import unicodedata
from datetime import date, timedelta

import phonenumbers

from ml.deid.types import LANGUAGES

# --- lists ---------------------------------------------------------------------------------------

GIVEN_FEMALE = {
    "it": (
        "Maria Anna Giulia Francesca Chiara Sara Laura Valentina Alessandra Elena Silvia Federica Martina "
        "Paola Roberta Elisa Giorgia Simona Barbara Monica Cristina Claudia Daniela Serena Marta Angela "
        "Giovanna Rita Teresa Lucia Rosa Carla Patrizia Antonella Stefania Michela Ilaria Veronica Alice "
        "Beatrice Camilla Aurora Sofia Emma Greta Noemi Irene Caterina Luisa Franca"
    ).split(),
    "es": (
        "María Carmen Ana Laura Isabel Lucía Cristina Marta Elena Pilar Paula Sara Raquel Rosa Teresa "
        "Silvia Beatriz Patricia Sonia Nuria Mónica Rocío Eva Irene Alba Andrea Inés Julia Claudia Sofía "
        "Lorena Natalia Alicia Susana Yolanda Rosario Montserrat Mercedes Encarnación Dolores Esther "
        "Victoria Verónica Noelia Miriam Belén Inmaculada Marina Nerea Carla"
    ).split(),
    "en": (
        "Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Lisa Nancy Betty "
        "Margaret Sandra Ashley Kimberly Emily Donna Michelle Carol Amanda Melissa Deborah Stephanie "
        "Rebecca Sharon Cynthia Kathleen Amy Helen Emma Olivia Rachel Catherine Ruth Julie Joanne Claire "
        "Hannah Lucy Sophie Charlotte Grace Alice Jane Fiona Louise Gillian Anna"
    ).split(),
}

GIVEN_MALE = {
    "it": (
        "Marco Luca Giuseppe Giovanni Antonio Francesco Alessandro Andrea Matteo Lorenzo Stefano Paolo "
        "Roberto Davide Simone Federico Riccardo Fabio Massimo Claudio Daniele Giorgio Mario Enrico "
        "Alberto Pietro Michele Salvatore Vincenzo Carlo Emanuele Filippo Tommaso Gabriele Nicola Franco "
        "Bruno Sergio Luigi Angelo Diego Mauro Maurizio Fabrizio Gianluca Leonardo Samuele Edoardo Cesare "
        "Raffaele"
    ).split(),
    "es": (
        "Antonio José Manuel Francisco David Juan Javier Daniel Carlos Jesús Alejandro Miguel Rafael "
        "Pablo Pedro Ángel Sergio Fernando Jorge Luis Alberto Álvaro Adrián Diego Raúl Enrique Ramón "
        "Vicente Iván Rubén Óscar Andrés Joaquín Santiago Eduardo Víctor Roberto Jaime Mario Ignacio "
        "Marcos Alfonso Salvador Ricardo Emilio Gonzalo Guillermo Hugo Tomás Julián"
    ).split(),
    "en": (
        "James John Robert Michael William David Richard Joseph Thomas Charles Christopher Daniel Matthew "
        "Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Timothy Ronald Edward "
        "Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Peter Simon Ian Graham Neil Stuart "
        "Martin Philip Alan Colin Keith Gareth Oliver Harry"
    ).split(),
}

FAMILY = {
    "it": (
        "Rossi Russo Ferrari Esposito Bianchi Romano Colombo Ricci Marino Greco Gallo Conti Mancini "
        "Giordano Rizzo Lombardi Moretti Barbieri Fontana Santoro Mariani Rinaldi Caruso Ferrara Galli "
        "Martini Leone Longo Gentile Martinelli Vitale Lombardo Serra Coppola Marchetti Parisi Villa Conte "
        "Ferraro Fabbri Marini Valentini Messina Gatti Pellegrini Palumbo Sanna Farina Rizzi Monti "
        "Cattaneo Morelli Amato Silvestri Mazza Pellegrino Carbone Giuliani Benedetti Barone Rossetti "
        "Caputo Montanari Guerra Palmieri Bernardi Martino Ferretti Bellini Basile Riva Donati Piras "
        "Vitali Battaglia Sartori Costantini Milani Pagano Ruggiero Sorrentino Orlando Negri Mattei "
        "Fumagalli Lupo Cirillo Marchi Bassi Ferrero Bellucci Brambilla Colonna Cocco Grimaldi Guidi "
        "Pace Poli Sala Tosi Zanetti Zanella"
    ).split(),
    "es": (
        "García Rodríguez González Fernández López Martínez Sánchez Pérez Gómez Jiménez Ruiz "
        "Hernández Díaz Moreno Muñoz Álvarez Romero Alonso Gutiérrez Navarro Torres Domínguez Vázquez "
        "Ramos Gil Ramírez Serrano Molina Morales Suárez Ortega Delgado Castro Ortiz Rubio Marín Sanz "
        "Núñez Iglesias Medina Garrido Cortés Castillo Santos Lozano Guerrero Cano Prieto Méndez Cruz "
        "Calvo Gallego Vidal León Márquez Herrera Peña Flores Cabrera Vega Fuentes Carrasco Díez "
        "Caballero Reyes Nieto Aguilar Pascual Santana Herrero Montero Hidalgo Giménez Ibáñez Ferrer "
        "Durán Benítez Mora Arias Vargas Carmona Crespo Román Pastor Soto Sáez Velasco Moya Soler Parra "
        "Esteban Bravo Gallardo Rojas Pardo Merino Espinosa Izquierdo Aranda Bermúdez Cuesta Lara Ríos Beltrán"
    ).split(),
    "en": (
        "Smith Johnson Williams Jones Miller Davis Anderson Taylor Moore Jackson Harris Thompson Clark "
        "Robinson Walker Wright Scott Nelson Carter Mitchell Roberts Phillips Campbell Parker Edwards "
        "Collins Stewart Morris Rogers Morgan Cooper Peterson Bailey Reed Kelly Howard Richardson Watson "
        "Brooks Hughes Sanders Myers Ross Foster Powell Jenkins Perry Russell Sullivan Coleman Butler "
        "Henderson Barnes Palmer Holmes Lloyd Owen Hudson Walsh Fletcher Chapman Dixon Hunter Robertson "
        "Ellis Matthews Harrison Gibson Murray Wallace Kennedy Reynolds Hamilton Ferguson Bryant "
        "Patterson Simmons Jordan Hayes Ford Gordon Warren Dunn Hart Porter Spencer Burke Fraser Hopkins "
        "Lawson Pearson Cunningham Stevens Harper Armstrong Atkinson Bradley Burton Lambert"
    ).split(),
}

STREETS = {
    "it": (
        "Via Roma",
        "Via Garibaldi",
        "Via Mazzini",
        "Via Verdi",
        "Corso Italia",
        "Via Dante",
        "Via Cavour",
        "Viale Europa",
        "Via Marconi",
        "Via Matteotti",
        "Piazza della Repubblica",
        "Via Manzoni",
        "Via Leopardi",
        "Via dei Mille",
        "Via XX Settembre",
        "Corso Vittorio Emanuele",
        "Via Gramsci",
        "Via San Martino",
        "Viale dei Tigli",
        "Via delle Rose",
    ),
    "es": (
        "Calle Mayor",
        "Calle Real",
        "Avenida de la Constitución",
        "Calle del Sol",
        "Plaza de España",
        "Calle Nueva",
        "Calle San Juan",
        "Calle de la Iglesia",
        "Avenida de Andalucía",
        "Calle del Carmen",
        "Paseo de la Castellana",
        "Calle Cervantes",
        "Calle de Alcalá",
        "Avenida de América",
        "Calle Goya",
        "Calle del Pilar",
        "Ronda de Valencia",
        "Calle de los Olivos",
        "Avenida del Mar",
        "Calle Luna",
    ),
    "en": (
        "High Street",
        "Station Road",
        "Church Street",
        "Main Street",
        "Park Road",
        "Victoria Road",
        "Manor Road",
        "Church Road",
        "Park Avenue",
        "Oak Street",
        "Maple Avenue",
        "Elm Street",
        "Queen Street",
        "Mill Lane",
        "Kings Road",
        "Springfield Road",
        "Cedar Lane",
        "Riverside Drive",
        "Lake View Road",
        "North Street",
    ),
}

CITIES = {
    "it": (
        "Roma Milano Napoli Torino Palermo Genova Bologna Firenze Bari Catania Venezia Verona Messina "
        "Padova Trieste Brescia Parma Modena Perugia Livorno Ravenna Cagliari Foggia Rimini Salerno "
        "Ferrara Sassari Latina Monza Pescara"
    ).split(),
    "es": (
        "Madrid Barcelona Valencia Sevilla Zaragoza Málaga Murcia Palma Bilbao Alicante Córdoba "
        "Valladolid Vigo Gijón Granada Oviedo Santander Pamplona Almería Burgos Salamanca Albacete "
        "Logroño Badajoz Huelva Cádiz Lleida Tarragona Jaén Cáceres"
    ).split(),
    "en": (
        "London Manchester Birmingham Leeds Liverpool Bristol Sheffield Edinburgh Cardiff "
        "Leicester Nottingham Coventry Bradford Belfast Norwich Boston Chicago Denver Seattle Portland Austin "
        "Phoenix Atlanta Houston Dallas Columbus Memphis Baltimore Milwaukee Sacramento"
    ).split(),
}

# Municipality (Belfiore) codes of large Italian cities, for the fiscal codes of surrogate persons.
BELFIORE = ("H501", "F205", "F839", "L219", "G273", "D969", "A944", "D612", "A662", "C351", "L736", "L781")

EXAMPLE_DOMAINS = ("example.com", "example.org", "example.net")  # RFC 2606: never anybody's


def normalise(token: str) -> str:
    """How name tokens are compared: case-folded, accents removed ("NICOLÒ" -> "nicolo")."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _gender_lexicon() -> dict[str, dict[str, str]]:
    """normalised given name -> {language: "f" | "m"} (Andrea is male in Italian, female in Spanish)."""
    lexicon: dict[str, dict[str, str]] = {}
    for gender, table in (("f", GIVEN_FEMALE), ("m", GIVEN_MALE)):
        for language, names in table.items():
            for name in names:
                lexicon.setdefault(normalise(name), {})[language] = gender
    return lexicon


GIVEN_LEXICON = _gender_lexicon()


def is_given_name(token: str) -> bool:
    """Whether a name token is in the given-names lexicon (any language)."""
    return normalise(token) in GIVEN_LEXICON


def given_gender(token: str, language: str) -> str | None:
    """ "f", "m" or None for a given name: the note's language first, then the others."""
    genders = GIVEN_LEXICON.get(normalise(token))
    if not genders:
        return None
    return genders.get(language) or next(iter(genders.values()))


# --- the keyed choice ----------------------------------------------------------------------------


def keyed_digest(secret: bytes, *parts: str) -> bytes:
    """HMAC-SHA256 of the parts, each length-prefixed (no two part lists share a message)."""
    message = b"".join(len(p).to_bytes(4, "big") + p for p in (part.encode("utf-8") for part in parts))
    return hmac.new(secret, message, hashlib.sha256).digest()


def keyed_random(secret: bytes, *parts: str) -> random.Random:
    return random.Random(int.from_bytes(keyed_digest(secret, *parts), "big"))


SHIFT_MIN, SHIFT_MAX = 30, 365  # days; a patient's shift is in [-365, -30] or [30, 365]


def date_shift_days(secret: bytes, patient: str) -> int:
    """The one whole number of days every date of this patient moves by."""
    k = int.from_bytes(keyed_digest(secret, patient, "DATE_SHIFT"), "big") % (2 * (SHIFT_MAX - SHIFT_MIN + 1))
    width = SHIFT_MAX - SHIFT_MIN + 1
    return -(SHIFT_MAX - k) if k < width else SHIFT_MIN + (k - width)


# --- checksums -----------------------------------------------------------------------------------

_CF_ODD = (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25, 24, 23)
_CF_MONTHS = "ABCDEHLMPRST"
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"
_VOWELS = set("AEIOU")


def _cf_value(char: str, odd: bool) -> int:
    index = int(char) if char.isdigit() else ord(char) - ord("A")
    return _CF_ODD[index] if odd else index


def cf_check_char(first15: str) -> str:
    """The check character of a codice fiscale's first 15 characters (also the Italian IBAN CIN rule)."""
    total = sum(_cf_value(c, i % 2 == 0) for i, c in enumerate(first15.upper()))
    return chr(ord("A") + total % 26)


def dni_letter(number: int) -> str:
    return _DNI_LETTERS[number % 23]


def nhs_check_digit(first9: str) -> int | None:
    """The mod 11 check digit of an NHS number's first 9 digits; None where none exists (10)."""
    total = sum(int(d) * w for d, w in zip(first9, range(10, 1, -1)))
    check = 11 - total % 11
    return 0 if check == 11 else None if check == 10 else check


def iban_check_digits(country: str, bban: str) -> str:
    digits = "".join(str(int(c, 36)) for c in (bban + country + "00").upper())
    return f"{98 - int(digits) % 97:02d}"


def iban_is_valid(iban: str) -> bool:
    compact = re.sub(r"\s", "", iban).upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{10,30}", compact):
        return False
    digits = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return int(digits) % 97 == 1


def _ccc_digit(digits: str) -> str:
    weights = (1, 2, 4, 8, 5, 10, 9, 7, 3, 6)
    check = 11 - sum(int(d) * w for d, w in zip(digits.rjust(10, "0"), weights)) % 11
    return str({11: 0, 10: 1}.get(check, check))


# --- generators (also used by ml.deid.synthetic) -------------------------------------------------


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _letters(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(n))


def _consonants(name: str) -> str:
    return "".join(c for c in name if c.isalpha() and c not in _VOWELS)


def _vowels(name: str) -> str:
    return "".join(c for c in name if c in _VOWELS)


def _cf_surname(family: str) -> str:
    plain = normalise(family).upper()
    return (_consonants(plain) + _vowels(plain) + "XXX")[:3]


def _cf_given(given: str) -> str:
    plain = normalise(given).upper()
    consonants = _consonants(plain)
    if len(consonants) >= 4:
        return consonants[0] + consonants[2] + consonants[3]
    return (consonants + _vowels(plain) + "XXX")[:3]


def codice_fiscale(
    rng: random.Random, family: str | None = None, given: str | None = None, female: bool | None = None
) -> str:
    """A codice fiscale of a (surrogate) person: surname, name, birth date, sex, place, check character."""
    if female is None:
        female = rng.random() < 0.5
    family = family or rng.choice(FAMILY["it"])
    given = given or rng.choice((GIVEN_FEMALE if female else GIVEN_MALE)["it"])
    born = date(1930, 1, 1) + timedelta(days=rng.randrange(365 * 75))
    day = born.day + (40 if female else 0)
    first15 = (
        f"{_cf_surname(family)}{_cf_given(given)}{born.year % 100:02d}{_CF_MONTHS[born.month - 1]}{day:02d}"
        f"{rng.choice(BELFIORE)}"
    )
    return first15 + cf_check_char(first15)


def dni(rng: random.Random) -> str:
    number = rng.randrange(10_000_000, 100_000_000)
    return f"{number:08d}{dni_letter(number)}"


def nie(rng: random.Random) -> str:
    prefix = rng.choice("XYZ")
    number = rng.randrange(10**7)
    return f"{prefix}{number:07d}{dni_letter(int(str('XYZ'.index(prefix)) + f'{number:07d}'))}"


def nhs_number(rng: random.Random) -> str:
    while True:
        first9 = str(rng.randrange(1, 10)) + _digits(rng, 8)
        check = nhs_check_digit(first9)
        if check is not None:
            return first9 + str(check)


def ssn(rng: random.Random) -> str:
    """A US SSN outside the never-issued ranges (area 000, 666, 9xx; group 00; serial 0000)."""
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}{rng.randrange(1, 100):02d}{rng.randrange(1, 10000):04d}"


def bban(rng: random.Random, country: str) -> str:
    """A basic bank account number of the country (IT with its CIN, ES with its CCC digits, GB)."""
    country = country.upper()
    if country == "IT":
        rest = _digits(rng, 5) + _digits(rng, 5) + _digits(rng, 12)
        return cf_check_char(rest) + rest
    if country == "ES":
        bank, account = _digits(rng, 8), _digits(rng, 10)
        return bank + _ccc_digit("00" + bank) + _ccc_digit(account) + account
    if country == "GB":
        return _letters(rng, 4) + _digits(rng, 14)
    return _digits(rng, 16)


def iban(rng: random.Random, country: str = "IT") -> str:
    body = bban(rng, country)
    return country.upper() + iban_check_digits(country, body) + body


def group(value: str, size: int = 4) -> str:
    return " ".join(value[i : i + size] for i in range(0, len(value), size))


US_AREA_CODES = (
    "212",
    "213",
    "303",
    "305",
    "312",
    "404",
    "415",
    "503",
    "512",
    "602",
    "614",
    "617",
    "702",
    "713",
    "919",
)
COUNTRY_CODES = {"39": "IT", "34": "ES", "44": "GB", "1": "US"}


def phone_is_valid(text: str, country: str) -> bool:
    """Whether libphonenumber (the detector's own check) takes it for a valid number of the country
    (a number written with its country code is checked against that country)."""
    try:
        return phonenumbers.is_valid_number(phonenumbers.parse(text, country.upper()))
    except phonenumbers.NumberParseException:
        return False


def phone(rng: random.Random, country: str) -> str:
    """A valid phone number as people write them in the country: "+39 347 123 4567", "06 1234 5678",
    "0161 496 0123", "(617) 555-0147"."""
    for _ in range(200):
        value = _phone_draw(rng, country.upper())
        if phone_is_valid(value, country):
            return value
    return value  # not reached in practice: most draws are valid


def _phone_draw(rng: random.Random, country: str) -> str:
    international = rng.random() < 0.3
    if country == "IT":
        if rng.random() < 0.6:
            national = "3" + rng.choice("23456789") + _digits(rng, 8)
            shown = rng.choice(
                [f"{national[:3]} {national[3:6]} {national[6:]}", national, f"{national[:3]} {national[3:]}"]
            )
        else:
            area = rng.choice(("02", "06", "011", "010", "051", "055", "081", "091", "0471", "0522"))
            rest = _digits(rng, 10 - len(area))
            shown = rng.choice([f"{area} {rest}", f"{area}-{rest}", f"{area} {rest[:-4]} {rest[-4:]}", area + rest])
        return f"+39 {shown}" if international else shown
    if country == "ES":
        national = rng.choice(["6", "6", "71", "72", "91", "93", "95", "96", "98", "88"])
        national += _digits(rng, 9 - len(national))
        shown = rng.choice(
            [
                f"{national[:3]} {national[3:6]} {national[6:]}",
                national,
                f"{national[:3]} {national[3:5]} {national[5:7]} {national[7:]}",
            ]
        )
        return f"+34 {shown}" if international else shown
    if country == "GB":
        if rng.random() < 0.6:
            national = "07" + rng.choice(["4", "5", "7", "8", "9"]) + _digits(rng, 8)
            shown = f"{national[:5]} {national[5:]}"
        else:
            national = "0" + rng.choice(["20", "161", "113", "131", "117", "121"])
            national += _digits(rng, 11 - len(national))
            shown = (
                f"{national[:3]} {national[3:7]} {national[7:]}"
                if national[1] == "2"
                else f"{national[:4]} {national[4:7]} {national[7:]}"
            )
        return f"+44 {shown[1:]}" if international else shown
    area = rng.choice(US_AREA_CODES)
    exchange, line = f"{rng.randrange(2, 10)}{_digits(rng, 2)}", _digits(rng, 4)
    shown = rng.choice([f"({area}) {exchange}-{line}", f"{area}-{exchange}-{line}", f"{area}.{exchange}.{line}"])
    return f"+1 {area} {exchange} {line}" if international else shown


COUNTRY = {"it": "IT", "es": "ES", "en": "GB"}


def _ascii(name: str) -> str:
    return re.sub(r"[^a-z]", "", normalise(name))


def email(rng: random.Random, language: str) -> str:
    given = rng.choice(GIVEN_FEMALE[language] + GIVEN_MALE[language])
    family = rng.choice(FAMILY[language])
    user = rng.choice(
        [
            f"{_ascii(given)}.{_ascii(family)}",
            f"{_ascii(given)[0]}{_ascii(family)}",
            f"{_ascii(family)}{rng.randrange(1, 99)}",
        ]
    )
    return f"{user}@{rng.choice(EXAMPLE_DOMAINS)}"


def url(rng: random.Random) -> str:
    path = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randrange(4, 10)))
    return f"https://www.{rng.choice(EXAMPLE_DOMAINS)}/{path}"


def ip_address(rng: random.Random, version: int = 4) -> str:
    if version == 6:
        return "2001:db8:" + ":".join(f"{rng.randrange(65536):x}" for _ in range(6))
    return f"{rng.choice(['192.0.2', '198.51.100', '203.0.113'])}.{rng.randrange(1, 255)}"


def person(rng: random.Random, language: str, female: bool | None = None) -> tuple[str, str, bool]:
    """(given, family, female) of a surrogate person in the language."""
    female = rng.random() < 0.5 if female is None else female
    return rng.choice((GIVEN_FEMALE if female else GIVEN_MALE)[language]), rng.choice(FAMILY[language]), female


# Postcodes of the surrogate cities: the Italian CAP's first digits and province, the Spanish
# province code, the UK postcode area, the US state: a surrogate address is consistent with its town
IT_POSTAL = {
    "Roma": ("001", "RM"), "Milano": ("201", "MI"), "Napoli": ("801", "NA"), "Torino": ("101", "TO"),
    "Palermo": ("901", "PA"), "Genova": ("161", "GE"), "Bologna": ("401", "BO"), "Firenze": ("501", "FI"),
    "Bari": ("701", "BA"), "Catania": ("951", "CT"), "Venezia": ("301", "VE"), "Verona": ("371", "VR"),
    "Messina": ("981", "ME"), "Padova": ("351", "PD"), "Trieste": ("341", "TS"), "Brescia": ("251", "BS"),
    "Parma": ("431", "PR"), "Modena": ("411", "MO"), "Perugia": ("061", "PG"), "Livorno": ("571", "LI"),
    "Ravenna": ("481", "RA"), "Cagliari": ("091", "CA"), "Foggia": ("711", "FG"), "Rimini": ("479", "RN"),
    "Salerno": ("841", "SA"), "Ferrara": ("441", "FE"), "Sassari": ("071", "SS"), "Latina": ("041", "LT"),
    "Monza": ("209", "MB"), "Pescara": ("651", "PE"),
}  # fmt: skip
ES_PROVINCE = {
    "Madrid": "28", "Barcelona": "08", "Valencia": "46", "Sevilla": "41", "Zaragoza": "50", "Málaga": "29",
    "Murcia": "30", "Palma": "07", "Bilbao": "48", "Alicante": "03", "Córdoba": "14", "Valladolid": "47",
    "Vigo": "36", "Gijón": "33", "Granada": "18", "Oviedo": "33", "Santander": "39", "Pamplona": "31",
    "Almería": "04", "Burgos": "09", "Salamanca": "37", "Albacete": "02", "Logroño": "26", "Badajoz": "06",
    "Huelva": "21", "Cádiz": "11", "Lleida": "25", "Tarragona": "43", "Jaén": "23", "Cáceres": "10",
}  # fmt: skip
UK_AREA = {
    "London": "SE", "Manchester": "M", "Birmingham": "B", "Leeds": "LS", "Liverpool": "L", "Bristol": "BS",
    "Sheffield": "S", "Edinburgh": "EH", "Cardiff": "CF", "Leicester": "LE", "Nottingham": "NG",
    "Coventry": "CV", "Bradford": "BD", "Belfast": "BT", "Norwich": "NR",
}  # fmt: skip
US_STATE = {
    "Boston": "MA", "Chicago": "IL", "Denver": "CO", "Seattle": "WA", "Portland": "OR", "Austin": "TX",
    "Phoenix": "AZ", "Atlanta": "GA", "Houston": "TX", "Dallas": "TX", "Columbus": "OH", "Memphis": "TN",
    "Baltimore": "MD", "Milwaukee": "WI", "Sacramento": "CA",
}  # fmt: skip
_UK_INWARD = "ABDEFGHJLNPQRSTUWXYZ"  # the letters of a postcode's inward code (no C I K M O V)


def street_name(street: str) -> str:
    """A surrogate street's name without its type: "Via dei Mille" -> "dei Mille"."""
    words = street.split()
    return " ".join(words[:-1]) if words[-1] in ("Street", "Road", "Avenue", "Lane", "Drive") else " ".join(words[1:])


def postcode(rng: random.Random, language: str, city: str) -> str:
    """A valid-shaped postcode of `city`: a CAP, a código postal, a UK postcode or a US ZIP."""
    if language == "it":
        prefix = IT_POSTAL.get(city, ("001", "RM"))[0]
        return prefix + _digits(rng, 2)
    if language == "es":
        return ES_PROVINCE.get(city, "28") + "0" + _digits(rng, 2)
    if city in US_STATE:
        return f"{rng.randrange(10, 99)}{_digits(rng, 3)}"
    return uk_postcode(rng, UK_AREA.get(city))


def uk_postcode(rng: random.Random, area: str | None = None) -> str:
    area = area or rng.choice(sorted(set(UK_AREA.values())))
    return f"{area}{rng.randrange(1, 20)} {rng.randrange(10)}{rng.choice(_UK_INWARD)}{rng.choice(_UK_INWARD)}"


def address(rng: random.Random, language: str) -> str:
    """A whole address as notes write them, in one of the language's usual shapes."""
    street, city = rng.choice(STREETS[language]), rng.choice(CITIES[language])
    number = str(rng.randrange(1, 200))
    if language == "it":
        province = IT_POSTAL[city][1]
        street = rng.choice(
            [street, street.replace("Viale ", "V.le ").replace("Piazza ", "P.zza ").replace("Corso ", "C.so ")]
        )
        number = rng.choice(
            [number, number, f"{number}/{rng.choice('ABC')}", f"n. {number}", f"{number}{rng.choice('ab')}"]
        )
        return rng.choice(
            [
                f"{street} {number}, {city}",
                f"{street} {number}, {postcode(rng, language, city)} {city} ({province})",
                f"{street}, {number} - {postcode(rng, language, city)} {city}",
                f"{street} {number}",
                f"{postcode(rng, language, city)} {city} ({province})",
            ]
        )
    if language == "es":
        street = rng.choice(
            [street, street.replace("Calle ", "C/ ").replace("Avenida ", "Avda. ").replace("Plaza ", "Pza. ")]
        )
        floor = rng.choice(
            ["", f", {rng.randrange(1, 9)}º {rng.randrange(1, 5)}ª", f" {rng.randrange(1, 9)}º {rng.choice('ABCD')}"]
        )
        number = rng.choice([number, number, f"nº {number}"])
        return rng.choice(
            [
                f"{street}, {number}{floor}, {city}",
                f"{street} {number}{floor}, {postcode(rng, language, city)} {city}",
                f"{street}, {number}{floor}, {postcode(rng, language, city)} {city} ({city})",
                f"{street} {number}",
            ]
        )
    if city in US_STATE:
        return f"{number} {street}, {city}, {US_STATE[city]} {postcode(rng, language, city)}"
    short = street.replace("Street", "St").replace("Road", "Rd").replace("Avenue", "Ave").replace("Lane", "Ln")
    return rng.choice(
        [
            f"{number} {street}, {city}",
            f"{number} {street}, {city} {postcode(rng, language, city)}",
            f"Flat {rng.randrange(1, 30)}, {number} {short}, {city}, {postcode(rng, language, city)}",
            f"{number}{rng.choice('AB')} {street}",
        ]
    )


# --- shape-keeping surrogates --------------------------------------------------------------------


def reshape(original: str, compact: str) -> str:
    """`compact` written in the shape of `original`: its separators where they were, its case.

    Where the two have different numbers of letters and digits, `compact` as it is."""
    if sum(c.isalnum() for c in original) != len(compact):
        return compact
    chars, it = [], iter(compact)
    for c in original:
        if c.isalnum():
            new = next(it)
            chars.append(new.lower() if c.islower() else new)
        else:
            chars.append(c)
    return "".join(chars)


def same_shape(rng: random.Random, original: str, keep: int = 0) -> str:
    """Digits -> random digits, letters -> random letters of the same case, the rest kept; the first
    `keep` letters and digits stay as they are."""
    chars, seen = [], 0
    for c in original:
        if c.isalnum() and seen >= keep:
            if c.isdigit():
                c = rng.choice(string.digits)
            else:
                c = rng.choice(string.ascii_lowercase if c.islower() else string.ascii_uppercase)
        if c.isalnum():
            seen += 1
        chars.append(c)
    return "".join(chars)


def compact(value: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", value).upper()


def _phone_like(rng: random.Random, original: str, language: str) -> str:
    """Another valid phone number in the original's shape: its country code and the first digit of
    the national number (mobile or landline; two after a leading 0) kept, the rest drawn until
    libphonenumber takes it for a valid number (a shape it never takes: the last draw)."""
    digits = re.sub(r"\D", "", original)
    stripped = original.lstrip()
    country_code = ""
    if stripped.startswith("+") or stripped.startswith("00"):
        rest = digits[2:] if stripped.startswith("00") else digits
        country_code = next((cc for cc in COUNTRY_CODES if rest.startswith(cc)), rest[:2])
        country_digits = len(digits) - len(rest) + len(country_code)
    else:
        country_digits = 0
    national = digits[country_digits:]
    keep = country_digits + (2 if national.startswith("0") else 1)
    if country_code:
        region = COUNTRY_CODES.get(country_code, "ZZ")
    elif language == "en":
        region = "GB" if national.startswith("0") else "US"
    else:
        region = COUNTRY[language]
    for _ in range(100):
        new = reshape(original, digits[:keep] + _digits(rng, len(digits) - keep))
        if phone_is_valid(new, region):
            break
    return new


def _iban_like(rng: random.Random, original: str) -> str:
    value = compact(original)
    country = value[:2]
    if country in ("IT", "ES", "GB") and len(value) == {"IT": 27, "ES": 24, "GB": 22}[country]:
        body = bban(rng, country)
    else:
        body = compact(same_shape(rng, value[4:]))
    return reshape(original, country + iban_check_digits(country, body) + body)


def _dni_nie_like(rng: random.Random, original: str) -> str:
    value = compact(original)
    return reshape(original, nie(rng) if value[:1] in ("X", "Y", "Z") else dni(rng))


def _email_like(rng: random.Random, original: str, language: str) -> str:
    new = email(rng, language)
    return new.upper() if original.isupper() else new


def _url_like(rng: random.Random, original: str) -> str:
    new = url(rng)
    if not original.lower().startswith(("http://", "https://")):
        new = new.removeprefix("https://")
        if not original.lower().startswith("www."):
            new = new.removeprefix("www.")
    return new


def _address_like(rng: random.Random, original: str, language: str) -> str:
    """Another address in the original's shape: the street type, the separators, the floor words
    kept; the street's name, the numbers, the postcode, the town and its province drawn (a town
    of the language's list, its postcode and province agreeing with it)."""
    from ml.deid.addresses import address_matches

    matches = address_matches(original, language)
    if not matches:
        return address(rng, language)
    city = rng.choice(CITIES[language])
    if language == "en" and any(m.groupdict().get("zip") for m in matches):
        city = rng.choice(sorted(US_STATE))
    elif language == "en":
        city = rng.choice(sorted(UK_AREA))
    pieces, pos = [], 0
    for m in matches:
        parts = sorted((m.start(g), g, v) for g, v in m.groupdict().items() if v and g != "type")
        for start, group, value in parts:
            end = start + len(value)
            if group == "name":
                new = street_name(rng.choice(STREETS[language]))
                if value.isupper():
                    new = new.upper()
            elif group in ("num", "floor", "unit"):
                new = value
                while new == value and any(c.isdigit() for c in value):
                    new = re.sub(r"\d", lambda d: rng.choice("123456789"), value)
            elif group == "cap":
                new = postcode(rng, language, city)
            elif group == "postcode":
                new = uk_postcode(rng, UK_AREA.get(city))
                new = new if " " in value else new.replace(" ", "")
            elif group == "zip":
                new = postcode(rng, language, city) + ("-" + _digits(rng, 4) if "-" in value else "")
            elif group == "city":
                new = city.upper() if value.isupper() else city
            elif group == "prov":
                new = IT_POSTAL.get(city, ("", "RM"))[1] if language == "it" else city
            else:  # state
                new = US_STATE.get(city, value)
            pieces += [original[pos:start], new]
            pos = end
    pieces.append(original[pos:])
    return "".join(pieces)


def _cf_like(rng: random.Random, original: str, language: str) -> str:
    given, family, female = person(rng, "it")
    return reshape(original, codice_fiscale(rng, family, given, female))


class Surrogates:
    """Deterministic surrogates of one language under one secret (module docstring)."""

    def __init__(self, language: str, secret: bytes):
        if language not in LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
        if not secret:
            raise ValueError("surrogates need a secret key (bytes)")
        self.language = language
        self.secret = bytes(secret)

    def rng(self, patient: str, type_: str, canonical: str) -> random.Random:
        return keyed_random(self.secret, patient, type_, canonical)

    def date_shift(self, patient: str) -> int:
        return date_shift_days(self.secret, patient)

    def name_token(self, patient: str, token: str, family: bool | None = None) -> str:
        """The surrogate of one name token (a canonical token of a known identity, or a mention's
        own token), as the list writes it: a given name of the same gender where the token is a
        given name in the lexicon, else a family name (or as `family` says); never the token."""
        key = normalise(token)
        rng = self.rng(patient, "NAME", key)
        gender = None if family else given_gender(key, self.language)
        if gender is None:
            table = FAMILY[self.language]
        else:
            table = (GIVEN_FEMALE if gender == "f" else GIVEN_MALE)[self.language]
        choice = rng.choice(table)
        while normalise(choice) == key:
            choice = rng.choice(table)
        return choice

    def value(self, type_: str, original: str, patient: str) -> str:
        """The surrogate of a non-name identifier: valid for its type, in the original's shape."""
        canonical = original.casefold() if type_ in ("EMAIL", "URL") else compact(original)
        rng = self.rng(patient, type_, canonical)
        make = {
            "CODICE_FISCALE": lambda: _cf_like(rng, original, self.language),
            "DNI_NIE": lambda: _dni_nie_like(rng, original),
            "NHS_NUMBER": lambda: reshape(original, nhs_number(rng)),
            "SSN": lambda: reshape(original, ssn(rng)),
            "PHONE": lambda: _phone_like(rng, original, self.language),
            "EMAIL": lambda: _email_like(rng, original, self.language),
            "URL": lambda: _url_like(rng, original),
            "IP_ADDRESS": lambda: ip_address(rng, 6 if ":" in original else 4),
            "IBAN": lambda: _iban_like(rng, original),
            "ADDRESS": lambda: _address_like(rng, original, self.language),
        }.get(type_, lambda: same_shape(rng, original))
        for _ in range(20):
            new = make()
            if compact(new) != compact(original) or not compact(original):
                return new
        return new  # a value with nothing to draw (no letters or digits): as it is
