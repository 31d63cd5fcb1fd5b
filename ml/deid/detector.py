"""The detector: Presidio's AnalyzerEngine with the recognizers of ml.deid.recognizers.

    detector = Detector(DeidConfig(language="it", known_fields=("patient_name", "mrn")))
    detector.find(text, known={"patient_name": "Mario Rossi", "mrn": "RIC-000123"}) -> [Finding]

The engine is built once per Detector and reused for every note. Its NLP engine is
`spacy.blank(language)` (a tokenizer, no downloaded model, no network); none of Presidio's
predefined recognizers is loaded (their e-mail and URL recognizers download the public suffix
list through tldextract). When DeidConfig.ner_model_dir names a local model folder, its PERSON
entities are added as names (ml.deid.ner); a folder that is not there is refused at once.

`find` returns sorted, non-overlapping findings (of two that overlap, the higher score, then the
longer span, stays), with their types from ml.deid.types.TYPES, after the allow-list (the
shipped clinical eponyms of ml.deid.allow_terms plus DeidConfig.allow_list) has removed the
findings that are allowed terms. Deny-list words are always found.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Mapping

from ml.deid import recognizers as rec
from ml.deid._presidio import (
    AnalyzerEngine,
    ContextAwareEnhancer,
    NlpArtifacts,
    RecognizerRegistry,
    RecognizerResult,
    SpacyNlpEngine,
)
from ml.deid.allow_terms import default_allow_terms
from ml.deid.names import fold
from ml.deid.ner import load_person_ner
from ml.deid.types import LANGUAGES, TYPES, DeidConfig, Finding

__all__ = ["Detector", "AllowList", "resolve_overlaps"]

_TYPE_ORDER = {t: i for i, t in enumerate(TYPES)}

# Presidio logs at INFO on every call ("Fetching all recognizers ..."); none of its messages
# holds the text, but one line per note is noise: warnings only, unless the app set a level
_presidio_log = logging.getLogger("presidio-analyzer")
if _presidio_log.level == logging.NOTSET:
    _presidio_log.setLevel(logging.WARNING)
_KNOWN_CACHE_SIZE = 512


class BlankSpacyNlpEngine(SpacyNlpEngine):
    """Presidio's spaCy engine on `spacy.blank(language)`: a tokenizer only, never a download."""

    def __init__(self, language: str):
        super().__init__(models=[{"lang_code": language, "model_name": f"blank:{language}"}])
        self.language = language

    def load(self) -> None:
        import spacy

        self.nlp = {self.language: spacy.blank(self.language)}


class NoContextEnhancer(ContextAwareEnhancer):
    """No score changes from context words: the recognizers here carry none, and the default
    enhancer deep-copies every result of every note to find that out."""

    def __init__(self):
        super().__init__(0.0, 0.0, 0, 0)

    def enhance_using_context(self, text, raw_results, nlp_artifacts, recognizers, context=None):
        return raw_results


class AllowList:
    """Terms never replaced: case- and accent-insensitive, on whole findings. A NAME finding
    all of whose words are allowed ("Guillain-Barré", "Crohn's") is dropped too."""

    _SPLIT = re.compile(r"[\s\-–]+")

    def __init__(self, terms):
        self.terms = frozenset(self._norm(t) for t in terms if t and t.strip())

    @staticmethod
    def _norm(s: str) -> str:
        s = fold(" ".join(s.split()))
        return re.sub(r"['’]s$", "", s)  # "Crohn's" is "Crohn"

    def __contains__(self, text: str) -> bool:
        return self._norm(text) in self.terms

    def allows(self, finding_type: str, text: str) -> bool:
        if finding_type == "DENY_LIST":
            return False
        if text in self:
            return True
        if finding_type == "NAME":
            words = [w for w in self._SPLIT.split(text.strip(" .,;:")) if w]
            return bool(words) and all(w in self for w in words)
        return False


def resolve_overlaps(findings: list[Finding]) -> list[Finding]:
    """Sorted, non-overlapping: of two that overlap, the higher score stays, then the longer."""
    ranked = sorted(findings, key=lambda f: (-f.score, -(f.end - f.start), f.start, _TYPE_ORDER.get(f.type, 99)))
    kept: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for f in ranked:
        if f.end <= f.start:
            continue
        if any(f.start < e and s < f.end for s, e in taken):
            continue
        kept.append(f)
        taken.append((f.start, f.end))
    kept.sort(key=lambda f: (f.start, f.end))
    return kept


