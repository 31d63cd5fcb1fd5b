"""The Presidio recognizers of the de-identifier, one per identifier type.

Shapes with a checksum or a validity rule are `PatternRecognizer`s whose validate_result /
invalidate_result call ml.deid.checks (an invalid checksum scores 0, so Presidio drops it);
identifiers that a regular expression can't delimit alone (phones, IBANs, dates, ages, names,
addresses)
are `EntityRecognizer`s around the finders of ml.deid.checks, ml.deid.dates and ml.deid.names.
None of Presidio's predefined recognizers is used: their e-mail and URL recognizers call
tldextract, which downloads the public suffix list.

Scores order the findings when two overlap (the Detector keeps the higher score, then the
longer span): a checksum or a value the hospital gave is surer than a shape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import regex

from ml.deid import addresses, checks, dates, names
from ml.deid._presidio import EntityRecognizer, Pattern, PatternRecognizer, RecognizerResult

# how sure each kind of evidence is
SCORE_CHECKSUM = 1.0  # fiscal code, DNI/NIE, NHS number, IBAN
SCORE_KNOWN = 1.0  # a value from the note's metadata, a project's record pattern, a deny-list word
SCORE_EMAIL = 1.0
SCORE_IP = 0.95
SCORE_SSN = 0.95
SCORE_URL = 0.9
SCORE_PHONE = 0.9
SCORE_AGE = 0.9
SCORE_DATE = 0.85
# an address: above a titled name or a date inside it ("Calle Dr. Fleming 5", "Via 4 Novembre"),
# so the whole address goes as one
SCORE_ADDRESS = 0.87
SCORE_TITLED_NAME = 0.85
# a known surname alone: above a titled name of the same span ("Sig.ra Rossi" is the patient
# Maria Rossi), but the Detector lets a longer titled name that holds it win ("Dott. R. Rossi" is
# someone else, and the whole name goes)
SCORE_KNOWN_SURNAME = 0.86
SURNAME_ALONE_KEY = "surname_alone"  # recognition_metadata key

CANONICAL_KEY = "canonical"  # recognition_metadata key: Finding.canonical

_CASELESS = regex.IGNORECASE | regex.MULTILINE


def _result(recognizer: EntityRecognizer, entity: str, start: int, end: int, score: float, **meta) -> RecognizerResult:
    return RecognizerResult(
        entity_type=entity,
        start=start,
        end=end,
        score=score,
        recognition_metadata={
            RecognizerResult.RECOGNIZER_NAME_KEY: recognizer.name,
            RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: recognizer.id,
            **meta,
        },
    )


# ----------------------------------------------------------------------------- pattern + check


class ChecksumRecognizer(PatternRecognizer):
    """A shape whose matches count only when `check(text)` holds. With `score=1.0` the check is
    a checksum (Presidio's validate_result: valid -> 1.0, invalid -> dropped); with a lower
    score it is a validity rule (invalidate_result: invalid -> dropped, valid keeps the score)."""

    ENTITY = ""
    SCORE = SCORE_CHECKSUM
    PATTERNS: tuple[str, ...] = ()

    def __init__(self, language: str, check: Callable[[str], bool] | None = None):
        self._check = check or type(self).check
        super().__init__(
            supported_entity=self.ENTITY,
            name=type(self).__name__,
            supported_language=language,
            patterns=[Pattern(f"{self.ENTITY.lower()}_{i}", p, self.SCORE) for i, p in enumerate(self.PATTERNS)],
            global_regex_flags=_CASELESS,
        )

    @staticmethod
    def check(text: str) -> bool:
        return True

    def validate_result(self, pattern_text: str) -> bool | None:
        return self._check(pattern_text) if self.SCORE >= 1.0 else None

    def invalidate_result(self, pattern_text: str) -> bool | None:
        return (not self._check(pattern_text)) if self.SCORE < 1.0 else None


class CodiceFiscaleRecognizer(ChecksumRecognizer):
    ENTITY = "CODICE_FISCALE"
    PATTERNS = (checks.CODICE_FISCALE_RE,)
    check = staticmethod(checks.is_valid_codice_fiscale)


class DniNieRecognizer(ChecksumRecognizer):
    ENTITY = "DNI_NIE"
    PATTERNS = (checks.DNI_RE, checks.NIE_RE)
    check = staticmethod(checks.is_valid_dni_nie)


class NhsNumberRecognizer(ChecksumRecognizer):
    ENTITY = "NHS_NUMBER"
    PATTERNS = (checks.NHS_RE,)
    check = staticmethod(checks.is_valid_nhs)


class EmailRecognizer(ChecksumRecognizer):
    ENTITY = "EMAIL"
    SCORE = SCORE_EMAIL
    PATTERNS = (checks.EMAIL_RE,)  # the shape is the evidence


class UrlRecognizer(ChecksumRecognizer):
    ENTITY = "URL"
    SCORE = SCORE_URL
    PATTERNS = (checks.URL_RE, checks.BARE_URL_RE)


class IpAddressRecognizer(ChecksumRecognizer):
    ENTITY = "IP_ADDRESS"
    SCORE = SCORE_IP
    PATTERNS = (checks.IPV4_RE, checks.IPV6_RE)
    check = staticmethod(checks.is_valid_ip)


class RecordNumberRecognizer(PatternRecognizer):
    """The project's record/accession number patterns (DeidConfig.record_patterns), matched as
    written (case-sensitive unless the pattern says (?i))."""

    def __init__(self, language: str, patterns: Iterable[str]):
        patterns = list(patterns)
        for p in patterns:
            compile_record_pattern(p)
        super().__init__(
            supported_entity="RECORD_NUMBER",
            name="RecordNumberRecognizer",
            supported_language=language,
            patterns=[Pattern(f"record_{i}", p, SCORE_KNOWN) for i, p in enumerate(patterns)],
            global_regex_flags=regex.MULTILINE,
        )


def compile_record_pattern(pattern: str):
    """Compile one record pattern, or raise a ValueError that names it."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"record pattern {pattern!r} is not a regular expression (an empty or non-text value)")
    try:
        return regex.compile(pattern, regex.MULTILINE)
    except (regex.error, TypeError, ValueError) as exc:
        raise ValueError(f"record pattern '{pattern}' is not a valid regular expression: {exc}") from None


class DenyListRecognizer(PatternRecognizer):
    """The ward's own words (DeidConfig.deny_list): always found, whole words, any case."""

    def __init__(self, language: str, words: Iterable[str]):
        words = sorted({w.strip() for w in words if w and w.strip()}, key=len, reverse=True)
        super().__init__(
            supported_entity="DENY_LIST",
            name="DenyListRecognizer",
            supported_language=language,
            deny_list=words,
            deny_list_score=SCORE_KNOWN,
            global_regex_flags=_CASELESS,
        )


# ----------------------------------------------------------------------------- finders


class FinderRecognizer(EntityRecognizer):
    """An EntityRecognizer around a function text -> [(start, end)] (or (start, end, score))."""

    def __init__(self, entity: str, name: str, language: str, finder: Callable, score: float):
        self._finder = finder
        self._score = score
        super().__init__(supported_entities=[entity], name=name, supported_language=language)

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):
        out = []
        for hit in self._finder(text):
            start, end = hit[0], hit[1]
            score = hit[2] if len(hit) > 2 else self._score
            if end > start:
                out.append(_result(self, self.supported_entities[0], start, end, score))
        return out


