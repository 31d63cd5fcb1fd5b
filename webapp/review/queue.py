"""The review queue: the next (note, task) pair the reviewer has not finished.

Order: maps of the corpus for the chosen model version, method and template (and task, if one
is chosen; retired tasks never), by (note id, task id), starting after the pair the reviewer is
on. A pair is served when it has at least one peak (under the parameters in effect) that THIS
reviewer has not decided on; pairs with no peak, and pairs whose every peak the reviewer decided,
are skipped.

The next pair comes from one indexed query over the stored peaks (webapp.review.peakstore): the
first map after the cursor, in the maps' (note, task) order, with a valid stored peak that has
no decision of this reviewer (an anti-join against PeakDecision's unique index). Maps whose
peaks under these parameters are not stored yet (never computed, or their map was recomputed)
and that come before that pair are computed first, in keyset batches, at most SCAN maps a
request: the first pass over a corpus costs what the scan cost before, once per peak setting;
afterwards a request computes nothing. When the SCAN maps are spent, the page offers to continue
from where it stopped. `scanned` counts the maps whose peaks the request computed.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, Q

from webapp.review import peakstore

BATCH = 500
SCAN = 5_000


@dataclass(frozen=True)
class QueueResult:
    pair: tuple[int, int] | None  # (note_id, task_id) to review next
    scanned: int  # maps whose peaks were computed by this request
    finished: bool  # True: no pair left after the cursor
    cursor: tuple[int, int] | None  # where to continue from (the last map computed)


def selection_maps(corpus, selection):
    maps = selection.maps().filter(note__corpus=corpus, model_version=selection.model, task__retired=False)
    if selection.task is not None:
        maps = maps.filter(task=selection.task)
    return maps


def _after(maps, cursor):
    if cursor is None:
        return maps
    return maps.filter(Q(note_id__gt=cursor[0]) | Q(note_id=cursor[0], task_id__gt=cursor[1]), note_id__gte=cursor[0])


def _before(maps, pair):
    return maps.filter(Q(note_id__lt=pair[0]) | Q(note_id=pair[0], task_id__lt=pair[1]), note_id__lte=pair[0])


def first_undecided(maps, selection, reviewer):
    """The first (note, task) of `maps` whose stored peaks hold one the reviewer has not decided."""
    key = peakstore.params_key(selection.params)
    open_peaks = peakstore.valid(key).filter(fits=True, n_peaks__gt=0)
    open_peaks = open_peaks.filter(Exists(peakstore.undecided_by(reviewer, selection)))
    return maps.filter(Exists(open_peaks)).order_by("note_id", "task_id").values_list("note_id", "task_id").first()


def next_pair(
    corpus, selection, reviewer, after: tuple[int, int] | None = None, *, scan: int = SCAN, batch: int = BATCH
) -> QueueResult:
    maps = selection_maps(corpus, selection)
    key = peakstore.params_key(selection.params)
    pending, computed, last = _after(maps, after), 0, after
    while True:
        candidate = first_undecided(pending, selection, reviewer)
        gap = peakstore.missing(pending if candidate is None else _before(pending, candidate), key)
        todo = list(gap.order_by("note_id", "task_id").values_list("pk", "note_id", "task_id")[: max(1, batch)])
        if not todo:
            return QueueResult(candidate, computed, candidate is None, candidate or last)
        if computed >= scan:
            return QueueResult(None, computed, False, last)
        todo = todo[: scan - computed]
        # the first maps of the gap in order: after this, every map up to the last of them is stored
        computed += peakstore.ensure(maps.filter(pk__in=[t[0] for t in todo]), selection.params)
        last = (todo[-1][1], todo[-1][2])
