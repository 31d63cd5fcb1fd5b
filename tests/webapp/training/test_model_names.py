"""A training row's name (its __str__: the admin's changelists and links) is in the active language,
its ids, names and stored words kept; in English it reads as it always did. The Italian cases pass
once the catalogs hold the strings sent to the merge (issue 42)."""

import pytest
from django.utils import translation

from webapp.corpus.models import Corpus
from webapp.training.models import LabeledSplit, RunLog, RunMetric, RunPrediction, SplitItem, TrainingRun


def rows():
    return {
        "split": LabeledSplit(pk=4, corpus=Corpus(name="ward"), seed=7, test_ratio=0.2),
        "item": SplitItem(split_id=4, part="test", annotation_id=9),
        "run": TrainingRun(pk=3, kind="heads", status="done"),
        "metric": RunMetric(run_id=3, phase="train", step=12),
        "log": RunLog(run_id=3, level="info", message="Done in 4.2 s."),
        "prediction": RunPrediction(run_id=3, note_id=5, task_id=6, predicted="yes"),
    }


ENGLISH = {
    "split": "split 4 of ward (seed 7, test 0.2)",
    "item": "split 4 test: annotation 9",
    "run": "run 3 (Classification heads on the frozen model (CH), done)",
    "metric": "run 3 train step 12",
    "log": "run 3 info: Done in 4.2 s.",
    "prediction": "run 3 note 5 task 6: yes",
}

ITALIAN = {
    "split": "suddivisione 4 di ward (seme 7, test 0.2)",
    "item": "suddivisione 4 test: annotazione 9",
    "metric": "addestramento 3 train passo 12",
    "prediction": "addestramento 3 nota 5 quesito 6: yes",
}


@pytest.mark.parametrize("name", ENGLISH)
def test_in_english_a_row_reads_as_it_always_did(name):
    with translation.override("en"):
        assert str(rows()[name]) == ENGLISH[name]


@pytest.mark.parametrize("name", ITALIAN)
def test_in_italian_a_row_is_named_in_italian_with_its_values_as_stored(name):
    with translation.override("it"):
        assert str(rows()[name]) == ITALIAN[name]


def test_in_italian_a_run_names_its_kind_and_status_by_their_labels():
    with translation.override("it"):
        name = str(rows()["run"])
        kind = str(TrainingRun(kind="heads").get_kind_display())
        status = str(TrainingRun(status="done").get_status_display()).lower()
    assert name == f"addestramento 3 ({kind}, {status})"
    assert status != "done"
