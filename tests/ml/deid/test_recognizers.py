"""Each recognizer with valid and invalid identifiers, per language: an identifier whose
checksum fails is not that identifier (an invalid fiscal code is not a fiscal code)."""

from __future__ import annotations

import re

import pytest
from stdnum.it import codicefiscale

from ml.deid import checks
from ml.deid.detector import Detector
from ml.deid.types import DeidConfig
from tests.ml.deid.conftest import found


def types_of(detector, text):
    return {t for t, _ in found(detector, text)}


# ----------------------------------------------------------------------------- codice fiscale


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_codice_fiscale_valid_and_invalid(detectors, language):
    d = detectors(language)
    assert found(d, "CF: RSSMRA85T10A562S.") == [("CODICE_FISCALE", "RSSMRA85T10A562S")]
    assert found(d, "cf rssmra85t10a562s") == [("CODICE_FISCALE", "rssmra85t10a562s")]
    # the check character is wrong: not a fiscal code
    assert "CODICE_FISCALE" not in types_of(d, "CF: RSSMRA85T10A562T.")
    # a valid check character over an impossible birth date (day 32 of a man): not one either
    bad_day = "RSSMRA85T32A562"
    assert "CODICE_FISCALE" not in types_of(d, "CF " + bad_day + codicefiscale.calc_check_digit(bad_day))


@pytest.mark.parametrize(
    "code",
    [
        "RSSMRA85T10A56NH",  # the last digit of the place code replaced (2 -> N)
        "RSSMRA85T10A5QNR",  # two digits replaced
        "RSSMRAURTMLARQNJ",  # all seven replaced
    ],
)
def test_codice_fiscale_omocodia(detectors, code):
    assert checks.is_valid_codice_fiscale(code)
    assert found(detectors("it"), f"codice fiscale {code} del paziente") == [("CODICE_FISCALE", code)]
    wrong = code[:-1] + ("A" if code[-1] != "A" else "B")
    assert not checks.is_valid_codice_fiscale(wrong)
    assert found(detectors("it"), f"codice fiscale {wrong} del paziente") == []


def test_company_numbers_are_not_personal_fiscal_codes():
    assert not checks.is_valid_codice_fiscale("00743110157")


# ----------------------------------------------------------------------------- DNI / NIE


@pytest.mark.parametrize("language", ["es", "it", "en"])
def test_dni_nie(detectors, language):
    d = detectors(language)
    assert found(d, "DNI 12345678Z") == [("DNI_NIE", "12345678Z")]
    assert found(d, "DNI 12345678-Z") == [("DNI_NIE", "12345678-Z")]
    assert found(d, "NIE X1234567L") == [("DNI_NIE", "X1234567L")]
    assert found(d, "NIE Y-1234567-X") == [("DNI_NIE", "Y-1234567-X")]
    assert found(d, "nie z7654321h") == [("DNI_NIE", "z7654321h")]
    assert "DNI_NIE" not in types_of(d, "DNI 12345678A")  # wrong check letter
    assert "DNI_NIE" not in types_of(d, "NIE X1234567A")


# ----------------------------------------------------------------------------- NHS, SSN


def test_nhs_number_mod_11(detectors):
    d = detectors("en")
    for text in ("NHS 943 476 5919", "NHS 943-476-5919", "NHS 9434765919"):
        assert found(d, text) == [("NHS_NUMBER", text[4:])]
    assert "NHS_NUMBER" not in types_of(d, "NHS 943 476 5918")  # check digit off by one
    assert checks.is_valid_nhs("4010232137") and not checks.is_valid_nhs("4010232138")


def test_ssn(detectors):
    d = detectors("en")
    assert found(d, "SSN 536-22-8726.") == [("SSN", "536-22-8726")]
    assert found(d, "social security number 536228726") == [("SSN", "536228726")]
    for bad in ("666-22-8726", "000-22-8726", "536-00-8726", "536-22-0000", "900-22-8726"):
        assert "SSN" not in types_of(d, f"SSN {bad}"), bad
    assert "SSN" not in types_of(d, "ref 536228726")  # a bare nine digits without the word


# ----------------------------------------------------------------------------- IBAN


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_iban_mod_97(detectors, language):
    d = detectors(language)
    for iban in ("IT60X0542811101000000123456", "IT60 X054 2811 1010 0000 0123 456", "ES9121000418450200051332",
                 "GB82 WEST 1234 5698 7654 32"):  # fmt: skip
        assert found(d, f"IBAN {iban} PER IL RIMBORSO") == [("IBAN", iban)], iban
    assert "IBAN" not in types_of(d, "IBAN IT60X0542811101000000123457")
    assert "IBAN" not in types_of(d, "IBAN GB83WEST12345698765432")


# ----------------------------------------------------------------------------- phones


