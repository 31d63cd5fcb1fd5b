"""Peaks of a (map, peak parameters) computed once and stored (review.MapPeaks, one StoredPeak
row per peak), read by the review queue, the note page and the decisions.

Key: `params_key(params)`, a digest of the parameters' values (kernel, sigma, thresholds, trim,
strict), so a profile edited in place, another profile or moved sliders each have their own key.
The note page and the decisions store a profile's own parameters only (`store=True` when the
sliders are not moved): a slider setting is computed for the request and not kept, so dragging a
slider does not fill the table. The queue stores the setting it reviews under, whatever it is
(its anti-join needs stored rows); rows of settings no longer used stay until their maps go.

Invalidation: a row holds for its map while the map's offsets row (`tokens_id`) and scores
(`ScoresDigest`: md5 of the float16 scores on PostgreSQL, their hex on SQLite, which has no md5)
are those it was computed from; RelevanceMap.objects.store replaces a recomputed map's scores in
place, so its rows stop matching and the next reader recomputes and replaces them (`ensure`).
Every query that uses rows (`valid`) checks this in SQL. A deleted map takes its rows with it.

Concurrency: rows are written in one transaction with INSERT ... ON CONFLICT DO NOTHING on
(map, params_key); two requests computing the same map write it once (the second waits for the
first's commit, then keeps its rows).
"""

from __future__ import annotations

import hashlib
import json

from django.db import transaction
from django.db.models import CharField, Exists, Func, OuterRef, Subquery

from ml.peaks import PeakParams, peaks_of_rows
from webapp.corpus.models import Note
from webapp.db.planner_stats import refresh_planner_stats
from webapp.review.models import MapPeaks, PeakDecision, StoredPeak


class ScoresDigest(Func):
    """A fingerprint of a map's stored scores (its `data` column), computed by the database."""

    function = "md5"
    output_field = CharField()

    def as_sqlite(self, compiler, conn, **extra):
        return super().as_sql(compiler, conn, function="hex", **extra)


def params_key(params: PeakParams) -> str:
    return hashlib.sha256(json.dumps(params.to_dict(), sort_keys=True).encode()).hexdigest()


def valid(key: str, map_ref="pk"):
    """MapPeaks rows of the outer map (`map_ref`) under `key` that still match the map."""
    return MapPeaks.objects.filter(
        map=OuterRef(map_ref),
        params_key=key,
        tokens_id=OuterRef("tokens_id"),
        digest=ScoresDigest(OuterRef("data")),
    )


def undecided_by(reviewer, selection):
    """StoredPeak rows of the outer MapPeaks row that `reviewer` has not decided under the
    selection's model version, method, template and configuration."""
    decided = PeakDecision.objects.filter(
        reviewer=reviewer,
        note_id=OuterRef("note_id"),
        task_id=OuterRef("task_id"),
        model_version=selection.model,
        method=selection.method,
        template=selection.template,
        config_key=selection.config,
        start=OuterRef("start"),
        end=OuterRef("end"),
    )
    return StoredPeak.objects.filter(peaks=OuterRef("pk")).filter(~Exists(decided))


def first_of(rows) -> Subquery:
    """The id of the first of `rows` (a queryset correlated to an outer map), or NULL.

    A scalar subquery rather than EXISTS: PostgreSQL runs it once for each row the outer query
    returns. An EXISTS it may turn into a hash of the whole peak store, and it decides that for
    every map the outer query could return (a LIMIT does not enter the choice), so the queue step
    grew with what was stored: 1 reviewer's queue 16 ms, then 42 ms once every map was stored.
    """
    return Subquery(rows.values("pk")[:1])


def missing(maps, key: str):
    """The maps of `maps` without valid stored peaks under `key`."""
    return maps.annotate(stored_peaks=first_of(valid(key))).filter(stored_peaks__isnull=True)


