"""Fabricated relevance maps whose peaks are known by hand (no model needed).

The note "pt alert hr 120 bpm then pacemaker in situ and bp low" has one token per word:
    0 pt  1 alert  2 hr  3 120  4 bpm  5 then  6 pacemaker  7 in  8 situ  9 and  10 bp  11 low
With the `sharp` profile (kernel 1: no smoothing; lower 0.2, upper 0.4) a token scored 0.9 among
zeros is one peak. Maps (peaked tokens):
    heart      {3, 6}      -> groups "120", "pacemaker"         -> masks "pacemaker"
    pacemaker  {3, 6, 10}  -> groups "120", "pacemaker", "bp"   -> masks "pacemaker" (same as heart), "bp"
    pressure   {10}        -> one group "bp"                    -> nothing (two-peaks rule)
    heldout    {1, 3}      -> held-out task: left out by default; included it masks "120"
So a DSM build gives 2 examples: "pacemaker" (tasks heart + pacemaker) and "bp" (pacemaker).
"""

import re

import numpy as np

from webapp.pipeline.models import RelevanceMap

TEXT = "pt alert hr 120 bpm then pacemaker in situ and bp low"
WORDS = TEXT.split()
PEAKS = {"heart": {3, 6}, "pacemaker": {3, 6, 10}, "pressure": {10}, "heldout": {1, 3}}


def word_offsets(text: str) -> np.ndarray:
    return np.array([m.span() for m in re.finditer(r"\S+", text)], np.int32)


def char_span(text: str, word: str) -> tuple[int, int]:
    """The span of the first whole word `word` in `text`."""
    return re.search(rf"(?<!\S){re.escape(word)}(?!\S)", text).span()


def add_map(note, task, model, peaked=(), *, offsets=None, scores=None, method="attnlrp", template="en", job=None):
    offsets = word_offsets(note.text) if offsets is None else np.asarray(offsets, np.int32)
    if scores is None:
        scores = np.zeros(len(offsets), np.float32)
        scores[list(peaked)] = 0.9
    return RelevanceMap.objects.store_one(note, task, model, offsets, scores, method=method, template=template, job=job)


def add_notes_with_maps(corpus, tasks, model, count: int, prefix: str = "bulk") -> int:
    """`count` notes "TEXT <prefix><number>" (no two alike, so nothing is de-duplicated across
    notes) with the maps of heart, pacemaker and pressure: 2 examples a note in a DSM build
    ("pacemaker" and "bp"). Written by SQL on the server (PostgreSQL), so a build large enough
    for a worker to be killed in its middle is made in a second or two. Returns `count`."""
    from django.db import connection

    from webapp.corpus.models import Note

    width = len(str(count))
    first = f"{TEXT} {prefix}{0:0{width}d}"
    offsets = word_offsets(first)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Note._meta.db_table} (corpus_id, external_id, text, content_hash, metadata, created) "
            "SELECT %s, name, text, encode(sha256(convert_to(text, 'UTF8')), 'hex'), '{}'::jsonb, now() FROM "
            "(SELECT %s || lpad(i::text, %s, '0') AS name, %s || ' ' || %s || lpad(i::text, %s, '0') AS text "
            " FROM generate_series(0, %s - 1) AS i) AS made",
            [corpus.pk, prefix, width, TEXT, prefix, width, count],
        )
        for slug in ("heart", "pacemaker", "pressure"):
            scores = np.zeros(len(offsets), np.float32)
            scores[list(PEAKS[slug])] = 0.9
            RelevanceMap.objects.fill_notes(
                Note.objects.filter(corpus=corpus, external_id__startswith=prefix),
                task_id=tasks[slug].pk,
                model_version_id=model.pk,
                method="attnlrp",
                template="en",
                offsets=offsets,
                scores=scores,
            )
    return count
