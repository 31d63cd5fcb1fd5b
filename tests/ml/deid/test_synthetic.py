"""ml.deid.synthetic: injected identifiers sit at their gold offsets, are valid, and leave the real
note's text as it was."""

import random
import re
from collections import Counter

import pytest
from stdnum import iban as std_iban
from stdnum.es import dni as std_dni
from stdnum.es import nie as std_nie
from stdnum.gb import nhs as std_nhs
from stdnum.it import codicefiscale as std_cf
from stdnum.us import ssn as std_ssn

from ml.deid.synthetic import ALLOW_TERMS, RECORD_PATTERNS, SLOTS, SPANISH_FILLER, TEMPLATES, inject
from ml.deid.types import TYPES
from ml.synthetic import generate_notes

BASES = {
    "it": [n.text for n in generate_notes(6, seed=3, language="it", max_words=150)],
    "en": [n.text for n in generate_notes(6, seed=3, language="en", max_words=150)],
    "es": [" ".join(SPANISH_FILLER)] * 6,
}

CHECKS = {
    "CODICE_FISCALE": std_cf.is_valid,
    "DNI_NIE": lambda v: std_dni.is_valid(v) or std_nie.is_valid(v),
    "NHS_NUMBER": std_nhs.is_valid,
    "SSN": std_ssn.is_valid,
    "IBAN": std_iban.is_valid,
}


def notes(language, n=60):
    return [inject(BASES[language][i % 6], language, random.Random(i), patient=i) for i in range(n)]


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_gold_offsets_values_and_the_base_text(language):
    for i, note in enumerate(notes(language)):
        assert note.gold
        for gold in note.gold:
            assert note.text[gold.start : gold.end] == gold.value
            assert gold.value == gold.value.strip() and gold.value
        spans = sorted((g.start, g.end) for g in note.gold)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # none overlap
        # the real note is all there, in order, untouched
        assert "".join(note.text[a:b] for a, b in note.base_spans) == BASES[language][i % 6].strip()
        for gold in note.gold:
            assert not any(a < gold.end and gold.start < b for a, b in note.base_spans)
        assert re.fullmatch(RECORD_PATTERNS[language][0], note.metadata["mrn"])


@pytest.mark.parametrize("language", ["it", "es", "en"])
def test_every_type_of_the_language_appears_and_checks(language):
    seen = Counter()
    for note in notes(language, 150):
        for gold in note.gold:
            seen[gold.key] += 1
            if gold.type in CHECKS:
                assert CHECKS[gold.type](gold.value), (gold.type, gold.value)
            if gold.type == "AGE":
                assert int(gold.value) >= 90
    expected = {
        SLOTS[slot][0]
        for part in TEMPLATES[language].values()
        for t in part
        for slot in re.findall(r"\{(\w+)\}", t)
        if slot in SLOTS
    }
    assert {key.split(":")[0] for key in seen} == expected
    assert seen["NAME:metadata"] >= 150 and seen["NAME:titled"] >= 150
    assert {key.split(":")[0] for key in seen} <= set(TYPES)


def test_metadata_name_variants_are_the_patients():
    for note in notes("it", 40):
        name = note.metadata["patient_name"].casefold().split()
        for gold in note.gold:
            if gold.key == "NAME:metadata":
                tokens = [t.strip(".,").casefold() for t in gold.value.split()]
                assert all(any(n.startswith(t) or n.replace("'", "") == t for n in name) for t in tokens), gold.value


def test_allow_terms_are_located():
    found = Counter()
    for note in notes("en", 80):
        for a, b in note.allow_spans:
            found[note.text[a:b].casefold()] += 1
    assert {"parkinson", "crohn", "babinski"} <= set(found)
    assert set(found) <= {t.casefold() for t in ALLOW_TERMS}


def test_deterministic():
    a = inject(BASES["it"][0], "it", random.Random(5), patient=1)
    b = inject(BASES["it"][0], "it", random.Random(5), patient=1)
    assert a == b
    assert inject(BASES["it"][0], "it", random.Random(6), patient=1).text != a.text


def test_unknown_language():
    with pytest.raises(ValueError, match="language"):
        inject("x", "fr", random.Random(0))
