"""The one place that turns a project's de-identification policy (deid.DeidPolicy) and a corpus's
language into ml.deid objects, and applies them to a note: its text and its metadata.

    config_for(project, language)        -> ml.deid.DeidConfig
    detector_for(project, language)      -> ml.deid.Detector, one per process per policy version
    replacer_for(project, language)      -> ml.deid.Replacer (mode, language, the surrogate secret)
    patient_key(metadata, policy)        -> the keyed hash of the note's patient ("" for none)
    deidentify_text(project, language, text, metadata) -> ml.deid Replacement
    NoteDeidentifier(project, language).note(text, metadata) -> DeidentifiedNote

A project with no saved policy has the default one (category tags, no known fields). Known
values come from the note's metadata fields the policy names (`known_fields`); the patient from
its `patient_field`. Surrogates are deterministic: the same secret, patient and original give the
same stand-in, so a patient's notes de-identified at different times (an import, a later gold
file holding the original text) agree.

What a note's metadata becomes (DeidentifiedNote.metadata):
- each known field's value is replaced by what the de-identifier makes of it (the surrogate its
  words get in the text, or its tag); a value the de-identifier does not recognise, or one that
  is not text or a number, becomes REDACTED;
- the patient field's value becomes its keyed hash (`patient_hash`: HMAC-SHA256 with SECRET_KEY
  of "<field>=<value>", 16 hex digits, the hash an erasure's receipt shows), so the notes of one
  patient still go together and an erasure by the patient's value still finds them;
- brat entities kept in the metadata (a notes import of brat files) have their spans carried
  into the new text (`map_ranges`);
- every other field is kept as it came: name each field that identifies a patient as a known field.

The surrogate secret (`secret_for`): settings.DEID_SECRET, or, unset, an HMAC of SECRET_KEY and
the project's id. Changing it changes the surrogates (and date shifts) of notes de-identified
afterwards; those de-identified before keep theirs. Changing SECRET_KEY also changes the patient
hashes written afterwards (and, through them, the surrogates).

Nothing here logs or stores a value: the pairs (original -> surrogate) go to the encrypted
mapping only (webapp.deid.mapping), when the policy keeps one.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections import Counter
from dataclasses import dataclass, field

import regex
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.deid.types import LANGUAGES, DeidConfig
from webapp.deid import mapping
from webapp.deid.models import DeidPolicy

REDACTED = "[REDACTED]"
MAX_CACHED = 16  # detectors kept per process (a Presidio analyzer holds its recognizers)
LANGUAGE_NAMES = {"it": gettext_lazy("Italian"), "es": gettext_lazy("Spanish"), "en": gettext_lazy("English")}


class PolicyError(ValueError):
    """The policy cannot be applied here; the message says why in plain words (never a value)."""


def policy_of(project) -> DeidPolicy:
    """The project's saved policy, or the default one (unsaved)."""
    found = DeidPolicy.objects.filter(project_id=project.pk).first()
    return found if found is not None else DeidPolicy(project=project)


def check_language(language: str) -> str:
    if language not in LANGUAGES:
        names = ", ".join(f"{LANGUAGE_NAMES[code]} ({code})" for code in LANGUAGES)
        raise PolicyError(
            _("De-identification reads %(names)s; this corpus's language is %(language)s.")
            % {"names": names, "language": repr(language)}
        )
    return language


def config_for(project, language: str, policy: DeidPolicy | None = None) -> DeidConfig:
    policy = policy or policy_of(project)
    for pattern in policy.record_patterns:
        if problem := pattern_problem(pattern):
            raise PolicyError(
                _("The record-number pattern %(pattern)s of the policy %(problem)s; correct it.")
                % {"pattern": repr(pattern), "problem": problem}
            )
    return DeidConfig(
        language=check_language(language),
        known_fields=tuple(policy.known_fields),
        record_patterns=tuple(policy.record_patterns),
        allow_list=frozenset(policy.allow_list),
        deny_list=frozenset(policy.deny_list),
        ner_model_dir=policy.ner_model_dir or None,
    )


def pattern_problem(pattern: str) -> str | None:
    """Why a record-number pattern cannot be used (None: it can), in words for a form. Compiled as
    the detector compiles it (the `regex` module, MULTILINE: ml.deid.recognizers)."""
    try:
        compiled = regex.compile(pattern, regex.MULTILINE)
    except (regex.error, TypeError, ValueError) as exc:
        why = getattr(exc, "msg", None) or exc
        if getattr(exc, "pos", None) is not None:
            return _("is not a regular expression (%(why)s at position %(position)s)") % {
                "why": why,
                "position": exc.pos,
            }
        return _("is not a regular expression (%(why)s)") % {"why": why}
    if compiled.fullmatch(""):
        return _("matches empty text (it would find a record number everywhere)")
    return None