@pytest.mark.parametrize(
    "phone",
    [
        "333 1234567",
        "333.123.4567",
        "333-123-4567",
        "3331234567",
        "06 1234 5678",
        "06-12345678",
        "(06) 12345678",
        "02/1234567",
        "0471 123456",
        "+39 333 1234567",
        "+39.333.123.4567",
        "0039 02 12345678",
        "+39 06 1234 5678",
    ],
)
def test_italian_phones(detectors, phone):
    assert found(detectors("it"), f"Tel. {phone}, chiamare dopo le 18.") == [("PHONE", phone)]


def test_not_italian_phones(detectors):
    d = detectors("it")
    assert "PHONE" not in types_of(d, "PA 120/80, FC 72, Hb 12.5, PLT 250000")
    assert "PHONE" not in types_of(d, "codice 123 45")
    assert found(d, "il 03/03/2024") == [("DATE", "03/03/2024")]


def test_phones_in_spanish_and_english(detectors):
    assert found(detectors("es"), "Tel. 612 345 678") == [("PHONE", "612 345 678")]
    assert found(detectors("es"), "Tel. +34 912 345 678") == [("PHONE", "+34 912 345 678")]
    assert found(detectors("en"), "call 020 7946 0958") == [("PHONE", "020 7946 0958")]
    assert found(detectors("en"), "call (212) 555-0123") == [("PHONE", "(212) 555-0123")]


# ----------------------------------------------------------------------------- e-mail, URL, IP


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_email_url_ip(detectors, language):
    d = detectors(language)
    assert found(d, "scrivere a mario.rossi@asl.example.it.") == [("EMAIL", "mario.rossi@asl.example.it")]
    assert found(d, "vedi https://referti.example.org/p?id=12.") == [("URL", "https://referti.example.org/p?id=12")]
    assert found(d, "vedi www.ospedale.it, poi") == [("URL", "www.ospedale.it")]
    assert found(d, "portale ospedale.it/referti.") == [("URL", "ospedale.it/referti")]
    assert found(d, "host 192.168.1.10.") == [("IP_ADDRESS", "192.168.1.10")]
    assert found(d, "host 2001:db8::8a2e:370:7334 e ::1") == [
        ("IP_ADDRESS", "2001:db8::8a2e:370:7334"),
        ("IP_ADDRESS", "::1"),
    ]
    assert "IP_ADDRESS" not in types_of(d, "host 999.168.1.10")
    assert "IP_ADDRESS" not in types_of(d, "alle 10:30:00")
    assert "URL" not in types_of(d, "p.es. e.g. i.e.")
    assert found(d, "a@b") == []


# ----------------------------------------------------------------------------- ages


@pytest.mark.parametrize(
    "language,text,age",
    [
        ("it", "donna di 92 anni", "92"),
        ("it", "età 95, autonoma", "95"),
        ("it", "età: 91", "91"),
        ("it", "paziente 95enne", "95"),
        ("es", "varón de 93 años", "93"),
        ("es", "edad 93", "93"),
        ("es", "Edad: 101", "101"),
        ("en", "a 95-year-old woman", "95"),
        ("en", "95 year old man", "95"),
        ("en", "aged 91", "91"),
        ("en", "91 yo male", "91"),
    ],
)
def test_ages_over_89(detectors, language, text, age):
    assert found(detectors(language), text) == [("AGE", age)]


@pytest.mark.parametrize(
    "language,text",
    [("it", "donna di 89 anni"), ("it", "età 45"), ("es", "88 años"), ("en", "a 65-year-old"), ("it", "da 2 anni")],
)
def test_ages_up_to_89_are_kept(detectors, language, text):
    assert "AGE" not in types_of(detectors(language), text)


# ----------------------------------------------------------------------------- dates


@pytest.mark.parametrize(
    "language,text,date",
    [
        ("it", "ricoverato il 3 marzo 2024.", "3 marzo 2024"),
        ("it", "nato il 03/03/24", "03/03/24"),
        ("es", "ingresó el 12 de enero de 2023", "12 de enero de 2023"),
        ("en", "seen on March 3, 2024", "March 3, 2024"),
        ("en", "seen on 3rd March 2024", "3rd March 2024"),
    ],
)
def test_dates(detectors, language, text, date):
    assert found(detectors(language), text) == [("DATE", date)]


# ----------------------------------------------------------------------------- record patterns


def test_record_patterns():
    d = Detector(DeidConfig(language="it", record_patterns=(r"\bRIC-\d{6}\b", r"\bACC\d{8}\b")))
    assert found(d, "cartella RIC-000123, accesso ACC20240001") == [
        ("RECORD_NUMBER", "RIC-000123"),
        ("RECORD_NUMBER", "ACC20240001"),
    ]
    assert found(d, "cartella ric-000123") == []  # as written: case-sensitive unless (?i)


def test_an_invalid_record_pattern_is_refused_by_name():
    bad = r"\bRIC-(\d{6}\b"
    with pytest.raises(ValueError, match=re.escape(f"record pattern '{bad}' is not a valid regular expression")):
        Detector(DeidConfig(language="it", record_patterns=(r"\bRIC-\d{6}\b", bad)))