def ensure(maps, params: PeakParams) -> int:
    """Compute and store the peaks of `maps` (a RelevanceMap queryset, already limited) under
    `params` where no valid row exists; returns how many maps were computed."""
    key = params_key(params)
    rows = list(missing(maps, key).with_arrays("id", "note_id", "task_id", "tokens_id", ScoresDigest("data")))
    if not rows:
        return 0
    texts = dict(Note.objects.filter(pk__in={r[1] for r in rows}).values_list("pk", "text"))
    found = peaks_of_rows([(r[0], r[1], r[2], r[5]) for r in rows], texts, params)
    made = [
        MapPeaks(
            map_id=r[0],
            params_key=key,
            tokens_id=r[3],
            digest=r[4],
            fits=bool(p.fits),
            n_peaks=len(p.char_spans) if p.fits else 0,
            spans=[[int(a), int(b)] for a, b in p.char_spans] if p.fits else [],
        )
        for r, p in zip(rows, found)
    ]
    ids = [r[0] for r in rows]
    with transaction.atomic():
        MapPeaks.objects.filter(map_id__in=ids, params_key=key).delete()  # stale rows of recomputed maps
        MapPeaks.objects.bulk_create(made, ignore_conflicts=True)
        mine = MapPeaks.objects.filter(map_id__in=ids, params_key=key, n_peaks__gt=0).exclude(
            Exists(StoredPeak.objects.filter(peaks=OuterRef("pk")))
        )
        pairs = {r[0]: (r[1], r[2]) for r in rows}
        StoredPeak.objects.bulk_create(
            StoredPeak(peaks_id=pk, note_id=pairs[map_id][0], task_id=pairs[map_id][1], start=a, end=b)
            for pk, map_id, spans in mine.values_list("pk", "map_id", "spans")
            for a, b in spans
        )
    # The queue's anti-join reads these two tables by index only once their statistics say they
    # hold rows; a new database's say nothing until autovacuum's next pass.
    refresh_planner_stats(MapPeaks, len(made))
    refresh_planner_stats(StoredPeak, len(made))
    return len(rows)


def spans_of(map_qs, params: PeakParams, note, *, store: bool) -> tuple[list[tuple[int, int]], bool] | None:
    """(character spans of the peaks, whether the map fits the note) of the one map of `map_qs`
    under `params` (peaks_of_map without the arrays); None when there is no map."""
    found = peaks_of_map(map_qs, note, params, arrays=False, store=store)
    return None if found is None else found[1:]


def stored(key: str, field: str = "spans"):
    """`field` of the outer map's valid stored peaks under `key` (None when there are none), to
    annotate a map query with: the peaks come in the same query as the map."""
    return Subquery(valid(key).values(field)[:1])


def peaks_of_map(map_qs, note, params: PeakParams, *, arrays: bool, store: bool):
    """((offsets, scores) when `arrays`, else None; [(start, end), ...] character spans of the
    peaks; whether the map fits the note) of the one map of `map_qs` under `params`, or None when
    there is no map. One query when the peaks are stored. Otherwise they are computed, and
    stored when `store` (a profile's parameters; moved sliders are not kept)."""
    key = params_key(params)
    rows = map_qs.annotate(stored_spans=stored(key), stored_fits=stored(key, "fits"))
    fields = ("stored_spans", "stored_fits")
    row = (rows.with_arrays(*fields) if arrays else rows.values_list(*fields)).first()
    if row is None:
        return None
    spans, fits, found = row[0], row[1], (row[2] if arrays else None)
    if spans is None and store:
        ensure(map_qs, params)
        kept = MapPeaks.objects.filter(map__in=map_qs.values("pk"), params_key=key)
        spans, fits = kept.values_list("spans", "fits")[0]
    elif spans is None:
        if found is None:
            found = map_qs.with_arrays().first()[0]
        result = peaks_of_rows([(None, note.pk, 0, found)], {note.pk: note.text}, params)[0]
        spans, fits = [[int(a), int(b)] for a, b in result.char_spans], bool(result.fits)
    return found, [tuple(s) for s in spans], bool(fits)
