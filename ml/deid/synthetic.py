"""Synthetic identifiers injected into real notes, with their gold positions (the de-identification
benchmark's ground truth).

    note = inject(base_text, "it", random.Random(7), patient=3)
    note.text, note.metadata          # the note with identifiers, its metadata (patient_name, mrn, patient_id)
    note.gold                         # [Gold(type, start, end, kind, value), ...]

Every note gets a synthetic patient (a surrogate person of ml.deid.surrogates: given and family
name of the language, gender, birth date, codice fiscale / DNI / NHS number, phone, e-mail, record
number) whose name and record number are also its metadata, as a hospital's export carries them.
Sentences in the note's language carry the identifiers: a header before the note's text, a few
sentences between its sentences, and a signature after it:

- the patient's name in the variants clinicians write ("ROSSI Mario", "Mario Rossi", "M. Rossi",
  "Rossi M.", "rossi mario", "Rossi, Mario", the family name after a title, without accents):
  gold kind "metadata";
- other people's names after a title or role ("Dott.", "Dott.ssa", "Sig.ra", "Dr.", "Dra.",
  "Mrs."): gold kind "titled"; the gold span is the name, without the title;
- codice fiscale (it), DNI and NIE (es), NHS number and US SSN (en), all with valid checks;
  phone numbers of the country, e-mail, URL, IP address, IBAN, dates in the language's shapes,
  ages over 89, record numbers (the metadata's one, and the project's pattern `RECORD_PATTERNS`);
- an address in the language's shapes (ml.deid.surrogates.address: a street with its type and
  civic number, a floor in Spanish, a postcode with its town and province, a UK postcode, a US
  state and ZIP, or a postcode and town alone): type "ADDRESS";
- and a sentence of clinical eponyms that must never be replaced (`ALLOW_TERMS`).

Offsets are half-open [start, end) into the final text; `Gold.value` is the injected value (all
synthetic). Deterministic for a given rng.
"""

from __future__ import annotations

import random
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, timedelta

from ml.deid import surrogates as s

# the record-number patterns a project would set (DeidConfig.record_patterns), per language
RECORD_PATTERNS = {"it": (r"\bRIC-\d{6}\b",), "es": (r"\bNHC-\d{7}\b",), "en": (r"\bRX\d{7}\b",)}

# clinical terms named after people, in the benchmark's allow-list; each appears in the sentence of
# its language below and must never be replaced
ALLOW_TERMS = ("Parkinson", "Crohn", "Hodgkin", "Babinski", "Alzheimer", "Valsalva", "Glasgow", "Lasègue")

MONTHS = {
    "it": "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre".split(),
    "es": "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre".split(),
    "en": "January February March April May June July August September October November December".split(),
}

EMAIL_DOMAINS = {
    "it": ("gmail.com", "libero.it", "virgilio.it", "ospedale.example.it"),
    "es": ("gmail.com", "hotmail.es", "yahoo.es", "hospital.example.es"),
    "en": ("gmail.com", "outlook.com", "nhs.net", "hospital.example.org"),
}