def check(project, language: str) -> DeidPolicy:
    """The project's policy, if it can be applied to notes in `language` here; PolicyError says
    why not. Cheap (no detector is built): for forms and launches in the web process."""
    policy = policy_of(project)
    config_for(project, language, policy)
    if policy.keep_mapping and not mapping.key_set():
        raise PolicyError(str(mapping.MappingKeyMissing()))
    return policy


_detectors: dict[tuple, object] = {}
_lock = threading.Lock()


def detector_for(project, language: str, policy: DeidPolicy | None = None):
    """The project's detector for `language`, built once per process and policy version (the
    policy's `updated`): a saved change is used by the next note read."""
    from ml.deid.detector import Detector

    policy = policy or policy_of(project)
    key = (project.pk, policy.updated, language)
    with _lock:
        found = _detectors.get(key)
    if found is not None:
        return found
    config = config_for(project, language, policy)
    try:
        found = Detector(config)
    except Exception as exc:  # a NER folder that cannot be loaded, a recognizer that refuses the config
        raise PolicyError(
            f"The project's de-identification policy could not be loaded for {language} ({type(exc).__name__})"
            + ("; is its NER model folder on this worker?" if policy.ner_model_dir else ".")
        ) from None
    with _lock:
        while len(_detectors) >= MAX_CACHED:
            _detectors.pop(next(iter(_detectors)))
        _detectors[key] = found
    return found


def forget_detectors() -> None:
    with _lock:
        _detectors.clear()


def secret_for(project) -> bytes:
    """The key surrogates are drawn with (module docstring)."""
    if settings.DEID_SECRET:
        return settings.DEID_SECRET.encode()
    return hmac.new(settings.SECRET_KEY.encode(), f"deid-surrogates:{project.pk}".encode(), hashlib.sha256).digest()


def replacer_for(project, language: str, policy: DeidPolicy | None = None):
    from ml.deid.replacing import Replacer

    policy = policy or policy_of(project)
    return Replacer(policy.mode, check_language(language), secret_for(project))


def patient_hash(field_name: str, value) -> str:
    """The keyed hash of a patient's value (HMAC-SHA256 with SECRET_KEY of `<field>=<value>`, first 16
    hex digits): what a de-identified note's patient field, a kept mapping and an erasure's receipt
    (webapp.erasure) name the patient by. It can be matched against a value someone holds, but a
    patient id, short and guessable, cannot be recovered from it by hashing every candidate
    without the key."""
    message = f"{field_name}={str(value).strip()}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:16]


def patient_key(note_metadata: dict, policy: DeidPolicy) -> str:
    """The key a note's surrogates and date shift are kept under: the keyed hash of its patient
    field's value ("" when the policy names no patient field or the note has no value there)."""
    value = _scalar((note_metadata or {}).get(policy.patient_field)) if policy.patient_field else None
    return patient_hash(policy.patient_field, value) if value else ""


def note_key(external_id: str) -> str:
    """The key of a note whose patient is unknown (no patient field, or no value there): its own,
    so its surrogates and date shift are its alone. One key shared by every such note would give
    them all one date shift, and one real date learnt would shift all of them back."""
    return "note:" + patient_hash("note", external_id) if external_id else ""


def stored_patient_key(note_metadata: dict, policy: DeidPolicy) -> str:
    """The same key read from a note already de-identified (its patient field holds the hash)."""
    value = _scalar((note_metadata or {}).get(policy.patient_field)) if policy.patient_field else None
    return value or ""


def known_values(note_metadata: dict, policy: DeidPolicy) -> dict[str, str]:
    """{field: value} of the policy's known fields that the note's metadata holds as text or a number."""
    known = {}
    for name in policy.known_fields:
        value = _scalar((note_metadata or {}).get(name))
        if value:
            known[name] = value
    return known


def _scalar(value) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        return str(value).strip() or None
    return None


def deidentify_text(project, language: str, text: str, metadata: dict):
    """The project's policy applied to one text: an ml.deid Replacement."""
    return NoteDeidentifier(project, language).text(text, metadata)


