"""The peaks of relevance maps as the product uses them: token runs, widened to words, trimmed.

One implementation for everything that shows, counts or masks peaks: the dataset builder
(thousands of maps a call), the review pages (a few maps a call), the validation workflow and
the CLI. Nothing is stored: peaks are recomputed from a map and its PeakParams, so new
parameters never need a new relevance job.

    peaks = peaks_of_arrays(keys, [(offsets, scores), ...], {note_id: text}, params)

For each map: `token_spans` (the runs of ml.peaks.runs.find_peaks_many), `word_spans` (widened
so no span cuts a word, overlapping spans merged, then trimmed when `params.trim`) and
`char_spans` (their character spans in the note, aligned with `word_spans`). All maps of a call
go through ONE find_peaks_many call; only maps with runs pay for the word extension.

A map whose token offsets reach past the end of its note's text cannot belong to that text
(the note was edited after relevance was computed): it comes back with `fits=False` and no
peaks, and callers decide what to do (the builder counts and skips it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ml.peaks.params import PAPER, PeakParams
from ml.peaks.runs import find_peaks_many
from ml.peaks.words import extend_to_words_many, trim_peaks

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class MapPeaks:
    map_id: int | None
    note_id: int
    task_id: int
    n_tokens: int
    token_spans: tuple[Span, ...]
    word_spans: tuple[Span, ...]
    char_spans: tuple[Span, ...]
    fits: bool = True

    @property
    def count(self) -> int:
        return len(self.word_spans)


def note_peaks(scores, offsets, text: str, params: PeakParams = PAPER) -> tuple[list[Span], list[Span]]:
    """(token spans, character spans) of one map's peaks, as `peaks_of_arrays` gives them."""
    (peaks,) = peaks_of_arrays([(None, 0, 0)], [(np.asarray(offsets), scores)], {0: text}, params)
    if not peaks.fits:
        raise ValueError("the map's token offsets reach past the end of the note")
    return list(peaks.word_spans), list(peaks.char_spans)


def peaks_of_rows(rows: Iterable[Sequence], texts: Mapping[int, str], params: PeakParams = PAPER) -> list[MapPeaks]:
    """Peaks of maps given as (map_id, note_id, task_id, (offsets, scores)) rows (the web app's
    `RelevanceMap.objects.with_arrays("id", "note_id", "task_id")`); `texts` maps note id -> text."""
    rows = list(rows)
    arrays = [row[3] for row in rows]
    return peaks_of_arrays([(row[0], row[1], row[2]) for row in rows], arrays, texts, params)


def peaks_of_maps(maps: Iterable, params: PeakParams = PAPER, texts: Mapping[int, str] | None = None) -> list[MapPeaks]:
    """Peaks of map objects with `pk`, `note_id`, `task_id` and `arrays()` (the web app's
    RelevanceMap). Without `texts`, each map's note text is read through `map.note`."""
    maps = list(maps)
    if texts is None:
        texts = {m.note_id: m.note.text for m in maps}
    return peaks_of_arrays([(m.pk, m.note_id, m.task_id) for m in maps], [m.arrays() for m in maps], texts, params)


def peaks_of_arrays(
    keys: Sequence[tuple], arrays: Sequence[tuple], texts: Mapping[int, str], params: PeakParams = PAPER
) -> list[MapPeaks]:
    """The core: `keys[i] = (map_id, note_id, task_id)`, `arrays[i] = (offsets, scores)`."""
    fits = [map_fits(offsets, texts[note_id]) for (_, note_id, _), (offsets, _) in zip(keys, arrays)]
    all_spans = find_peaks_many([scores for _, scores in arrays], params)
    # word and character spans of the maps with peaks, in one call
    todo = [i for i, (spans, ok) in enumerate(zip(all_spans, fits)) if ok and spans]
    extended = dict(
        zip(
            todo, extend_to_words_many([(all_spans[i], arrays[i][0], texts[keys[i][1]]) for i in todo], char_spans=True)
        )
    )
    if params.trim:
        extended = {
            i: trim_peaks(words, chars, arrays[i][0], texts[keys[i][1]]) for i, (words, chars) in extended.items()
        }
    out = []
    for i, ((map_id, note_id, task_id), (offsets, _), spans, ok) in enumerate(zip(keys, arrays, all_spans, fits)):
        if not ok:
            out.append(MapPeaks(map_id, note_id, task_id, len(offsets), (), (), (), fits=False))
            continue
        words, chars = extended.get(i, ((), ()))
        out.append(MapPeaks(map_id, note_id, task_id, len(offsets), tuple(spans), tuple(words), tuple(chars)))
    return out


def map_fits(offsets, text: str) -> bool:
    """Can the map belong to this text? Its offsets must not reach past the end (else the note was
    edited after relevance was computed)."""
    return len(offsets) == 0 or int(np.asarray(offsets)[:, 1].max()) <= len(text)