# {slot} is an identifier (its type and kind below); {o}, {a}, {title}, {Title} agree with the
# patient's gender. Headers open a note, middles go between its sentences, signatures close it.
TEMPLATES = {
    "it": {
        "header": (
            "Paziente: {name}, C.F. {cf}, nat{o} il {birth}.",
            "{name}, nat{o} il {birth}, cartella n. {mrn}.",
            "Cartella clinica {mrn} - paziente {name} (C.F. {cf}).",
        ),
        "middle": (
            "Recapito telefonico: {phone}.",
            "Si contatta la figlia al numero {phone}.",
            "Visitat{o} dal Dott. {titled} in data {date}.",
            "Consulenza della Dott.ssa {titled}: nulla di acuto.",
            "Riferisce la Sig.ra {titled}, vicina di casa, che {art} paziente era confus{o}.",
            "{name} riferisce dolore toracico dal {date}.",
            "{Title} {surname} è stat{o} informat{o} della diagnosi.",
            "Paziente di {age} anni, vive con i figli.",
            "Indirizzo e-mail per il referto: {email}.",
            "Residente in {address}.",
            "Soccorso dal 118 al domicilio in {address}.",
            "Accesso al fascicolo: {url} da {ip}.",
            "Rimborso del ticket su IBAN {iban}.",
            "Controllo ambulatoriale fissato per il {date}.",
            "Anamnesi: morbo di Parkinson, pregressa malattia di Crohn; segno di Babinski negativo.",
            "Manovra di Valsalva inefficace; Glasgow 15, Lasègue negativo.",
        ),
        "signature": ("Firmato: Dott. {titled}", "Il medico di turno, Dott.ssa {titled}", "Dott. {titled} - {date}"),
    },
    "es": {
        "header": (
            "Paciente: {name}, DNI {dni}, fecha de nacimiento {birth}.",
            "{name}, nacid{o} el {birth}, historia clínica {mrn}.",
            "Historia clínica {mrn} - paciente {name} (DNI {dni}).",
        ),
        "middle": (
            "Teléfono de contacto: {phone}.",
            "Se avisa a su hija al {phone}.",
            "Valorad{o} por el Dr. {titled} el {date}.",
            "Interconsulta con la Dra. {titled}: sin hallazgos agudos.",
            "Acompañad{o} por la Sra. {titled}, vecina, que refiere confusión.",
            "{Art} paciente {name} refiere dolor abdominal desde el {date}.",
            "Se informa {title} {surname} del diagnóstico.",
            "Paciente de {age} años, vive sol{o}.",
            "Correo electrónico: {email}.",
            "Domicilio: {address}.",
            "Vive en {address} con su pareja.",
            "Acceso al portal: {url} desde {ip}.",
            "Cuenta para el reembolso: IBAN {iban}.",
            "NIE del cuidador: {nie}.",
            "Revisión en consultas externas el {date}.",
            "Antecedentes: enfermedad de Parkinson, enfermedad de Crohn, linfoma de Hodgkin; Babinski negativo.",
            "Maniobra de Valsalva sin efecto; Glasgow 15, signo de Lasègue negativo.",
        ),
        "signature": ("Firmado: Dr. {titled}", "La médica de guardia, Dra. {titled}", "Dr. {titled}, {date}"),
    },
    "en": {
        "header": (
            "Patient: {name}, NHS number {nhs}, DOB {birth}.",
            "{name}, born {birth}, MRN {mrn}.",
            "MRN {mrn} - patient {name} (NHS no. {nhs}).",
        ),
        "middle": (
            "Contact number: {phone}.",
            "Daughter contacted on {phone}.",
            "Seen by Dr. {titled} on {date}.",
            "Discussed with Dr {titled}, cardiology registrar.",
            "Collateral history from Mrs. {titled}, a neighbour.",
            "{Title} {surname} reports chest pain since {date}.",
            "{name} was told the diagnosis.",
            "A {age}-year-old who lives alone.",
            "Email: {email}.",
            "Address: {address}.",
            "Lives at {address} with family.",
            "Patient portal {url} accessed from {ip}.",
            "SSN {ssn} on file for US insurance.",
            "Refund to IBAN {iban}.",
            "Follow-up clinic on {date}.",
            "Background: Parkinson's disease, Crohn's disease, Hodgkin lymphoma in remission; Babinski negative.",
            "Valsalva manoeuvre unsuccessful; Glasgow 15, Lasègue sign negative.",
        ),
        "signature": ("Signed: Dr. {titled}", "Dr {titled}, emergency medicine", "Dr. {titled} - {date}"),
    },
}

