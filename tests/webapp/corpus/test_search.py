"""Finding notes by their words: stemmed in the corpus's language on PostgreSQL, any query accepted."""

import pytest

from webapp.corpus import search
from webapp.corpus.models import Corpus, Note

pytestmark = pytest.mark.django_db


def _corpus(name, language, texts):
    corpus = Corpus.objects.create(name=name, language=language)
    for i, text in enumerate(texts):
        Note.objects.create(corpus=corpus, external_id=f"{name}-{i:03d}", text=text)
    return corpus


def _found(corpus, query, **kw):
    return sorted(
        search.matching(Note.objects.filter(corpus=corpus), query, language=corpus.language, **kw).values_list(
            "external_id", flat=True
        )
    )


def test_an_italian_word_finds_its_other_forms():
    corpus = _corpus("it", "it", ["Paziente con forti dolori toracici.", "Nessun dolore riferito.", "Febbre alta."])
    assert _found(corpus, "dolore") == ["it-000", "it-001"]
    assert _found(corpus, "toracico") == ["it-000"]


def test_an_english_word_finds_its_other_forms_and_every_word_must_occur():
    corpus = _corpus(
        "en", "en", ["Fractured left wrist after a fall.", "Two fractures of the ribs.", "Fall at home, no injury."]
    )
    assert _found(corpus, "fracture") == ["en-000", "en-001"]
    assert _found(corpus, "fracture fall") == ["en-000"]
    assert _found(corpus, "fall -fractured") == ["en-002"]


def test_a_spanish_corpus_is_stemmed_in_spanish():
    corpus = _corpus("es", "es", ["Dolor abdominal intenso.", "Sin dolores."])
    assert _found(corpus, "dolores") == ["es-000", "es-001"]


def test_the_id_prefix_still_finds_a_note():
    corpus = _corpus("ids", "en", ["Chest pain.", "Syncope."])
    assert _found(corpus, "ids-001") == ["ids-001"]


@pytest.mark.parametrize(
    "query", ['"chest', "pain & | ! : * ( )", "'", "\\", "-", "or or", "💊 ñ ü", "a" * 500, "x\x00y", "<script>", "%_"]
)
def test_no_query_is_refused(query):
    corpus = _corpus("odd", "en", ["Chest pain since morning."])
    _found(corpus, query)  # no error: websearch_to_tsquery reads any text


def test_a_phrase_in_quotes_keeps_its_words_together():
    corpus = _corpus("ph", "en", ["Chest pain at rest.", "Pain in the chest wall."])
    assert _found(corpus, '"chest pain"') == ["ph-000"]


def test_a_corpus_whose_language_changes_is_searched_in_the_new_language():
    corpus = _corpus("switch", "xx", ["Dolori addominali."])
    assert _found(corpus, "dolore") == []  # 'simple': no stemming
    corpus.language = "it"
    corpus.save()
    assert _found(corpus, "dolore") == ["switch-000"]


def test_without_postgresql_every_word_must_occur_as_written():
    corpus = _corpus("lite", "en", ["Chest pain since morning.", "Pain in the leg."])
    assert _found(corpus, "pain chest", vendor="sqlite") == ["lite-000"]
    assert _found(corpus, "PAIN", vendor="sqlite") == ["lite-000", "lite-001"]
    assert _found(corpus, "", vendor="sqlite") == ["lite-000", "lite-001"]


def test_matches_come_in_id_order_whether_rare_or_common(monkeypatch):
    corpus = _corpus("order", "en", [f"Note {i}: {'chest pain' if i % 3 == 0 else 'headache'}." for i in range(12)])
    notes = Note.objects.filter(corpus=corpus)
    expected = list(search.matching(notes, "pain", language="en").order_by("id").values_list("id", flat=True))
    for cap in (1, 1000):  # common (the id walk), then rare (read through the indexes and sorted)
        monkeypatch.setattr(search, "RARE_MATCHES", cap)
        found = search.in_id_order(search.matching(notes, "pain", language="en"))
        assert list(found.values_list("id", flat=True)) == expected and len(expected) == 4
