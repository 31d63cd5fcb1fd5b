"""The Detector: Presidio with our recognizers only, spacy.blank, no network, sorted
non-overlapping findings, the optional NER folder refused when missing, and its speed."""

from __future__ import annotations

import inspect
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import spacy

from ml.deid import recognizers as rec
from ml.deid.detector import BlankSpacyNlpEngine, Detector, resolve_overlaps
from ml.deid.ner import NerModelError
from ml.deid.types import TYPES, DeidConfig, Finding
from tests.ml.deid.conftest import found

NOTE_IT = (
    "Paziente: ROSSI Mario, C.F. RSSMRA85T10A562S, nato il 10/12/1985, cartella RIC-000123.\n"
    "Il paziente di 92 anni riferisce dolore dal 3 marzo 2024. Tel. 333 1234567, "
    "e-mail mario.rossi@example.it. Visitato dalla Dott.ssa Bianchi. Anamnesi: morbo di Parkinson. "
    "Referto su https://referti.example.it/r/55 dall'IP 10.0.0.12. IBAN IT60X0542811101000000123456. "
    "M. Rossi è stato informato."
)
EXPECTED_IT = [
    ("NAME", "ROSSI Mario"),
    ("CODICE_FISCALE", "RSSMRA85T10A562S"),
    ("DATE", "10/12/1985"),
    ("RECORD_NUMBER", "RIC-000123"),
    ("AGE", "92"),
    ("DATE", "3 marzo 2024"),
    ("PHONE", "333 1234567"),
    ("EMAIL", "mario.rossi@example.it"),
    ("NAME", "Bianchi"),
    ("URL", "https://referti.example.it/r/55"),
    ("IP_ADDRESS", "10.0.0.12"),
    ("IBAN", "IT60X0542811101000000123456"),
    ("NAME", "M. Rossi"),
]
NOTE_ES = (
    "Paciente García López, José (DNI 12345678Z), de 93 años, ingresó el 12 de enero de 2023. "
    "Tel. 612 345 678. Valorado por el Dr. Pérez. Enfermedad de Crohn."
)
EXPECTED_ES = [
    ("NAME", "García López, José"),
    ("DNI_NIE", "12345678Z"),
    ("AGE", "93"),
    ("DATE", "12 de enero de 2023"),
    ("PHONE", "612 345 678"),
    ("NAME", "Pérez"),
]
NOTE_EN = (
    "Mr John Smith, NHS 943 476 5919, SSN 536-22-8726, a 95-year-old man seen on March 3, 2024 "
    "by Dr. Watson for Hodgkin lymphoma. Call 020 7946 0958 or j.smith@example.org."
)
EXPECTED_EN = [
    ("NAME", "John Smith"),
    ("NHS_NUMBER", "943 476 5919"),
    ("SSN", "536-22-8726"),
    ("AGE", "95"),
    ("DATE", "March 3, 2024"),
    ("NAME", "Watson"),
    ("PHONE", "020 7946 0958"),
    ("EMAIL", "j.smith@example.org"),
]
KNOWN = {
    "it": {"patient_name": "Mario Rossi"},
    "es": {"patient_name": "José García López"},
    "en": {"patient_name": "John Smith"},
}


def _config(language):
    return DeidConfig(language=language, known_fields=("patient_name",), record_patterns=(r"\bRIC-\d{6}\b",))


@pytest.mark.parametrize(
    "language,note,expected", [("it", NOTE_IT, EXPECTED_IT), ("es", NOTE_ES, EXPECTED_ES), ("en", NOTE_EN, EXPECTED_EN)]
)
def test_a_note_per_language(language, note, expected):
    d = Detector(_config(language))
    findings = d.find(note, known=KNOWN[language])
    assert [(f.type, note[f.start : f.end]) for f in findings] == expected
    assert all(f.type in TYPES for f in findings)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:]))  # sorted, non-overlapping
    names = [f for f in findings if f.type == "NAME" and f.recognizer == "KnownIdentityRecognizer"]
    assert names and {f.canonical for f in names} == {KNOWN[language]["patient_name"].lower()}


def test_find_keeps_the_contract_signature():
    params = list(inspect.signature(Detector.find).parameters)
    assert params == ["self", "text", "known"]
    assert inspect.signature(Detector.find).parameters["known"].default is None
    assert Detector(DeidConfig(language="it")).find("") == []


def test_overlaps_keep_the_higher_score_then_the_longer_span():
    a = Finding("DATE", 0, 10, 0.85)
    b = Finding("PHONE", 5, 15, 0.9)
    c = Finding("NAME", 20, 25, 0.85)
    d = Finding("NAME", 20, 31, 0.85)
    e = Finding("RECORD_NUMBER", 30, 40, 1.0)
    assert resolve_overlaps([a, b, c, d, e]) == [b, c, e]
    assert resolve_overlaps([c, d]) == [d]