# slot -> (gold type, gold kind)
SLOTS = {
    "name": ("NAME", "metadata"),
    "surname": ("NAME", "metadata"),
    "titled": ("NAME", "titled"),
    "cf": ("CODICE_FISCALE", ""),
    "dni": ("DNI_NIE", ""),
    "nie": ("DNI_NIE", ""),
    "nhs": ("NHS_NUMBER", ""),
    "ssn": ("SSN", ""),
    "phone": ("PHONE", ""),
    "email": ("EMAIL", ""),
    "url": ("URL", ""),
    "ip": ("IP_ADDRESS", ""),
    "iban": ("IBAN", ""),
    "birth": ("DATE", ""),
    "date": ("DATE", ""),
    "age": ("AGE", ""),
    "mrn": ("RECORD_NUMBER", "metadata"),
    "address": ("ADDRESS", ""),
}
NOT_DETECTED: tuple[str, ...] = ()  # injected types no recognizer finds (none since ADDRESS has one)

# Spanish filler when no Spanish notes are at hand (CodiEsp absent): a short clinical course.
SPANISH_FILLER = (
    "Acude a urgencias por dolor torácico opresivo de dos horas de evolución.",
    "Constantes: TA 135/80 mmHg, FC 98 lpm, SatO2 96% basal, afebril.",
    "Antecedentes de hipertensión arterial y diabetes mellitus tipo 2 en tratamiento con metformina.",
    "Exploración física: consciente y orientado, eupneico, auscultación cardiaca rítmica sin soplos.",
    "ECG: ritmo sinusal sin alteraciones agudas de la repolarización.",
    "Analítica: troponina negativa, hemoglobina 13,2 g/dL, creatinina 0,9 mg/dL.",
    "Se administra paracetamol intravenoso con mejoría del dolor.",
    "Se decide alta con control por su médico de atención primaria.",
)


@dataclass(frozen=True)
class Gold:
    type: str
    start: int
    end: int
    kind: str = ""  # NAME: "metadata" or "titled"; RECORD_NUMBER: "metadata"
    value: str = field(default="", repr=False)

    @property
    def key(self) -> str:
        """How the benchmark reports it: "NAME:metadata", "NAME:titled", or the type."""
        return f"{self.type}:{self.kind}" if self.type == "NAME" else self.type


@dataclass
class InjectedNote:
    id: str
    language: str
    text: str
    metadata: dict
    gold: list[Gold]
    allow_spans: list[tuple[int, int]]  # where ALLOW_TERMS occur in the text
    base_spans: list[tuple[int, int]]  # where the original note's text is, in pieces, in order


@dataclass
class _Person:
    given: str
    family: str
    female: bool
    birth: date


def _without_accents(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", name) if c.isascii())


def name_variant(rng: random.Random, given: str, family: str, language: str) -> str:
    """The patient's name as a note may write it."""
    variants = [
        f"{family.upper()} {given}",
        f"{given} {family}",
        f"{given[0]}. {family}",
        f"{family} {given[0]}.",
        f"{family.lower()} {given.lower()}",
        f"{family}, {given}",
        f"{family.upper()} {given.upper()}",
        f"{family} {given}",
    ]
    value = rng.choice(variants)
    if rng.random() < 0.15 and _without_accents(value) != value:
        value = _without_accents(value)
    return value


def render_date(rng: random.Random, value: date, language: str) -> str:
    """A date in one of the shapes notes of the language write."""
    d, m, y = value.day, value.month, value.year
    month = MONTHS[language][m - 1]
    shapes = [f"{d:02d}/{m:02d}/{y}", f"{d}/{m}/{y}", f"{d:02d}/{m:02d}/{y % 100:02d}", f"{y}-{m:02d}-{d:02d}"]
    if language == "it":
        shapes += [f"{d} {month} {y}", f"{d:02d}.{m:02d}.{y}", f"{d} {month[:3]} {y}"]
    elif language == "es":
        shapes += [f"{d} de {month} de {y}", f"{d}-{m}-{y}", f"{d} {month} {y}"]
    else:
        suffix = "th" if 11 <= d <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
        shapes += [f"{d} {month} {y}", f"{month} {d}, {y}", f"{d}{suffix} {month} {y}", f"{d}-{month[:3]}-{y}"]
    return rng.choice(shapes)


def _record_number(rng: random.Random, language: str) -> str:
    digits = {"it": 6, "es": 7, "en": 7}[language]
    prefix = {"it": "RIC-", "es": "NHC-", "en": "RX"}[language]
    return prefix + "".join(rng.choice("0123456789") for _ in range(digits))


def _email(rng: random.Random, person: _Person, language: str) -> str:
    given, family = (re.sub(r"[^a-z]", "", s.normalise(x)) for x in (person.given, person.family))
    user = rng.choice([f"{given}.{family}", f"{given[0]}{family}", f"{family}{person.birth.year % 100:02d}"])
    return f"{user}@{rng.choice(EMAIL_DOMAINS[language])}"


def _url(rng: random.Random, language: str) -> str:
    host = {"it": "fse.regione.example.it", "es": "portal.salud.example.es", "en": "portal.nhs.example.uk"}[language]
    path = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(8))
    return rng.choice([f"https://{host}/p/{path}", f"www.{host}/{path}", f"http://{host}/referti?id={path}"])


