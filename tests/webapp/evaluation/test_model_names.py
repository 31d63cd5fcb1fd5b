"""A evaluation row's name (its __str__: the admin's changelists and links) is in the active language, its ids
and stored codes kept (a status by its label); in English it reads as it always did (issue 42)."""

import pytest
from django.utils import translation

from webapp.evaluation import models as m


def rows():
    return {
        "evaluation": m.RelevanceEvaluation(pk=6, status="failed"),
    }


ENGLISH = {
    "evaluation": "relevance evaluation 6 (failed)",
}

ITALIAN = {
    "evaluation": "valutazione della rilevanza 6 (non riuscita)",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
