"""An account row's name (its __str__: the admin's changelists and links) is in the active language, its
ids, names and stored codes kept; in English it reads as it always did. The Italian cases pass once
the catalogs hold the strings sent to the merge (issue 42)."""

import pytest
from django.utils import translation

from webapp.accounts import models as m


def rows():
    return {
        "identity": m.OIDCIdentity(subject="abc", issuer="https://idp"),
        "password": m.PasswordChangeRequired(user_id=3),
        "language": m.Preference(user_id=3, language="it"),
        "no_language": m.Preference(user_id=3, language="", claimed_language=""),
    }


ENGLISH = {
    "identity": "abc at https://idp",
    "password": "user 3 must change the one-time password",
    "language": "user 3: it language",
    "no_language": "user 3: no language",
}

ITALIAN = {
    "identity": "abc presso https://idp",
    "password": "utente 3: deve cambiare la password temporanea",
    "language": "utente 3: lingua it",
    "no_language": "utente 3: nessuna lingua",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