def _ip(rng: random.Random) -> str:
    return rng.choice(
        [
            f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            f"172.{rng.randrange(16, 32)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
        ]
    )


def _iban(rng: random.Random, language: str) -> str:
    value = s.iban(rng, rng.choice({"it": ["IT"], "es": ["ES"], "en": ["GB", "GB", "IT", "ES"]}[language]))
    return s.group(value) if rng.random() < 0.6 else value


def _id_number(rng: random.Random, compact: str) -> str:
    """A DNI or NIE as written: mostly compact, sometimes with a hyphen before the letter."""
    return compact if rng.random() < 0.75 else f"{compact[:-1]}-{compact[-1]}"


def _titled(rng: random.Random, language: str) -> str:
    given, family, _ = s.person(rng, language)
    return rng.choice([family, f"{given} {family}", family, f"{given[0]}. {family}"])


class _Filler:
    """The value of each slot for one note's patient."""

    def __init__(self, rng: random.Random, language: str, person: _Person, mrn: str, seen: date):
        self.rng, self.language, self.person, self.mrn, self.seen = rng, language, person, mrn, seen

    def value(self, slot: str) -> str:
        rng, lang, p = self.rng, self.language, self.person
        if slot == "name":
            return name_variant(rng, p.given, p.family, lang)
        if slot == "surname":
            return p.family.upper() if rng.random() < 0.2 else p.family
        if slot == "titled":
            return _titled(rng, lang)
        if slot == "cf":
            return s.codice_fiscale(rng, p.family, p.given, p.female)
        if slot == "dni":
            return _id_number(rng, s.dni(rng))
        if slot == "nie":
            return _id_number(rng, s.nie(rng))
        if slot == "nhs":
            value = s.nhs_number(rng)
            return f"{value[:3]} {value[3:6]} {value[6:]}" if rng.random() < 0.6 else value
        if slot == "ssn":
            value = s.ssn(rng)
            return f"{value[:3]}-{value[3:5]}-{value[5:]}"
        if slot == "phone":
            return s.phone(rng, {"it": "IT", "es": "ES"}.get(lang) or rng.choice(["GB", "US"]))
        if slot == "email":
            return _email(rng, p, lang)
        if slot == "url":
            return _url(rng, lang)
        if slot == "ip":
            return _ip(rng)
        if slot == "iban":
            return _iban(rng, lang)
        if slot == "birth":
            return render_date(rng, p.birth, lang)
        if slot == "date":
            return render_date(rng, self.seen + timedelta(days=rng.randrange(-400, 60)), lang)
        if slot == "age":
            return str(rng.randrange(90, 104))
        if slot == "mrn":
            return self.mrn
        if slot == "address":
            return s.address(rng, lang)
        raise KeyError(slot)


