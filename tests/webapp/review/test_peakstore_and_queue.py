"""Stored peaks (webapp.review.peakstore) equal freshly computed ones, whatever changed (profile,
thresholds, a recomputed map), and the queue's indexed next pair follows the scanning rule it
replaced: by (note, task), the first pair with a peak this reviewer has not decided."""

import random

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ml.peaks import peaks_of_rows
from webapp.corpus.models import Note
from webapp.pipeline.models import RelevanceMap
from webapp.review import decisions, peakstore, queue
from webapp.review.decisions import PeakContext
from webapp.review.models import MapPeaks, PeakDecision
from webapp.review.selection import Selection

from .fabricate import TEXT, add_map, tokens

WORDS = ["130", "tachycardic", "febrile", "Pacemaker", "2019", "BP", "ok"]


@pytest.fixture
def sel(base, sharp):
    return Selection(None, base, "attnlrp", "en", sharp, sharp.params)


@pytest.fixture
def ward(corpus, tasks, base):
    """Twelve notes x two tasks, each map peaking on a random handful of words (some on none)."""
    rng = random.Random(7)
    notes = [Note.objects.create(corpus=corpus, external_id=f"w{i:02d}", text=TEXT) for i in range(12)]
    for note in notes:
        for task in tasks.values():
            add_map(note, task, base, {w: 0.9 for w in rng.sample(WORDS, rng.randint(0, 3))})
    return notes


def scanned_rule(corpus, sel, reviewer, after=None):
    """The rule as the queue applied it before peaks were stored: scan every map in order,
    compute its peaks, serve the first with a peak the reviewer has not decided."""
    rows = list(
        queue.selection_maps(corpus, sel).order_by("note_id", "task_id").with_arrays("id", "note_id", "task_id")
    )
    if after is not None:
        rows = [r for r in rows if (r[1], r[2]) > tuple(after)]
    texts = dict(Note.objects.values_list("pk", "text"))
    decided = set(PeakDecision.objects.filter(reviewer=reviewer).values_list("note_id", "task_id", "start", "end"))
    for p in peaks_of_rows(rows, texts, sel.params):
        if p.fits and any((p.note_id, p.task_id, a, b) not in decided for a, b in p.char_spans):
            return (p.note_id, p.task_id)
    return None


def decide_all(pair, sel, reviewer, *, leave=0):
    """Accept every peak of the pair but the last `leave` ones."""
    note = Note.objects.get(pk=pair[0])
    m = RelevanceMap.objects.filter(note_id=pair[0], task_id=pair[1], model_version=sel.model)
    spans, _ = peakstore.spans_of(m, sel.params, note, store=True)
    ctx = PeakContext(note, m.get().task, sel.model, sel.method, sel.template)
    mine = set(
        PeakDecision.objects.filter(reviewer=reviewer, note_id=pair[0], task_id=pair[1]).values_list("start", "end")
    )
    for a, b in [s for s in spans if s not in mine][: max(0, len(spans) - len(mine) - leave)]:
        decisions.decide(ctx, reviewer, start=a, end=b, decision="accept", expected_version=0)


def test_the_indexed_next_pair_follows_the_scanning_rule_through_a_review(corpus, sel, ward, clinician):
    rng, after, served = random.Random(3), None, []
    for _ in range(40):
        expected = scanned_rule(corpus, sel, clinician, after)
        got = queue.next_pair(corpus, sel, clinician, after)
        assert got.pair == expected
        if got.pair is None:
            after = None  # the reviewer starts again from the top
            if scanned_rule(corpus, sel, clinician) is None:
                break
            continue
        served.append(got.pair)
        decide_all(got.pair, sel, clinician, leave=rng.choice([0, 0, 1]))  # sometimes leaves one undecided
        after = got.pair if rng.random() < 0.7 else None
    assert len(served) > 10 and scanned_rule(corpus, sel, clinician) is None


def test_it_never_serves_a_pair_the_reviewer_finished(corpus, sel, ward, clinician, admin_user):
    first = queue.next_pair(corpus, sel, clinician).pair
    decide_all(first, sel, clinician)
    for after in [None, *[(n.pk, 0) for n in ward]]:
        assert queue.next_pair(corpus, sel, clinician, after).pair != first
    assert queue.next_pair(corpus, sel, admin_user).pair == first  # another reviewer still gets it


