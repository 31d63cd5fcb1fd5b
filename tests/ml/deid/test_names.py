"""Names: known identities in their variants (case, accents, order, initials, the surname alone)
with Finding.canonical, names after titles and roles in it/es/en, the allow-list and deny-list."""

from __future__ import annotations

import unicodedata

import pytest

from ml.deid.detector import Detector
from ml.deid.names import find_titled_names, fold_with_map, split_name
from ml.deid.types import DeidConfig
from tests.ml.deid.conftest import found

# ----------------------------------------------------------------------------- known identities


@pytest.mark.parametrize(
    "value,language,given,surname",
    [
        ("Mario Rossi", "it", ["Mario"], ["Rossi"]),
        ("ROSSI Mario", "it", ["Mario"], ["ROSSI"]),
        ("Rossi, Mario", "it", ["Mario"], ["Rossi"]),
        ("ROSSI MARIO", "it", ["MARIO"], ["ROSSI"]),  # a registry's SURNAME GIVEN
        ("Maria Grazia De Luca", "it", ["Maria", "Grazia"], ["De", "Luca"]),
        ("José García López", "es", ["José"], ["García", "López"]),
        ("John Smith", "en", ["John"], ["Smith"]),
    ],
)
def test_split_name(value, language, given, surname):
    assert split_name(value, language)[:2] == (given, surname)


KNOWN = {"patient_name": "Mario Rossi"}


@pytest.mark.parametrize(
    "variant",
    [
        "Mario Rossi",
        "ROSSI Mario",
        "ROSSI MARIO",
        "mario rossi",
        "Rossi Mario",
        "Rossi, Mario",
        "M. Rossi",
        "M.Rossi",
        "Rossi M.",
        "Rossi",
        "ROSSI",
        "Màrio Rossì",  # accents the metadata does not have
    ],
)
def test_known_name_variants(detectors, variant):
    text = f"Visita: {variant} riferisce dolore."
    findings = detectors("it").find(text, known=KNOWN)
    assert [(f.type, text[f.start : f.end]) for f in findings] == [("NAME", variant)]
    assert findings[0].canonical == "mario rossi"
    assert findings[0].recognizer == "KnownIdentityRecognizer"


def test_accents_in_the_metadata_and_decomposed_text(detectors):
    d = detectors("it")
    known = {"patient_name": "Niccolò Bernardèschi"}
    text = "NICCOLO BERNARDESCHI e poi Bernardeschi."
    assert found(d, text, known) == [("NAME", "NICCOLO BERNARDESCHI"), ("NAME", "Bernardeschi")]
    # the text written with combining accents: offsets are still the text's own
    nfd = unicodedata.normalize("NFD", "Il sig. Niccolò Bernardèschi, nato a Roma.")
    findings = d.find(nfd, known=known)
    assert [nfd[f.start : f.end] for f in findings] == [unicodedata.normalize("NFD", "Niccolò Bernardèschi")]
    assert findings[0].canonical == "niccolò bernardèschi"  # lower-cased, accents kept


def test_fold_with_map_points_back_into_the_text():
    text = unicodedata.normalize("NFD", "Perché Ñandú") + " ok"
    folded, index = fold_with_map(text)
    assert folded == "perche nandu ok"
    assert len(index) == len(folded) and text[index[folded.index("nandu")]] == "N"
    # composed text folds one character for one: no map needed
    assert fold_with_map("Perché “Ñandú” İ") == ("perche “nandu” i", None)


def test_the_surname_alone_must_be_capitalised(detectors):
    d = detectors("it")
    known = {"patient_name": "Maria Costa"}
    assert found(d, "La sig.ra Costa ha dolore alla costa destra.", known) == [("NAME", "Costa")]


def test_other_people_sharing_the_given_name_are_not_the_patient(detectors):
    d = detectors("it")
    text = "Mario Bianchi, infermiere, ha visto Mario Rossi."
    findings = d.find(text, known=KNOWN)
    assert [text[f.start : f.end] for f in findings if f.canonical] == ["Mario Rossi"]


def test_spanish_two_surnames(detectors):
    d = detectors("es")
    known = {"patient_name": "José García López"}
    text = "Paciente JOSE GARCIA LOPEZ; García López, José; J. García; la Sra. de García; López."
    findings = d.find(text, known=known)
    assert [(text[f.start : f.end], f.canonical) for f in findings] == [
        ("JOSE GARCIA LOPEZ", "josé garcía lópez"),
        ("García López, José", "josé garcía lópez"),
        ("J. García", "josé garcía lópez"),
        ("de García", ""),  # a titled name longer than the known surname: someone else (his wife)
        ("López", "josé garcía lópez"),
    ]


def test_a_titled_name_that_is_the_known_one_keeps_its_identity(detectors):
    d = detectors("it")
    text = "La Sig.ra Rossi sta meglio; il Dott. R. Rossi e il Dott. Luigi Rossi la visitano."
    findings = d.find(text, known={"patient_name": "Maria Rossi"})
    assert [(text[f.start : f.end], f.canonical) for f in findings] == [
        ("Rossi", "maria rossi"),  # the patient, after a title
        ("R. Rossi", ""),  # other people sharing her surname: the whole name, not hers
        ("Luigi Rossi", ""),
    ]


def test_a_lone_letter_is_not_an_initial(detectors):
    # "e" is "and": "Rossi e Bianchi" holds no "Rossi E." of Elena Rossi
    text = "Visitati Rossi e Bianchi."
    assert found(detectors("it"), text, {"patient_name": "Elena Rossi"}) == [("NAME", "Rossi")]


