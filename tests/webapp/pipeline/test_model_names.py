"""A relevance row's name (its __str__: the admin's changelists and links) is in the active language, its
ids, names and stored codes kept; in English it reads as it always did. The Italian cases pass once
the catalogs hold the strings sent to the merge (issue 42)."""

import pytest
from django.utils import translation

from webapp.pipeline import models as m


def rows():
    return {
        "job": m.RelevanceJob(pk=5, status="running"),
        "chunk": m.RelevanceChunk(job_id=5, index=2, status="queued"),
        "map": m.RelevanceMap(note_id=1, task_id=2, model_version_id=3, config_id=4),
        "import": m.MapImport(pk=6, maps=1),
        "imports": m.MapImport(pk=6, maps=30),
        "import_job": m.MapImportJob(pk=7),
    }


ENGLISH = {
    "job": "relevance job 5 (running)",
    "chunk": "job 5 chunk 2 (queued)",
    "map": "map note=1 task=2 model=3 config=4",
    "import": "map import 6 (1 maps)",
    "imports": "map import 6 (30 maps)",
    "import_job": "map import job 7",
}

ITALIAN = {
    "map": "mappa nota=1 quesito=2 modello=3 configurazione=4",
    "import": "importazione di mappe 6 (1 mappa)",
    "imports": "importazione di mappe 6 (30 mappe)",
    "import_job": "elaborazione di importazione mappe 7",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