@dataclass
class DeidentifiedNote:
    text: str
    metadata: dict
    replacement: object  # ml.deid Replacement: spans, counts, map_span
    patient: str  # the patient's keyed hash, "" for none
    value_pairs: list = field(default_factory=list)  # (original, replacement) of the known fields' values

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every (original, replacement) pair of the note, its text's and its metadata's: never log."""
        return list(dict.fromkeys([*replacement_pairs(self.replacement), *self.value_pairs]))

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.replacement.counts)


@dataclass
class Tally:
    """What a run of notes found, per identifier type, never a value; and the pairs to keep per patient."""

    counts: Counter = field(default_factory=Counter)
    notes: int = 0
    notes_with_findings: int = 0
    pairs: dict[str, list] = field(default_factory=dict)  # patient hash -> [(original, surrogate), ...]

    def add(self, note: DeidentifiedNote, keep_pairs: bool) -> None:
        counts = note.counts
        self.notes += 1
        self.notes_with_findings += bool(sum(counts.values()))
        self.counts.update({kind: n for kind, n in counts.items() if n})
        if keep_pairs and note.patient:
            self.pairs.setdefault(note.patient, []).extend(note.pairs)

    def keep_pairs(self, project_id: int) -> None:
        """Merge the pairs gathered so far into the encrypted mapping (the caller's transaction)."""
        for patient, pairs in self.pairs.items():
            mapping.merge(project_id, patient, pairs)
        self.pairs = {}

    def counts_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def replacement_pairs(replacement) -> list[tuple[str, str]]:
    """(original, surrogate) pairs of a Replacement, whatever shape ml.deid gives them in."""
    pairs = replacement.pairs
    items = pairs.items() if isinstance(pairs, dict) else pairs
    out = []
    for item in items or ():
        if isinstance(item, dict):
            out.append((str(item.get("original", "")), str(item.get("surrogate", ""))))
        else:
            *_, original, surrogate = item
            out.append((str(original), str(surrogate)))
    return [(o, s) for o, s in out if o]


class NoteDeidentifier:
    """The project's policy for one language, ready to apply to many notes (an import, a job)."""

    def __init__(self, project, language: str):
        self.project = project
        self.policy = check(project, language)
        self.language = language
        self.detector = detector_for(project, language, self.policy)
        self.replacer = replacer_for(project, language, self.policy)

    @property
    def keeps_mapping(self) -> bool:
        return self.policy.keep_mapping

    def text(self, text: str, metadata: dict, *, patient: str | None = None, known: dict | None = None):
        """A Replacement of `text`; `patient` and `known` default to those of `metadata`."""
        known = known_values(metadata, self.policy) if known is None else known
        patient = patient_key(metadata, self.policy) if patient is None else patient
        findings = self.detector.find(text, known=known)
        return self.replacer.replace(text, findings, patient=patient)

    def note(self, text: str, metadata: dict, external_id: str = "") -> DeidentifiedNote:
        """The note's new text and metadata (module docstring); a note with no patient value is
        keyed by its `external_id` (note_key)."""
        metadata = metadata or {}
        known = known_values(metadata, self.policy)
        patient = patient_key(metadata, self.policy) or note_key(external_id)
        replacement = self.text(text, metadata, patient=patient, known=known)
        value_pairs: list[tuple[str, str]] = []
        new_metadata = self._metadata(metadata, replacement, known, patient, value_pairs)
        return DeidentifiedNote(replacement.text, new_metadata, replacement, patient, value_pairs)

    def _metadata(self, metadata: dict, replacement, known: dict, patient: str, pairs: list) -> dict:
        out = dict(metadata)
        for name in self.policy.known_fields:
            if name in out and out[name] not in (None, ""):
                value = known.get(name)
                out[name] = self._value(value, known, patient) if value else REDACTED
                if value and out[name] != REDACTED:
                    pairs.append((value, out[name]))
        if self.policy.patient_field and out.get(self.policy.patient_field) not in (None, ""):
            out[self.policy.patient_field] = patient or REDACTED
        brat = out.get("brat")
        if isinstance(brat, dict) and isinstance(brat.get("entities"), list):
            entities = [
                {**entity, "spans": map_ranges(replacement, entity.get("spans", []), merge=True)}
                if isinstance(entity, dict)
                else entity
                for entity in brat["entities"]
            ]
            out["brat"] = {**brat, "entities": entities}
        return out

    def _value(self, value: str, known: dict, patient: str) -> str:
        """A known value as the de-identifier writes it in the text; REDACTED when it finds nothing."""
        replaced = self.text(value, {}, patient=patient, known=known)
        return replaced.text if replaced.spans and replaced.text != value else REDACTED


def map_ranges(replacement, ranges, *, merge: bool = False) -> list[list[int]]:
    """Offset pairs of the original text carried into the new one (Replacement.map_span), in
    order; `merge`: ranges that now touch the same surrogate become one (brat fragments must not
    overlap). A range given twice is kept once."""
    mapped = []
    for start, end in ranges:
        new_start, new_end = replacement.map_span(int(start), int(end))
        mapped.append([int(new_start), int(new_end)])
    if not merge:
        return [list(r) for r in dict.fromkeys(tuple(r) for r in mapped)]
    merged: list[list[int]] = []
    for start, end in sorted(mapped):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