def test_a_second_request_computes_nothing(corpus, sel, ward, clinician, django_assert_max_num_queries):
    first = queue.next_pair(corpus, sel, clinician)
    assert first.computed == 24  # the first window (FIRST_BATCH maps) holds the whole ward
    with django_assert_max_num_queries(1):  # the window, with whether each map's peaks are stored and open
        again = queue.next_pair(corpus, sel, clinician)
    assert again.computed == 0 and again.pair == first.pair


def stored(map_obj, params):
    return MapPeaks.objects.get(map=map_obj, params_key=peakstore.params_key(params))


def computed(map_obj, params):
    row = RelevanceMap.objects.filter(pk=map_obj.pk).with_arrays("id", "note_id", "task_id").get()
    return [list(map(int, s)) for s in peaks_of_rows([row], {map_obj.note_id: map_obj.note.text}, params)[0].char_spans]


def test_stored_peaks_equal_computed_peaks_after_a_profile_or_threshold_change(ward, tasks, base, sharp):
    m = RelevanceMap.objects.filter(note=ward[0], task=tasks["heart"], model_version=base)
    add_map(ward[0], tasks["heart"], base, {"130": 0.9, "tachycardic": 0.45, "febrile": 0.3})
    peakstore.ensure(m, sharp.params)
    assert stored(m.get(), sharp.params).spans == computed(m.get(), sharp.params)
    sharp.lower, sharp.upper = 0.35, 0.5  # the profile edited in place: another key, other peaks
    sharp.save()
    assert computed(m.get(), sharp.params) != stored(m.get(), sharp.params.with_(lower=0.2, upper=0.4)).spans
    peakstore.ensure(m, sharp.params)
    assert stored(m.get(), sharp.params).spans == computed(m.get(), sharp.params)
    lower = sharp.params.with_(lower=0.1, upper=0.28)  # sliders moved
    spans, fits = peakstore.spans_of(m, lower, ward[0], store=False)
    assert fits and [list(s) for s in spans] == computed(m.get(), lower)
    assert not MapPeaks.objects.filter(params_key=peakstore.params_key(lower)).exists()  # not kept


def test_a_recomputed_map_makes_its_stored_peaks_stale_and_they_are_recomputed(
    corpus, sel, ward, tasks, base, clinician
):
    m = RelevanceMap.objects.filter(note=ward[0], task=tasks["heart"], model_version=base)
    add_map(ward[0], tasks["heart"], base, {"130": 0.9})
    peakstore.ensure(m, sel.params)
    before = stored(m.get(), sel.params).spans
    scores = np.zeros(len(tokens(TEXT)), np.float32)
    scores[-3] = 1.0  # the map computed again, now peaking elsewhere (stored in place, same id)
    RelevanceMap.objects.store_one(ward[0], tasks["heart"], base, tokens(TEXT), scores)
    assert peakstore.missing(m, peakstore.params_key(sel.params)).exists()
    spans, _ = peakstore.spans_of(m, sel.params, ward[0], store=True)
    assert [list(s) for s in spans] == computed(m.get(), sel.params) != before
    assert stored(m.get(), sel.params).spans == computed(m.get(), sel.params)
    assert MapPeaks.objects.filter(map=m.get()).count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the plan asked of is PostgreSQL's")
@pytest.mark.parametrize("window", [queue.FIRST_BATCH, queue.BATCH])
def test_the_window_query_reads_each_maps_stored_peaks_by_index_however_many_are_stored(
    window, db, clinician, monkeypatch
):
    """With every map's peaks stored, the queue's window must still look up its own maps' rows:
    asked as EXISTS, PostgreSQL hashed the whole store for each request (chosen for every map the
    selection could return), so a ward's queue step slowed as its review went on."""
    from benchmarks.review_pages import insert_inputs

    objects = insert_inputs(3_000, seed=0)
    profile = objects["profile"]
    sel = Selection(None, objects["model"], "attnlrp", "en", profile, profile.params)
    maps = queue.selection_maps(objects["corpus"], sel)
    assert peakstore.ensure(maps, sel.params) == 3_000
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE review_mappeaks")
        cursor.execute("ANALYZE review_storedpeak")
    monkeypatch.setattr(queue, "FIRST_BATCH", window)
    with CaptureQueriesContext(connection) as captured:
        assert queue.next_pair(objects["corpus"], sel, clinician).pair is not None
    (sql,) = [q["sql"] for q in captured.captured_queries if "review_storedpeak" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "hashed SubPlan" not in plan and "Seq Scan on review_mappeaks" not in plan, plan
    assert "Seq Scan on review_storedpeak" not in plan, plan
