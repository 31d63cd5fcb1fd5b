"""Postal addresses (ml.deid.addresses) per language: the shapes found, whole, and the clinical
phrases that share their words and must never be addresses ("via orale", "Dr. House")."""

from __future__ import annotations

import random
import re

import pytest

from ml.deid import surrogates as s
from ml.deid.addresses import find_addresses
from ml.deid.detector import Detector
from ml.deid.replacing import Replacer
from ml.deid.types import TYPES, DeidConfig
from tests.ml.deid.conftest import found

SECRET = b"a test secret of thirty-two bytes"
UK_POSTCODE = re.compile(
    r"(?:[A-PR-UWYZ](?:[0-9]{1,2}|[A-HK-Y][0-9]{1,2}|[0-9][A-HJKPSTUW]|[A-HK-Y][0-9][ABEHMNPRVWXY]))"
    r" [0-9][ABD-HJLNP-UW-Z]{2}"
)


def addresses(text, language):
    return [text[a:b] for a, b in find_addresses(text, language)]


def test_address_is_a_type():
    assert "ADDRESS" in TYPES


# ----------------------------------------------------------------------------- Italian


@pytest.mark.parametrize(
    "text, address",
    [
        ("Residente in Via Garibaldi 12/B, 20121 Milano (MI).", "Via Garibaldi 12/B, 20121 Milano (MI)"),
        ("abita in V.le Europa n. 5, Torino.", "V.le Europa n. 5, Torino"),
        ("P.zza della Repubblica, 3 - 00185 Roma", "P.zza della Repubblica, 3 - 00185 Roma"),
        ("domicilio in Via dei Mille 4.", "Via dei Mille 4"),
        ("C.so Vittorio Emanuele II 120, Napoli", "C.so Vittorio Emanuele II 120, Napoli"),
        ("Via 4 Novembre 12, Bari", "Via 4 Novembre 12, Bari"),
        ("Località Sant'Anna 3", "Località Sant'Anna 3"),
        ("Largo Augusto 7a", "Largo Augusto 7a"),
        ("Vicolo Stretto 2 bis", "Vicolo Stretto 2 bis"),
        ("incidente in Via Roma. Il paziente", "Via Roma"),
        ("VIA ROMA 12", "VIA ROMA 12"),
        ("Via S. Francesco 3", "Via S. Francesco 3"),
        ("recapito: 20121 Milano (MI)", "20121 Milano (MI)"),
    ],
)
def test_italian_addresses(detectors, text, address):
    assert addresses(text, "it") == [address]
    assert ("ADDRESS", address) in found(detectors("it"), text)


@pytest.mark.parametrize(
    "text",
    [
        "Paracetamolo 1 g somministrato per via orale ogni 8 ore.",
        "Furosemide 20 mg via e.v. in bolo.",
        "Via orale: sospesa.",
        "VIA ORALE",
        "Via E.V.",
        "Via di accesso venoso periferico.",
        "Nutrizione via PEG, drenaggio via PTC.",
        "Via Biliare principale dilatata.",
        "VIA ROMA",  # a street type in capitals wants its number
        "Leucociti 12500 Neutrofili 80%",
        "Piazza",
        "via Roma 12",  # 'via' in lowercase is never a street type
    ],
)
def test_italian_clinical_phrases_are_not_addresses(detectors, text):
    assert addresses(text, "it") == []
    assert "ADDRESS" not in {t for t, _ in found(detectors("it"), text)}


# ----------------------------------------------------------------------------- Spanish


@pytest.mark.parametrize(
    "text, address",
    [
        ("Domicilio: C/ Mayor, 5, 3º B, 28013 Madrid.", "C/ Mayor, 5, 3º B, 28013 Madrid"),
        ("Calle de Alcalá nº 45 5º 2ª", "Calle de Alcalá nº 45 5º 2ª"),
        ("Avda. de la Constitución 12, 41001 Sevilla", "Avda. de la Constitución 12, 41001 Sevilla"),
        ("Vive en C. Mayor 5 con su hija.", "C. Mayor 5"),
        ("Camino de los Olivos 12", "Camino de los Olivos 12"),
        ("Plaza de España s/n", "Plaza de España s/n"),
        ("Pza. Mayor 3, Salamanca.", "Pza. Mayor 3, Salamanca"),
        ("Vive en Calle Dr. Fleming 12 con su hija.", "Calle Dr. Fleming 12"),
        ("CP: 28001 Madrid (Madrid)", "28001 Madrid (Madrid)"),
    ],
)
def test_spanish_addresses(detectors, text, address):
    assert addresses(text, "es") == [address]
    assert ("ADDRESS", address) in found(detectors("es"), text)


@pytest.mark.parametrize(
    "text",
    [
        "Se administra paracetamol por vía oral.",
        "Valorada por la Dra. C. Martínez en consulta.",  # an initial, not 'Calle'
        "Peregrino del Camino de Santiago, acude por ampollas.",  # a weak type wants a number
        "Ronda de visitas sin incidencias.",
        "Hemoglobina 13,2 g/dL y leucocitos 12500 Neutrófilos 80%.",
        "la calle mayor",
    ],
)
def test_spanish_clinical_phrases_are_not_addresses(detectors, text):
    assert addresses(text, "es") == []
    assert "ADDRESS" not in {t for t, _ in found(detectors("es"), text)}


