"""Corpus migration 0008 on SQLite: notes stored before the search index existed are found after it."""

import pytest
from django.core.management import call_command

from tests.webapp.migrating import migrate
from webapp.corpus import search
from webapp.corpus.models import Note, text_hash

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def test_notes_already_stored_are_indexed_by_the_migration():
    old = migrate([("corpus", "0007_task_decision_count")])
    try:
        corpus = old.get_model("corpus", "Corpus").objects.create(name="older", language="es")
        old.get_model("corpus", "Note").objects.create(
            corpus=corpus,
            external_id="o1",
            text="Hipertensión arterial.",
            content_hash=text_hash("Hipertensión arterial."),
        )
    finally:
        call_command("migrate", verbosity=0)
    found = search.matching(Note.objects.filter(corpus_id=corpus.pk), "HIPERTENSION", language="es")
    assert list(found.values_list("external_id", flat=True)) == ["o1"]
    Note.objects.filter(external_id="o1").delete()  # the delete trigger is back too
    assert not search.matching(Note.objects.all(), "hipertension", language="es").exists()
