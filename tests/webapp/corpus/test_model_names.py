"""A corpus row's name (its __str__: the admin's changelists and links) is in the active language, its ids
and stored codes kept (a status by its label); in English it reads as it always did (issue 42)."""

import pytest
from django.utils import translation

from webapp.corpus import models as m


def rows():
    return {
        "guideline": m.TaskGuideline(task_id=3, version=2),
        "task_state": m.ProjectTaskState(task_id=3, project_id=5, retired=True),
        "import": m.ImportJob(pk=7, status="done"),
    }


ENGLISH = {
    "guideline": "3 guideline v2",
    "task_state": "3 in project 5 (retired)",
    "import": "import 7 (done)",
}

ITALIAN = {
    "guideline": "linee guida di 3 v2",
    "task_state": "3 nel progetto 5 (ritirato)",
    "import": "importazione 7 (completata)",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
