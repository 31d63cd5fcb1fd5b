"""The review queue: the next (note, task) pair the reviewer has not finished.

Order: maps of the corpus for the chosen model version, method and template (and task, if one
is chosen; retired tasks never), by (note id, task id), starting after the pair the reviewer is
on. A pair is served when it has at least one peak (under the parameters in effect) that THIS reviewer has not
decided on; pairs with no peak, and pairs whose every peak the reviewer decided, are skipped.
Each request looks at no more than SCAN maps, in keyset batches (one find_peaks_many call a
batch), so its cost is bounded however large the corpus and however much was already reviewed;
when none is found in that window the page offers to continue from where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from ml.peaks import peaks_of_rows
from webapp.corpus.models import Note
from webapp.review.models import PeakDecision

BATCH = 500
SCAN = 5_000


@dataclass(frozen=True)
class QueueResult:
    pair: tuple[int, int] | None  # (note_id, task_id) to review next
    scanned: int  # maps looked at
    finished: bool  # True: no map left after the last one looked at
    cursor: tuple[int, int] | None  # the last (note_id, task_id) looked at


def selection_maps(corpus, selection):
    maps = selection.maps().filter(note__corpus=corpus, model_version=selection.model, task__retired=False)
    if selection.task is not None:
        maps = maps.filter(task=selection.task)
    return maps


def next_pair(
    corpus, selection, reviewer, after: tuple[int, int] | None = None, *, scan: int = SCAN, batch: int = BATCH
) -> QueueResult:
    ordered = selection_maps(corpus, selection).order_by("note_id", "task_id").with_arrays("id", "note_id", "task_id")
    cursor, scanned = after, 0
    while scanned < scan:
        page = ordered
        if cursor is not None:
            page = page.filter(
                Q(note_id__gt=cursor[0]) | Q(note_id=cursor[0], task_id__gt=cursor[1]), note_id__gte=cursor[0]
            )
        rows = list(page[: min(batch, scan - scanned)])
        if not rows:
            return QueueResult(None, scanned, True, cursor)
        note_ids = sorted({r[1] for r in rows})
        texts = dict(Note.objects.filter(pk__in=note_ids).values_list("pk", "text"))
        decided = set(
            PeakDecision.objects.filter(
                reviewer=reviewer,
                note_id__in=note_ids,
                model_version=selection.model,
                method=selection.method,
                template=selection.template,
                config_key=selection.config,
            ).values_list("note_id", "task_id", "start", "end")
        )
        for peaks in peaks_of_rows(rows, texts, selection.params):
            if peaks.fits and any((peaks.note_id, peaks.task_id, a, b) not in decided for a, b in peaks.char_spans):
                return QueueResult((peaks.note_id, peaks.task_id), scanned + 1, False, (peaks.note_id, peaks.task_id))
        scanned += len(rows)
        cursor = (rows[-1][1], rows[-1][2])
    return QueueResult(None, scanned, False, cursor)
