"""webapp.db.prepared: a query built once per process and shape answers what the ORM's
queryset answers for every request's values, and a shape whose values the ORM converts is not
kept (it runs through the ORM each time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.corpus.models import Note
from webapp.db.prepared import Prepared
from webapp.review import noteview, peakstore, queue, selection
from webapp.review.decisions import PeakContext, decide

from .fabricate import TEXT, add_map, query, word_span
from .test_views_query_counts import store_all


@pytest.fixture
def ward(corpus, tasks, base, sharp, note, maps):
    notes = [note]
    for i in range(4):
        extra = Note.objects.create(corpus=corpus, external_id=f"prepared-{i}", text=TEXT)
        add_map(extra, tasks["heart"], base, {"130": 0.9, "febrile": 0.9})
        add_map(extra, tasks["pacemaker"], base, {"Pacemaker": 1.0})
        notes.append(extra)
    store_all(corpus, base, sharp)
    return notes


def test_the_queue_window_answers_as_its_queryset_for_every_shape_and_value(
    corpus, tasks, base, sharp, clinician, ward
):
    sel = selection.for_corpus(corpus, query(tasks["heart"], base, sharp))
    ctx = PeakContext(ward[1], tasks["heart"], base, "attnlrp", "en", sel.config)
    decide(ctx, clinician, start=word_span(TEXT, "130")[0], end=word_span(TEXT, "130")[1], decision="accept",
           expected_version=0)  # fmt: skip
    values = {"corpus_id": corpus.pk, "model_id": base.pk, "method": "attnlrp", "template": "en",
              "config": sel.config, "key": peakstore.params_key(sharp.params), "reviewer_id": clinician.pk}  # fmt: skip
    for one_task in (False, True):
        for cursor in (None, (ward[0].pk, tasks["heart"].pk), (ward[2].pk, 0)):
            for size in (1, 25):
                shape = ((), one_task, cursor is not None, size)
                given = {**values, **({"task_id": tasks["heart"].pk} if one_task else {})}
                given |= {"note_after": cursor[0], "task_after": cursor[1]} if cursor else {}
                assert queue.WINDOW.rows(shape, **given) == list(queue.WINDOW.queryset(shape, **given))
    assert all(kept is not None for kept in queue.WINDOW._kept.values())  # every shape's SQL was kept


def test_a_notes_stored_peaks_and_neighbours_are_those_the_orm_reads(note, tasks, base, sharp, ward):
    sel = selection.for_note(ward[2], query(tasks["heart"], base, sharp))
    maps = sel.maps().filter(note=ward[2], task=sel.task, model_version=sel.model)
    assert noteview.stored_peaks(ward[2], sel, arrays=False)[1:] == tuple(
        peakstore.peaks_of_map(maps, ward[2], sel.params, arrays=False, store=False)[1:]
    )
    assert noteview.neighbours(ward[2], sel) == (ward[1].pk, ward[3].pk)
    assert noteview.neighbours(ward[0], sel) == (None, ward[1].pk)
    with CaptureQueriesContext(connection) as queries:
        noteview.neighbours(ward[4], sel)
    assert len(queries) == 1


def test_a_value_the_orm_converts_is_not_kept_and_still_answers(corpus, note):
    def build(_shape, *, prefix):
        return Note.objects.filter(corpus=corpus, external_id__startswith=prefix).values_list("external_id")

    prepared = Prepared(build)
    assert prepared.rows(None, prefix="n") == [("n1",)]  # LIKE 'n%': the probe comes back converted
    assert prepared._kept == {(None, ("prefix",)): None}
    assert prepared.rows(None, prefix="zz") == []
    with pytest.raises(TypeError):  # a flag changes the SQL: it belongs in the shape
        Prepared(build).rows(None, prefix=True)