def test_particles_belong_to_the_surname(detectors):
    d = detectors("it")
    known = {"patient_name": "Maria De Luca"}
    text = "La sig.ra DE LUCA Maria; Luca, il fratello; De Luca sta meglio; M. De Luca."
    assert [t for _, t in found(d, text, known)] == ["DE LUCA Maria", "De Luca", "M. De Luca"]


def test_known_record_number_matches_literally(detectors):
    d = detectors("it")
    known = {"mrn": "RIC-000123"}
    text = "Cartella RIC-000123, anche ric 000123 e RIC000123; non RIC-0001234."
    assert found(d, text, known) == [
        ("RECORD_NUMBER", "RIC-000123"),
        ("RECORD_NUMBER", "ric 000123"),
        ("RECORD_NUMBER", "RIC000123"),
    ]


def test_known_values_of_other_fields_are_ignored():
    d = Detector(DeidConfig(language="it", known_fields=("patient_name",)))
    text = "Nota 17 di Mario Rossi, reparto 17."
    assert found(d, text, {"patient_name": "Mario Rossi", "id": "17", "ward": "17"}) == [("NAME", "Mario Rossi")]


def test_known_fiscal_code_keeps_its_type(detectors):
    text = "CF RSSMRA85T10A562S."
    assert found(detectors("it"), text, {"cf": "RSSMRA85T10A562S"}) == [("CODICE_FISCALE", "RSSMRA85T10A562S")]


# ----------------------------------------------------------------------------- titled names


@pytest.mark.parametrize(
    "language,text,names",
    [
        ("it", "La Sig.ra Maria Rossi e il Dott. Bianchi", ["Maria Rossi", "Bianchi"]),
        ("it", "Dott.ssa De Luca, Prof. Di Stefano Giovanni", ["De Luca", "Di Stefano Giovanni"]),
        ("it", "sig. VERDI, Sig.na Neri, Dr. Gialli, Prof.ssa Marrone", ["VERDI", "Neri", "Gialli", "Marrone"]),
        ("it", "il paziente Mario Rossi riferisce; Inf. ROSSI", ["Mario Rossi", "ROSSI"]),
        ("it", "Sig. D'Angelo, Dott. Russo.", ["D'Angelo", "Russo"]),
        ("es", "La Sra. García López y el Dr. Pérez", ["García López", "Pérez"]),
        ("es", "D. Juan de la Fuente; Dña. María; Dra. Ruiz", ["Juan de la Fuente", "María", "Ruiz"]),
        ("es", "el paciente Ana Martín; Sr. Gómez", ["Ana Martín", "Gómez"]),
        ("en", "Mr John Smith and Dr. O'Brien", ["John Smith", "O'Brien"]),
        ("en", "Mrs. Jane Doe, Ms Brown, Prof McDonald", ["Jane Doe", "Brown", "McDonald"]),
        ("en", "the patient Smith; Dr J. Watson", ["Smith", "J. Watson"]),
        ("en", "Signed: Dr. A. Morris", ["A. Morris"]),  # "A." is an initial, not the article
        ("it", "la Sig.ra E. Mancini, vicina", ["E. Mancini"]),
    ],
)
def test_titled_names(language, text, names):
    assert [text[s:e] for s, e in find_titled_names(text, language)] == names


@pytest.mark.parametrize(
    "language,text",
    [
        ("it", "paziente HIV positivo"),  # capitals after a role: an acronym
        ("it", "il paziente Non collaborante"),
        ("it", "il Dott. il giorno dopo"),
        ("es", "paciente El día 3"),
        ("en", "Patient Name: unknown"),
        ("en", "the patient was seen"),
        ("en", "Dr. The ward round"),
    ],
)
def test_no_titled_name(language, text):
    assert find_titled_names(text, language) == []


def test_titled_names_through_the_detector(detectors):
    text = "Visitato dal Dott. Bianchi il giorno 3 marzo 2024."
    assert found(detectors("it"), text) == [("NAME", "Bianchi"), ("DATE", "3 marzo 2024")]
    f = detectors("it").find(text)[0]
    assert f.recognizer == "TitledNameRecognizer" and f.canonical == ""


# ----------------------------------------------------------------------------- allow and deny


def test_allow_list_keeps_eponyms(detectors):
    d = detectors("it")
    known = {"patient_name": "Luigi Parkinson"}  # even a patient's own surname, when it is an eponym
    text = "Morbo di Parkinson e malattia di Crohn; il Dott. Crohn; Luigi Parkinson."
    assert found(d, text, known) == [("NAME", "Luigi Parkinson")]
    assert found(detectors("en"), "Crohn's disease, Guillain-Barré, seen by Dr Hodgkin") == []


def test_project_allow_list_adds_terms():
    d = Detector(DeidConfig(language="it", allow_list=frozenset({"Tachipirina"})))
    assert found(d, "Sig. Tachipirina e Sig. Rossi") == [("NAME", "Rossi")]


def test_deny_list_words_are_always_found():
    d = Detector(DeidConfig(language="it", deny_list=frozenset({"Reparto Azzurro", "Villa Serena"})))
    text = "Trasferito da villa serena al Reparto Azzurro; Villa Serenella no."
    assert found(d, text) == [("DENY_LIST", "villa serena"), ("DENY_LIST", "Reparto Azzurro")]
    # a deny-list word that is also allowed is still found: the ward said so
    d = Detector(DeidConfig(language="it", deny_list=frozenset({"Parkinson"})))
    assert found(d, "reparto Parkinson") == [("DENY_LIST", "Parkinson")]