def phone_recognizer(language: str) -> FinderRecognizer:
    regions = checks.PHONE_REGIONS[language]
    return FinderRecognizer("PHONE", "PhoneRecognizer", language, lambda t: checks.find_phones(t, regions), SCORE_PHONE)


def iban_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer("IBAN", "IbanRecognizer", language, checks.find_ibans, SCORE_CHECKSUM)


def ssn_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer("SSN", "SsnRecognizer", language, checks.find_ssns, SCORE_SSN)


def date_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer("DATE", "DateRecognizer", language, lambda t: dates.find_dates(t, language), SCORE_DATE)


def age_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer("AGE", "AgeRecognizer", language, lambda t: checks.find_ages(t, language), SCORE_AGE)


def address_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer(
        "ADDRESS", "AddressRecognizer", language, lambda t: addresses.find_addresses(t, language), SCORE_ADDRESS
    )


def titled_name_recognizer(language: str) -> FinderRecognizer:
    return FinderRecognizer(
        "NAME", "TitledNameRecognizer", language, lambda t: names.find_titled_names(t, language), SCORE_TITLED_NAME
    )


def ner_recognizer(language: str, run: Callable[[str], list[tuple[int, int, float]]]) -> FinderRecognizer:
    return FinderRecognizer("NAME", "NerRecognizer", language, run, 0.7)