class Detector:
    """Finds the identifiers of a note. Build it once (it compiles the recognizers, loads the
    NLP engine and the optional NER model) and call `find` for every note.

    No recognizer here reads Presidio's NLP artifacts (tokens, lemmas, spaCy entities: the NER
    model runs on its own), so `find` hands the engine one empty artifact instead of having the
    blank spaCy tokenise every note and Presidio derive keywords from lemmas a blank pipeline
    does not have (about 2 ms of a 1,500-character note). A recognizer that needs them sets
    TOKENIZE = True."""

    TOKENIZE = False

    def __init__(self, config: DeidConfig):
        if config.language not in LANGUAGES:
            raise ValueError(f"unsupported language {config.language!r}: one of {', '.join(LANGUAGES)}")
        self.config = config
        self.language = config.language
        for pattern in config.record_patterns:
            rec.compile_record_pattern(pattern)  # a clear ValueError naming a bad pattern
        self.allow = AllowList(default_allow_terms(self.language) | set(config.allow_list))
        ner = load_person_ner(config.ner_model_dir) if config.ner_model_dir else None
        recognizers = rec.build_recognizers(self.language, config.record_patterns, config.deny_list, ner)
        registry = RecognizerRegistry(recognizers=recognizers, supported_languages=[self.language])
        self.analyzer = AnalyzerEngine(
            registry=registry,
            nlp_engine=BlankSpacyNlpEngine(self.language),
            supported_languages=[self.language],
            context_aware_enhancer=NoContextEnhancer(),
        )
        engine = self.analyzer.nlp_engine
        self._no_artifacts = NlpArtifacts(
            entities=[],
            tokens=engine.get_nlp(self.language).make_doc(""),
            tokens_indices=[],
            lemmas=[],
            nlp_engine=engine,
            language=self.language,
        )
        self._known: OrderedDict[tuple[str, ...], rec.KnownIdentityRecognizer] = OrderedDict()

    # ------------------------------------------------------------------------- known values

    def known_values(self, known: Mapping[str, object] | None) -> tuple[str, ...]:
        """The values of `known` that are identifiers: those of DeidConfig.known_fields (all
        of them when the config names no field), as text, blanks and None left out."""
        if not known:
            return ()
        fields = self.config.known_fields
        values = []
        for field_name, value in known.items():
            if fields and field_name not in fields:
                continue
            if value is None or isinstance(value, bool):
                continue
            if isinstance(value, list | tuple | set | frozenset):
                values.extend(str(v) for v in value if v is not None and str(v).strip())
            elif str(value).strip():
                values.append(str(value))
        return tuple(sorted(set(values)))

    def _known_recognizer(self, values: tuple[str, ...]) -> rec.KnownIdentityRecognizer | None:
        if not values:
            return None
        recognizer = self._known.get(values)
        if recognizer is None:
            recognizer = rec.KnownIdentityRecognizer(self.language, values)
            self._known[values] = recognizer
            if len(self._known) > _KNOWN_CACHE_SIZE:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(values)
        return recognizer

    # ------------------------------------------------------------------------- finding

    def find(self, text: str, known: Mapping[str, str] | None = None) -> list[Finding]:
        """The identifiers in `text`: sorted, non-overlapping, [start, end) offsets."""
        if not text:
            return []
        known_rec = self._known_recognizer(self.known_values(known))
        results = self.analyzer.analyze(
            text=text,
            language=self.language,
            ad_hoc_recognizers=[known_rec] if known_rec else None,
            nlp_artifacts=None if self.TOKENIZE else self._no_artifacts,
        )
        findings = []
        surname_alone = set()
        for r in results:
            if r.entity_type not in _TYPE_ORDER:
                continue
            if self.allow.allows(r.entity_type, text[r.start : r.end]):
                continue
            meta = r.recognition_metadata or {}
            if meta.get(rec.SURNAME_ALONE_KEY):
                surname_alone.add((r.start, r.end))
            findings.append(
                Finding(
                    type=r.entity_type,
                    start=r.start,
                    end=r.end,
                    score=round(float(r.score), 4),
                    recognizer=str(meta.get(RecognizerResult.RECOGNIZER_NAME_KEY, "")),
                    canonical=str(meta.get(rec.CANONICAL_KEY, "")) if r.entity_type == "NAME" else "",
                )
            )
        # a known surname alone inside a longer titled name is someone else's ("Dott. R. Rossi"
        # beside the patient Maria Rossi): the titled name stays, whole
        titled = [(f.start, f.end) for f in findings if f.recognizer == "TitledNameRecognizer"]
        if titled and surname_alone:
            findings = [
                f
                for f in findings
                if not f.canonical
                or (f.start, f.end) not in surname_alone
                or not any(s <= f.start and f.end <= e and (s, e) != (f.start, f.end) for s, e in titled)
            ]
        return resolve_overlaps(findings)
