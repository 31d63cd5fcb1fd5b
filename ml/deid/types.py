"""The shared vocabulary of de-identification: what was found, what it became, how offsets move.

Kept apart from the detector and the replacer so the web app, the command line and the
benchmark import the same types without importing Presidio."""

from __future__ import annotations

from dataclasses import dataclass, field

# The identifier types, as they appear in findings, counts and tags ("[NAME]"). Residual scans
# and the API report counts under these keys, never values.
TYPES = (
    "NAME",
    "CODICE_FISCALE",
    "DNI_NIE",
    "NHS_NUMBER",
    "SSN",
    "PHONE",
    "EMAIL",
    "URL",
    "IP_ADDRESS",
    "IBAN",
    "ADDRESS",
    "DATE",
    "AGE",
    "RECORD_NUMBER",
    "DENY_LIST",
)

LANGUAGES = ("it", "es", "en")


@dataclass(frozen=True)
class Finding:
    """One identifier in a text: [start, end) character offsets into that text."""

    type: str
    start: int
    end: int
    score: float = 1.0
    recognizer: str = ""  # which recognizer found it (diagnostics, benchmarks)
    # For a name: the known identity it is a variant of, normalised (the metadata value it
    # matched, lower-cased, accents kept), so "ROSSI Mario" and "M. Rossi" share one surrogate.
    # Empty when the finding stands alone (a titled name, a number).
    canonical: str = ""


@dataclass(frozen=True)
class DeidConfig:
    language: str = "en"
    # metadata fields whose values are identifiers the hospital already knows, e.g.
    # ("patient_name", "mrn"); the values come per note through Detector.find(known=...)
    known_fields: tuple[str, ...] = ()
    # regular expressions of the project's record/accession numbers, e.g. r"\bRIC-\d{6}\b"
    record_patterns: tuple[str, ...] = ()
    allow_list: frozenset[str] = field(default_factory=frozenset)  # kept: "Parkinson", drug names
    deny_list: frozenset[str] = field(default_factory=frozenset)  # always replaced
    ner_model_dir: str | None = None  # a local spaCy or transformers folder; never downloaded


@dataclass(frozen=True)
class ReplacedSpan:
    """One replacement: [start, end) in the original text became [new_start, new_end)."""

    type: str
    start: int
    end: int
    new_start: int
    new_end: int