# ----------------------------------------------------------------------------- known identities


def literal_type(value: str, language: str) -> str:
    """The type of a known non-name value: a fiscal code, a DNI, ... or a record number."""
    compact = "".join(value.split())
    if checks.is_valid_codice_fiscale(compact):
        return "CODICE_FISCALE"
    if len(compact) >= 9 and checks.is_valid_dni_nie(compact):
        return "DNI_NIE"
    if language == "en" and checks.is_valid_nhs(compact):
        return "NHS_NUMBER"
    if "@" in compact:
        return "EMAIL"
    return "RECORD_NUMBER"


class KnownIdentityRecognizer(EntityRecognizer):
    """The identifiers of one note's metadata (Detector.find(known=...)): names in all their
    variants (ml.deid.names), other values literally. Each result carries the value it is a
    variant of (recognition_metadata["canonical"])."""

    def __init__(self, language: str, values: Iterable[str]):
        values = [v for v in values if isinstance(v, str) and v.strip()]
        self.identities = names.KnownIdentities(values, language)
        self._types = {
            " ".join(v.split()).lower(): literal_type(v, language) for v in values if not names.is_name_value(v)
        }
        super().__init__(
            supported_entities=["NAME", *sorted(set(self._types.values()))],
            name="KnownIdentityRecognizer",
            supported_language=language,
        )

    def load(self) -> None:
        pass

    def analyze(self, text, entities, nlp_artifacts=None):
        out = []
        for m in self.identities.find(text):
            entity = "NAME" if m.is_name else self._types.get(m.canonical, "RECORD_NUMBER")
            score = SCORE_KNOWN_SURNAME if m.surname_alone else SCORE_KNOWN
            meta = {CANONICAL_KEY: m.canonical, SURNAME_ALONE_KEY: m.surname_alone}
            out.append(_result(self, entity, m.start, m.end, score, **meta))
        return out


def build_recognizers(
    language: str,
    record_patterns: Iterable[str] = (),
    deny_list: Iterable[str] = (),
    ner: Callable | None = None,
) -> list[EntityRecognizer]:
    """The recognizers of one language. Fiscal codes and DNI/NIE are looked for in every
    language (their check characters make them unmistakable); NHS numbers and SSNs in English
    notes only (ten and nine digits: in other languages, phone or lab numbers)."""
    recs: list[EntityRecognizer] = [
        CodiceFiscaleRecognizer(language),
        DniNieRecognizer(language),
        EmailRecognizer(language),
        UrlRecognizer(language),
        IpAddressRecognizer(language),
        iban_recognizer(language),
        phone_recognizer(language),
        date_recognizer(language),
        age_recognizer(language),
        address_recognizer(language),
        titled_name_recognizer(language),
    ]
    if language == "en":
        recs += [NhsNumberRecognizer(language), ssn_recognizer(language)]
    record_patterns = list(record_patterns)
    if record_patterns:
        recs.append(RecordNumberRecognizer(language, record_patterns))
    deny = [w for w in deny_list if w and w.strip()]
    if deny:
        recs.append(DenyListRecognizer(language, deny))
    if ner is not None:
        recs.append(ner_recognizer(language, ner))
    return recs
