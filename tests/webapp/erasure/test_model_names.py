"""An erasure row's name (its __str__: the admin's changelists and links) is in the active language, its
ids, names and stored codes kept; in English it reads as it always did. The Italian cases pass once
the catalogs hold the strings sent to the merge (issue 42)."""

import pytest
from django.utils import translation

from webapp.erasure import models as m


def rows():
    return {
        "erasure": m.ErasureRequest(pk=4, status="done"),
        "withdrawn": m.DatasetWithdrawal(dataset_id=2, erasure_id=4),
        "trained": m.TrainedOnErasedData(model_version_id=9),
    }


ENGLISH = {
    "erasure": "erasure 4 (done)",
    "withdrawn": "dataset 2 withdrawn by erasure 4",
    "trained": "model 9 trained on erased data",
}

ITALIAN = {
    "withdrawn": "dataset 2 ritirato dalla cancellazione 4",
    "trained": "modello 9 addestrato su dati cancellati",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]