# ----------------------------------------------------------------------------- English


@pytest.mark.parametrize(
    "text, address",
    [
        ("Address: 221B Baker Street, London, NW1 6XE.", "221B Baker Street, London, NW1 6XE"),
        ("Flat 3, 14 Station Road, Leeds LS1 4DY", "Flat 3, 14 Station Road, Leeds LS1 4DY"),
        ("Lives at 165 Springfield Road, Nottingham with family.", "165 Springfield Road, Nottingham"),
        ("Moved to 12 Mulberry Dr, Leeds.", "12 Mulberry Dr, Leeds"),
        ("Found on Baker Street by a passer-by.", "Baker Street"),
        ("postcode SW1A 1AA", "SW1A 1AA"),
        ("Springfield, IL 62704", "Springfield, IL 62704"),
        ("1600 Pennsylvania Avenue, Washington, DC 20500", "1600 Pennsylvania Avenue, Washington, DC 20500"),
        ("At 12 Mill Lane, the patient fell.", "12 Mill Lane"),
    ],
)
def test_english_addresses(detectors, text, address):
    assert addresses(text, "en") == [address]
    assert ("ADDRESS", address) in found(detectors("en"), text)


@pytest.mark.parametrize(
    "text",
    [
        "Dr. House reviewed the films.",
        "Transferred to St. Thomas' Hospital.",  # 'St.' before a name is Saint: no address
        "Seen 12 March Dr Jones, cardiology.",  # a date and a doctor
        "Road traffic accident at speed.",
        "High Velocity Road Traffic Accident.",
        "The Street team visited.",
        "T2 N0 M0 adenocarcinoma, CD4 350.",
        "given 5 Amp",
        "Close follow-up with the GP.",
        "IL-6 12.5 pg/mL",  # a state abbreviation needs a five-digit ZIP after it
    ],
)
def test_english_clinical_phrases_are_not_addresses(detectors, text):
    assert addresses(text, "en") == []
    assert "ADDRESS" not in {t for t, _ in found(detectors("en"), text)}


def test_an_address_beats_a_titled_name_inside_it(detectors):
    text = "Vive en Calle Dr. Fleming 12 con la Dra. C. Martínez."
    assert found(detectors("es"), text) == [("ADDRESS", "Calle Dr. Fleming 12"), ("NAME", "C. Martínez")]


# ----------------------------------------------------------------------------- surrogates and tags


@pytest.mark.parametrize(
    "language, text, street_type",
    [
        ("it", "Residente in Via Garibaldi 12/B, 20121 Milano (MI).", "Via "),
        ("it", "Abita in C.so Italia n. 7, Torino.", "C.so "),
        ("es", "Domicilio: C/ Mayor, 5, 3º B, 28013 Madrid.", "C/ "),
        ("es", "Domicilio: Avda. de América 12, Granada.", "Avda. "),
        ("en", "Address: Flat 3, 14 Station Road, Leeds LS1 4DY.", " Road"),
        ("en", "Address: 1600 Pennsylvania Avenue, Washington, DC 20500.", " Avenue"),
    ],
)
def test_address_surrogates_keep_the_type_and_are_addresses(detectors, language, text, street_type):
    d = detectors(language)
    findings = d.find(text)
    (original,) = [text[f.start : f.end] for f in findings if f.type == "ADDRESS"]
    replacer = Replacer("surrogates", language, SECRET)
    done = replacer.replace(text, findings, patient="P1")
    (span,) = [r for r in done.spans if r.type == "ADDRESS"]
    new = done.text[span.new_start : span.new_end]
    assert new != original and street_type in new
    assert addresses(new, language) == [new]  # a surrogate is an address of the language, whole
    # the same in another note of the patient, another for another patient
    again = replacer.replace("Nota 2. " + text, d.find("Nota 2. " + text), patient="P1")
    assert new in again.text
    other = replacer.replace(text, findings, patient="P2").text
    assert new not in other
    assert Replacer("tags", language).replace(text, findings).text.count("[ADDRESS]") == 1


def test_surrogate_postcodes_are_valid_shaped():
    rng = random.Random(0)
    for _ in range(200):
        assert UK_POSTCODE.fullmatch(s.uk_postcode(rng))
        city = rng.choice(s.CITIES["it"])
        cap = s.postcode(rng, "it", city)
        assert re.fullmatch(r"\d{5}", cap) and cap.startswith(s.IT_POSTAL[city][0])
        city = rng.choice(s.CITIES["es"])
        code = s.postcode(rng, "es", city)
        assert re.fullmatch(r"\d{5}", code) and 1 <= int(code[:2]) <= 52


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_generated_addresses_are_found_whole(language):
    rng = random.Random(1)
    for _ in range(300):
        value = s.address(rng, language)
        assert addresses(f"Domicilio: {value}.", language) == [value], value


def test_a_detector_with_a_known_street_surname_keeps_the_address_whole():
    d = Detector(DeidConfig(language="it", known_fields=("patient_name",)))
    text = "Abita in Via Garibaldi 12, Milano."
    findings = d.find(text, known={"patient_name": "Mario Rossi"})
    assert [(f.type, text[f.start : f.end]) for f in findings] == [("ADDRESS", "Via Garibaldi 12, Milano")]
