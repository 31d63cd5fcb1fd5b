"""Finding notes by their words, on both databases (the `embedded` marker: make test runs this
module on PostgreSQL and again on SQLite): word forms, accents, case, phrases, "or", exclusion,
any query accepted. Where the databases differ, the help text says so and the tests hold it to it."""

import pytest
from django.db import connection
from django.urls import reverse
from django.utils.html import escape

from tests.projects import default_project
from webapp.corpus import search
from webapp.corpus.models import Corpus, Note

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def _corpus(name, language, texts):
    corpus = Corpus.objects.create(project=default_project(), name=name, language=language)
    for i, text in enumerate(texts):
        Note.objects.create(corpus=corpus, external_id=f"{name}-{i:03d}", text=text)
    return corpus


def _found(corpus, query):
    notes = search.matching(Note.objects.filter(corpus=corpus), query, language=corpus.language)
    return sorted(notes.values_list("external_id", flat=True))


SPANISH = [
    "Dolor abdominal intenso.",  # 000
    "Dolor torácico y distensión abdominal.",  # 001: both words, not the phrase
    "DOLORES ABDOMINALES desde ayer.",  # 002: the phrase in other forms, upper case
    "Sin dolor; fiebre alta.",  # 003
    "Hipertensión arterial.",  # 004
    "HIPERTENSIÓN conocida, fiebres.",  # 005
]


@pytest.fixture
def spanish():
    return _corpus("es", "es", SPANISH)


def test_a_word_finds_its_other_forms_in_spanish(spanish):
    assert _found(spanish, "fiebres") == ["es-003", "es-005"]
    assert _found(spanish, "fiebre") == ["es-003", "es-005"]
    assert _found(spanish, "dolores") == ["es-000", "es-001", "es-002", "es-003"]


def test_accents_and_case_are_ignored_in_spanish(spanish):
    for query in ("hipertension", "hipertensión", "HIPERTENSION", "Hipertensión"):
        assert _found(spanish, query) == ["es-004", "es-005"], query
    assert _found(spanish, "TORACICO") == ["es-001"]


def test_a_phrase_matches_only_notes_holding_it(spanish):
    assert _found(spanish, '"dolor abdominal"') == ["es-000", "es-002"]
    assert _found(spanish, "dolor abdominal") == ["es-000", "es-001", "es-002"]
    assert _found(spanish, '"abdominal dolor"') == []


def test_a_leading_minus_leaves_a_word_or_a_phrase_out(spanish):
    assert _found(spanish, "dolor -abdominal") == ["es-003"]
    assert _found(spanish, '-"dolor abdominal"') == ["es-001", "es-003", "es-004", "es-005"]
    assert _found(spanish, "-fiebre -dolor") == ["es-004"]


def test_or_joins_alternatives_each_of_whose_words_must_occur(spanish):
    assert _found(spanish, "fiebre or torácico") == ["es-001", "es-003", "es-005"]
    assert _found(spanish, "dolor fiebre or arterial") == ["es-003", "es-004"]


def test_an_italian_word_finds_its_other_forms():
    corpus = _corpus("it", "it", ["Paziente con forti dolori toracici.", "Nessun dolore riferito.", "Febbre alta."])
    assert _found(corpus, "dolore") == ["it-000", "it-001"]
    assert _found(corpus, "toracico") == ["it-000"]


def test_accents_elsewhere_are_what_the_help_text_says():
    corpus = _corpus("acc", "en", ["A naïve patient."])
    ignored = "case and accents are ignored" in search.help_text().lower()
    assert _found(corpus, "naive") == (["acc-000"] if ignored else [])
    assert _found(corpus, "NAÏVE") == ["acc-000"]
    assert ignored == (connection.vendor == "sqlite")  # PostgreSQL's English stemmer keeps accents


def test_an_english_word_finds_its_other_forms_and_every_word_must_occur():
    corpus = _corpus(
        "en", "en", ["Fractured left wrist after a fall.", "Two fractures of the ribs.", "Fall at home, no injury."]
    )
    assert _found(corpus, "fracture") == ["en-000", "en-001"]
    assert _found(corpus, "fracture fall") == ["en-000"]
    assert _found(corpus, "fall -fractured") == ["en-002"]


def test_the_id_prefix_still_finds_a_note():
    corpus = _corpus("ids", "en", ["Chest pain.", "Syncope."])
    assert _found(corpus, "ids-001") == ["ids-001"]


@pytest.mark.parametrize(
    "query",
    ['"chest', "pain & | ! : * ( )", "'", "\\", "-", "or or", "💊 ñ ü", "a" * 500, "x\x00y", "<script>", "%_",
     'NEAR(chest pain)', "chest:pain", '"" -"" ^pain', "pain*", "AND OR NOT"],
)  # fmt: skip
def test_no_query_is_refused(query):
    corpus = _corpus("odd", "en", ["Chest pain since morning."])
    _found(corpus, query)  # no error: every query is read as words, never as the index's syntax


def test_index_syntax_in_a_query_is_read_as_words():
    corpus = _corpus("syn", "en", ["Chest pain since morning.", "Near the chest wall."])
    assert _found(corpus, "NEAR(chest pain)") == []  # near, chest and pain must all occur
    assert _found(corpus, "chest -pain") == ["syn-001"]


def test_a_query_of_punctuation_alone_finds_nothing():
    corpus = _corpus("punct", "en", ["Chest pain."])
    assert _found(corpus, "& | !") == []


def test_a_corpus_whose_language_changes_is_searched_in_the_new_language():
    corpus = _corpus("switch", "xx", ["Dolori addominali."])
    assert _found(corpus, "dolore") == []  # no stemmer for "xx": words as written
    corpus.language = "it"
    corpus.save()
    assert _found(corpus, "dolore") == ["switch-000"]


def test_the_index_follows_edits_and_deletes():
    corpus = _corpus("edit", "en", ["Chest pain.", "Headache."])
    note = Note.objects.get(external_id="edit-000")
    note.text = "Syncope at rest."
    note.save()
    assert _found(corpus, "chest") == []
    assert _found(corpus, "syncope") == ["edit-000"]
    Note.objects.filter(external_id="edit-001").delete()
    assert _found(corpus, "headache") == []


def test_matches_come_in_id_order_whether_rare_or_common(monkeypatch):
    corpus = _corpus("order", "en", [f"Note {i}: {'chest pain' if i % 3 == 0 else 'headache'}." for i in range(12)])
    notes = Note.objects.filter(corpus=corpus)
    expected = list(search.matching(notes, "pain", language="en").order_by("id").values_list("id", flat=True))
    for cap in (1, 1000):  # common (the id walk), then rare (read through the indexes and sorted)
        monkeypatch.setattr(search, "RARE_MATCHES", cap)
        found = search.in_id_order(search.matching(notes, "pain", language="en"))
        assert list(found.values_list("id", flat=True)) == expected and len(expected) == 4


def test_the_corpus_page_says_what_the_search_box_does_here(client, researcher):
    corpus = _corpus("page", "es", SPANISH[:1])
    client.force_login(researcher)
    response = client.get(reverse("corpus:detail", args=[corpus.pk]), {"q": "DOLORES"})
    assert [r["external_id"] for r in response.context["page"].notes] == ["page-000"]
    assert escape(search.HELP[connection.vendor]) in response.content.decode()
