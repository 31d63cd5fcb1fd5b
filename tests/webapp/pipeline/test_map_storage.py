"""Compact map storage: a note's token offsets are stored once for all its maps tokenized alike,
each map keeps its float16 scores, and reading a map's arrays is one query."""

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ml.relevance import RelevanceConfig
from tests.webapp.pipeline.factories import make_corpus, make_model_version
from webapp.corpus.models import Task
from webapp.pipeline.models import MapConfiguration, NoteTokens, RelevanceMap, StoredArrays

SPAN = RelevanceConfig(explain="span")
DEFAULT = RelevanceConfig()


def _offsets(n, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, n)
    starts = np.concatenate([[0], np.cumsum(lengths + rng.integers(0, 2, n))[:-1]])
    return np.stack([starts, starts + lengths], axis=1).astype(np.int32)


@pytest.fixture
def nine_tasks(db):
    return [Task.objects.create(slug=f"t{i}", description=f"task {i}", options=["y", "n"]) for i in range(9)]


def _store(notes, tasks, model, offsets_of, config=DEFAULT, seed=0):
    rng = np.random.default_rng(seed)
    computed = [
        ((note.pk, task.pk), StoredArrays(offsets_of(note), rng.random(len(offsets_of(note))).astype(np.float32), "y"))
        for note in notes
        for task in tasks
    ]
    RelevanceMap.objects.store(
        computed, model_version_id=model.pk, method=config.method, template=config.template, config_key=config.key
    )
    return {key: result for key, result in computed}


def test_nine_maps_of_a_note_share_one_offsets_row_and_read_back_equal(nine_tasks):
    corpus, base = make_corpus(2), make_model_version()
    notes = list(corpus.notes.order_by("pk"))
    offsets = {note.pk: _offsets(300, note.pk) for note in notes}
    computed = _store(notes, nine_tasks, base, lambda note: offsets[note.pk])
    assert RelevanceMap.objects.count() == 18
    assert NoteTokens.objects.count() == 2  # one per note, not one per map
    assert MapConfiguration.objects.count() == 1
    rows = list(RelevanceMap.objects.order_by("pk").with_arrays("note_id", "task_id", "target_token"))
    assert len(rows) == 18
    for note_id, task_id, target, (got_offsets, got_scores) in rows:
        want = computed[(note_id, task_id)]
        np.testing.assert_array_equal(got_offsets, want.offsets)
        np.testing.assert_array_equal(got_scores, want.scores.astype(np.float16).astype(np.float32))
        assert target == "y"


def test_other_models_and_configurations_share_the_row_and_another_tokenization_gets_its_own(nine_tasks):
    corpus, base, dsm = make_corpus(1), make_model_version(), make_model_version(name="dsm")
    (note,) = corpus.notes.all()
    same, other = _offsets(50), _offsets(50, seed=7)
    _store([note], nine_tasks, base, lambda n: same)
    _store([note], nine_tasks, dsm, lambda n: same, config=SPAN)
    assert NoteTokens.objects.count() == 1 and RelevanceMap.objects.count() == 18
    _store([note], nine_tasks[:1], base, lambda n: other, seed=3)  # computed again, another tokenizer
    assert NoteTokens.objects.count() == 2 and RelevanceMap.objects.count() == 18
    (arrays,) = RelevanceMap.objects.filter(task=nine_tasks[0], model_version=base).with_arrays()
    np.testing.assert_array_equal(arrays[0][0], other)


def test_reading_arrays_is_one_query_whatever_the_number_of_maps(nine_tasks):
    corpus, base = make_corpus(3), make_model_version()
    _store(list(corpus.notes.all()), nine_tasks, base, lambda note: _offsets(40, note.pk))
    with CaptureQueriesContext(connection) as queries:
        rows = list(RelevanceMap.objects.for_config("attnlrp", "en").filter(model_version=base).with_arrays("pk"))
        first = RelevanceMap.objects.for_config("attnlrp", "en").order_by("pk").with_arrays().first()
    assert len(rows) == 27 and len(queries) == 2
    lowest = min(rows, key=lambda row: row[0])
    np.testing.assert_array_equal(first[0][1], lowest[1][1])


def test_a_map_with_more_scores_than_offsets_is_refused_before_anything_is_written(nine_tasks):
    corpus, base = make_corpus(1), make_model_version()
    (note,) = corpus.notes.all()
    bad = [((note.pk, nine_tasks[0].pk), StoredArrays(_offsets(3), np.zeros(4, np.float32)))]
    with pytest.raises(ValueError, match="scores"):
        RelevanceMap.objects.store(bad, model_version_id=base.pk, method="attnlrp", template="en", config_key="")
    assert not NoteTokens.objects.exists() and not RelevanceMap.objects.exists()


def test_deleting_a_note_deletes_its_maps_and_its_offsets(nine_tasks):
    corpus, base = make_corpus(2), make_model_version()
    notes = list(corpus.notes.order_by("pk"))
    _store(notes, nine_tasks, base, lambda note: _offsets(20, note.pk))
    notes[0].delete()
    assert RelevanceMap.objects.count() == 9 and NoteTokens.objects.count() == 1
    assert set(RelevanceMap.objects.values_list("note_id", flat=True)) == {notes[1].pk}