_SLOT = re.compile(r"\{(\w+)\}")
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def _words(person: _Person, language: str) -> dict[str, str]:
    """The gender-agreeing words of the templates."""
    f = person.female
    if language == "it":
        return {"o": "a" if f else "o", "art": "la" if f else "il", "Title": "La Sig.ra" if f else "Il Sig."}
    if language == "es":
        return {"o": "a" if f else "o", "Art": "La" if f else "El", "title": "a la Sra." if f else "al Sr."}
    return {"Title": "Mrs." if f else "Mr."}


def _sentence(template: str, filler: _Filler, words: dict[str, str]) -> tuple[str, list[Gold]]:
    """One template filled: its text and gold spans relative to its start."""
    out, gold, pos = [], [], 0
    length = 0
    for match in _SLOT.finditer(template):
        literal = template[pos : match.start()]
        out.append(literal)
        length += len(literal)
        slot = match.group(1)
        if slot in words:
            value = words[slot]
        else:
            value = filler.value(slot)
            type_, kind = SLOTS[slot]
            gold.append(Gold(type_, length, length + len(value), kind, value))
        out.append(value)
        length += len(value)
        pos = match.end()
    out.append(template[pos:])
    return "".join(out), gold


def inject(
    base: str,
    language: str,
    rng: random.Random,
    patient: int | str = 0,
    *,
    middles: tuple[int, int] = (3, 6),
    note_id: str = "",
) -> InjectedNote:
    """`base` (a real note) with a synthetic patient's identifiers in sentences of `language`:
    a header, `middles` (min, max) sentences between its sentences, a signature."""
    if language not in TEMPLATES:
        raise ValueError(f"language must be one of {', '.join(TEMPLATES)}, not {language!r}")
    given, family, female = s.person(rng, language)
    born = date(1925, 1, 1) + timedelta(days=rng.randrange(365 * 80))
    person = _Person(given, family, female, born)
    mrn = _record_number(rng, language)
    seen = date(2019, 1, 1) + timedelta(days=rng.randrange(365 * 5))
    filler = _Filler(rng, language, person, mrn, seen)
    words = _words(person, language)
    templates = TEMPLATES[language]

    # the base note stays as it is: sentences go in after its sentence ends (". ", ".\n")
    base = base.strip()
    ends = [m.end() for m in _SENTENCE_END.finditer(base)]
    chosen = rng.sample(templates["middle"], rng.randint(*middles))
    at = sorted(rng.choice(ends) if ends else len(base) for _ in chosen)
    # (text, kind): "t" a template, "b" a piece of the base note, "" a separator
    pieces: list[tuple[str, str]] = [(rng.choice(templates["header"]), "t"), ("\n", "")]
    pos = 0
    for template, where in zip(chosen, at):
        pieces += [(base[pos:where], "b"), (" ", ""), (template, "t")]
        pos = where
    pieces += [(base[pos:], "b"), ("\n", ""), (rng.choice(templates["signature"]), "t")]

    text_parts, gold, base_spans, length = [], [], [], 0
    for piece, kind in pieces:
        if kind == "t":
            written, spans = _sentence(piece, filler, words)
            gold += [Gold(g.type, g.start + length, g.end + length, g.kind, g.value) for g in spans]
        else:
            written = piece
            if kind == "b" and piece:
                base_spans.append((length, length + len(piece)))
        text_parts.append(written)
        length += len(written)
    text = "".join(text_parts)
    for g in gold:
        assert text[g.start : g.end] == g.value, (g, text[g.start : g.end])
    allow = [
        m.span() for term in ALLOW_TERMS for m in re.finditer(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE)
    ]
    metadata = {
        "patient_name": f"{given} {family}" if rng.random() < 0.7 else f"{family.upper()} {given.upper()}",
        "mrn": mrn,
        "patient_id": f"P{patient}",
    }
    return InjectedNote(note_id, language, text, metadata, gold, sorted(allow), base_spans)
