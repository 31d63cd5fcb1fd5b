"""Corpus migration 0008 on SQLite: notes stored before the search index existed are found after it."""

import pytest
from django.core.management import call_command

from webapp.corpus import search
from webapp.corpus.models import Corpus, Note

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def test_notes_already_stored_are_indexed_by_the_migration():
    call_command("migrate", "corpus", "0007", verbosity=0)
    try:
        corpus = Corpus.objects.create(name="older", language="es")
        Note.objects.create(corpus=corpus, external_id="o1", text="Hipertensión arterial.")
    finally:
        call_command("migrate", "corpus", verbosity=0)
    found = search.matching(Note.objects.filter(corpus=corpus), "HIPERTENSION", language="es")
    assert list(found.values_list("external_id", flat=True)) == ["o1"]
    Note.objects.filter(external_id="o1").delete()  # the delete trigger is back too
    assert not search.matching(Note.objects.all(), "hipertension", language="es").exists()
