"""The review queue: the next (note, task) pair the reviewer has not finished.

Order: maps of the corpus for the chosen model version, method and template (and task, if one
is chosen; retired tasks never), by (note id, task id), starting after the pair the reviewer is
on. A pair is served when it has at least one peak (under the parameters in effect) that THIS
reviewer has not decided on; pairs with no peak, and pairs whose every peak the reviewer decided,
are skipped.

Each request walks the maps after the cursor in windows read by the maps' unique index (the
first FIRST_BATCH maps, then BATCH at a time, each map read with whether its stored peaks are
valid), at most SCAN maps a request. In a window, peaks come from the store
(webapp.review.peakstore: computed once per map and peak setting, stale when the map is
recomputed; the window's missing ones are computed and stored first, with those of the next
AHEAD maps), and one query finds the window's first pair with a stored peak that has no
decision of this reviewer (an anti-join against PeakDecision's unique index); the window's
query asks that of each map too, so once a window's peaks are stored, a request is one indexed
query over it and computes nothing. Both questions are scalar subqueries
(peakstore.first_of), looked up by index for the window's maps only, so the cost does not grow
with the corpus, with the peaks stored or with what was reviewed. When SCAN maps were looked at
without finding a pair, the page offers to continue from where the request stopped. The
window's query is built by the ORM once per process and shape and run with each request's
values (webapp.db.prepared): making it cost the server twenty times what running it cost
PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from django.db.models import Exists, Q, Subquery

from webapp.db.prepared import Prepared
from webapp.pipeline.models import RelevanceMap
from webapp.review import catalog, peakstore

FIRST_BATCH = 25  # the first window: nearly always holds the next pair
BATCH = 500
SCAN = 5_000
# Peaks stored ahead of the cursor when a window lacks some: the window moves on by a pair or so
# a request, and storing only what it lacked had nearly every request compute a map and write
# a transaction (1-reviewer queue step ~28 ms at p50 instead of ~17).
AHEAD = 200


@dataclass(frozen=True)
class QueueResult:
    pair: tuple[int, int] | None  # (note_id, task_id) to review next
    scanned: int  # maps looked at
    finished: bool  # True: no map left after the last one looked at
    cursor: tuple[int, int] | None  # the last (note_id, task_id) looked at
    computed: int = 0  # maps whose peaks this request computed and stored


def selection_maps(corpus, selection):
    maps = selection.maps().filter(note__corpus=corpus, model_version=selection.model, task__retired=False)
    retired_here = catalog.retired_tasks(corpus.project_id)  # catalog tasks the project retired for itself
    if retired_here:
        maps = maps.exclude(task_id__in=retired_here)  # a short list: no subquery for the planner to hash
    if selection.task is not None:
        maps = maps.filter(task=selection.task)
    return maps


def _after(maps, cursor):
    if cursor is None:
        return maps
    return maps.filter(Q(note_id__gt=cursor[0]) | Q(note_id=cursor[0], task_id__gt=cursor[1]), note_id__gte=cursor[0])


def _open(selection, reviewer) -> Subquery:
    """A valid stored peaks row of the outer map holding a peak the reviewer has not decided
    (NULL when none)."""
    key = peakstore.params_key(selection.params)
    open_peaks = peakstore.valid(key).filter(fits=True, n_peaks__gt=0)
    return peakstore.first_of(open_peaks.filter(Exists(peakstore.undecided_by(reviewer, selection))))


def first_undecided(maps, selection, reviewer):
    """The first (note, task) of `maps` whose stored peaks hold one the reviewer has not decided."""
    open_maps = maps.annotate(open=_open(selection, reviewer)).filter(open__isnull=False)
    return open_maps.order_by("note_id", "task_id").values_list("note_id", "task_id").first()


def _window(shape, *, corpus_id, model_id, method, template, config, key, reviewer_id, task_id=0, note_after=0,
            task_after=0):  # fmt: skip
    """The window's query (next_pair): up to `size` maps after the cursor, each with its valid
    stored peaks row (`stored`) and the first of them holding a peak the reviewer has not decided
    (`open`). `shape`: (retired task ids, a task chosen, a cursor, size)."""
    retired, one_task, has_cursor, size = shape
    maps = RelevanceMap.objects.for_config(method, template, config).filter(
        note__corpus_id=corpus_id, model_version_id=model_id, task__retired=False
    )
    if retired:
        maps = maps.exclude(task_id__in=retired)
    if one_task:
        maps = maps.filter(task_id=task_id)
    sel = SimpleNamespace(model=model_id, method=method, template=template, config=config)
    open_peaks = peakstore.valid(key).filter(fits=True, n_peaks__gt=0)
    still_open = peakstore.first_of(open_peaks.filter(Exists(peakstore.undecided_by(reviewer_id, sel))))
    ordered = _after(maps, (note_after, task_after) if has_cursor else None).order_by("note_id", "task_id")
    ordered = ordered.annotate(stored=peakstore.first_of(peakstore.valid(key)), open=still_open)
    return ordered.values_list("pk", "note_id", "task_id", "stored", "open")[:size]


WINDOW = Prepared(_window)


def next_pair(
    corpus, selection, reviewer, after: tuple[int, int] | None = None, *, scan: int = SCAN, batch: int = BATCH
) -> QueueResult:
    if selection.model is None:  # no model version: no map
        return QueueResult(None, 0, True, after)
    maps = None  # the selection's maps as a queryset: only where peaks are missing
    retired = tuple(sorted(catalog.retired_tasks(corpus.project_id)))
    values = {
        "corpus_id": corpus.pk,
        "model_id": selection.model.pk,
        "method": selection.method,
        "template": selection.template,
        "config": selection.config,
        "key": peakstore.params_key(selection.params),
        "reviewer_id": reviewer.pk,
    }
    if selection.task is not None:
        values["task_id"] = selection.task.pk
    cursor, scanned, computed = after, 0, 0
    while scanned < scan:
        size = min(batch, FIRST_BATCH if scanned == 0 else batch, scan - scanned)
        shape = (retired, selection.task is not None, cursor is not None, size)
        at = {"note_after": cursor[0], "task_after": cursor[1]} if cursor is not None else {}
        window = WINDOW.rows(shape, **values, **at)
        if not window:
            return QueueResult(None, scanned, True, cursor, computed)
        if any(w[3] is None for w in window):  # maps without valid stored peaks: computed first, and ahead
            maps = selection_maps(corpus, selection) if maps is None else maps
            ahead = _after(maps, cursor).order_by("note_id", "task_id").values_list("pk", flat=True)
            ahead = [*(w[0] for w in window), *ahead[len(window) : max(len(window), AHEAD)]]
            computed += peakstore.ensure(RelevanceMap.objects.filter(pk__in=ahead), selection.params)
            # By id alone: the window was read through the selection's joins (note, task,
            # configuration), and repeating them made this query plan a seven-table join.
            in_window = RelevanceMap.objects.filter(pk__in=[w[0] for w in window])
            pair = first_undecided(in_window, selection, reviewer)
        else:  # every peak was stored: the window's own answer
            pair = next(((w[1], w[2]) for w in window if w[4] is not None), None)
        if pair is not None:
            position = next(i for i, w in enumerate(window) if (w[1], w[2]) == pair)
            return QueueResult(pair, scanned + position + 1, False, pair, computed)
        scanned += len(window)
        cursor = (window[-1][1], window[-1][2])
    return QueueResult(None, scanned, False, cursor, computed)
