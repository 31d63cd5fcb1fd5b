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
    return RelevanceMap.objects.create(
        note=note, task=task, model_version=model, method=method, template=template, job=job,
        n_tokens=len(offsets), data=RelevanceMap.encode(offsets, scores),
    )