def test_a_detector_is_built_once_and_reused(detectors):
    d = Detector(_config("it"))
    engine = d.analyzer
    first = d.find(NOTE_IT, known=KNOWN["it"])
    second = d.find(NOTE_IT, known=KNOWN["it"])
    assert first == second and d.analyzer is engine
    assert len(d._known) == 1  # the known values' recognizer is compiled once, then reused


def test_only_our_recognizers_and_a_blank_spacy(monkeypatch):
    def no_load(*args, **kwargs):
        raise AssertionError("spacy.load must not be called: the NLP engine is spacy.blank")

    monkeypatch.setattr(spacy, "load", no_load)
    d = Detector(DeidConfig(language="es", deny_list=frozenset({"Planta 3"})))
    assert isinstance(d.analyzer.nlp_engine, BlankSpacyNlpEngine)
    nlp = d.analyzer.nlp_engine.get_nlp("es")
    assert nlp.pipe_names == [] and nlp.lang == "es"
    modules = {type(r).__module__ for r in d.analyzer.registry.recognizers}
    assert modules == {rec.__name__}


def test_detection_works_with_no_network(monkeypatch):
    """No recognizer reaches the network (Presidio's predefined e-mail and URL recognizers
    would download the public suffix list through tldextract: none of them is loaded)."""
    attempts = []

    def refuse(self, address, *args, **kwargs):
        attempts.append(address)
        raise OSError(f"network blocked in this test: connect to {address!r}")

    def refuse_lookup(*args, **kwargs):
        attempts.append(args[:1])
        raise OSError("network blocked in this test: name lookup")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse_lookup)
    monkeypatch.setattr(socket, "create_connection", refuse_lookup)
    for language, note, expected in (("it", NOTE_IT, EXPECTED_IT), ("en", NOTE_EN, EXPECTED_EN)):
        d = Detector(_config(language))
        assert found(d, note, KNOWN[language]) == expected
        text = "Write to a.b@example.co.uk or see http://www.example.com/path."
        assert found(d, text) == [("EMAIL", "a.b@example.co.uk"), ("URL", "http://www.example.com/path")]
    assert attempts == []


def test_a_missing_ner_folder_is_refused(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(NerModelError, match="does not exist") as info:
        Detector(DeidConfig(language="it", ner_model_dir=str(missing)))
    assert str(missing) in str(info.value) and "never downloaded" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_a_folder_without_a_model_is_refused(tmp_path):
    (tmp_path / "README.txt").write_text("not a model")
    with pytest.raises(NerModelError, match="neither a spaCy pipeline"):
        Detector(DeidConfig(language="it", ner_model_dir=str(tmp_path)))


def test_unsupported_language_is_refused():
    with pytest.raises(ValueError, match="unsupported language"):
        Detector(DeidConfig(language="fr"))


def test_speed_many_notes_on_one_core():
    """The figure to beat is 50 notes/s of ~1,500 characters; the test only guards against a
    collapse (a busy CI machine), the measured figure is in the report."""
    d = Detector(_config("it"))
    note = (NOTE_IT + " ") * 4
    note = note[:1500]
    d.find(note, known=KNOWN["it"])
    start = time.perf_counter()
    for _ in range(50):
        d.find(note, known=KNOWN["it"])
    assert time.perf_counter() - start < 5.0


def test_a_local_spacy_ner_folder_adds_person_names(tmp_path):
    """A spaCy pipeline in a folder (here a blank one with an entity ruler, made in the test:
    nothing is downloaded) adds its PERSON entities as names; the allow-list still applies."""
    nlp = spacy.blank("it")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [
            {"label": "PERSON", "pattern": [{"LOWER": "gianni"}, {"LOWER": "verdi"}]},
            {"label": "PER", "pattern": "Parkinson"},
            {"label": "LOC", "pattern": "Milano"},
        ]
    )
    nlp.to_disk(tmp_path / "ner")
    d = Detector(DeidConfig(language="it", ner_model_dir=str(tmp_path / "ner")))
    text = "Gianni Verdi, di Milano, affetto da morbo di Parkinson."
    findings = d.find(text)
    assert [(f.type, text[f.start : f.end], f.recognizer) for f in findings] == [
        ("NAME", "Gianni Verdi", "NerRecognizer")
    ]


def test_importing_the_detector_leaves_transformers_out():
    """Presidio imports its optional Hugging Face engine, and with it transformers (10-15 s of a
    process's start); ml.deid._presidio hides it for that import only."""
    code = (
        "import sys\n"
        "from ml.deid.detector import Detector\n"
        "from ml.deid.types import DeidConfig\n"
        "Detector(DeidConfig(language='en')).find('Dr. Watson, 020 7946 0958')\n"
        "assert sys.modules.get('transformers', 0) is not None, 'transformers was left hidden'\n"
        "assert 'transformers' not in sys.modules, 'transformers was imported'\n"
        "import importlib.util\n"
        "assert importlib.util.find_spec('transformers') is not None  # importable afterwards\n"
        "print('ok')\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
