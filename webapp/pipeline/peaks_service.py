"""Peaks of stored relevance maps under a peak profile: the web app's one way to get them.

Used by the dataset builder (thousands of maps a call) and by pages that show a note's peaks
(a few maps a call). Nothing is stored: peaks are recomputed from the map and the profile, so
a new profile never needs a new relevance job.

    rows = RelevanceMap.objects.filter(...).values_list("id", "note_id", "task_id", "data")
    peaks = peaks_of_rows(rows, {note.id: note.text, ...}, profile)

For each map: `token_spans` (the peaks of ml.peaks.find_peaks_many, half-open token spans),
`word_spans` (after ml.peaks.extend_to_words: no span cuts a word; spans that then overlap
are merged) and `char_spans` (their half-open character spans in the note, whitespace
trimmed, aligned with `word_spans`). All maps of a call are decoded and passed to ONE
find_peaks_many call; only maps with peaks pay for the word extension.

A map whose token offsets reach past the end of its note's text cannot belong to that text
(the note was edited after relevance was computed): it comes back with `fits=False` and no
peaks, and callers decide what to do (the builder counts and skips it).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ml.codec import decode_map
from ml.peaks import extend_to_words_many, find_peaks_many

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


def profile_params(profile) -> dict:
    """kernel_size, sigma, lower, upper of a PeakProfile (or of a dict holding them)."""
    params = profile if isinstance(profile, Mapping) else profile.params
    return {key: params[key] for key in ("kernel_size", "sigma", "lower", "upper")}


def peaks_of_rows(rows: Iterable[Sequence], texts: Mapping[int, str], profile, *,
                  strict: bool = False) -> list[MapPeaks]:
    """Peaks of maps given as (map_id, note_id, task_id, data) rows; `texts` maps note id -> text."""
    rows = list(rows)
    arrays = [decode_map(row[3]) for row in rows]
    return peaks_of_arrays([(row[0], row[1], row[2]) for row in rows], arrays, texts, profile, strict=strict)


def peaks_of_maps(maps: Iterable, profile, texts: Mapping[int, str] | None = None, *,
                  strict: bool = False) -> list[MapPeaks]:
    """Peaks of RelevanceMap instances. Without `texts`, each map's note text is read through
    `map.note` (select_related("note") to avoid one query per map)."""
    maps = list(maps)
    if texts is None:
        texts = {m.note_id: m.note.text for m in maps}
    return peaks_of_arrays([(m.pk, m.note_id, m.task_id) for m in maps], [m.arrays() for m in maps], texts, profile,
                           strict=strict)


def peaks_of_arrays(keys: Sequence[tuple], arrays: Sequence[tuple], texts: Mapping[int, str], profile, *,
                    strict: bool = False) -> list[MapPeaks]:
    """The core: `keys[i] = (map_id, note_id, task_id)`, `arrays[i] = (offsets, scores)`."""
    params = profile_params(profile)
    fits = [_fits(offsets, texts[note_id]) for (_, note_id, _), (offsets, _) in zip(keys, arrays)]
    all_spans = find_peaks_many([scores for _, scores in arrays], strict=strict, **params)
    # word and character spans of the maps with peaks, in one call (extend_to_words, peak_char_spans)
    todo = [i for i, (spans, ok) in enumerate(zip(all_spans, fits)) if ok and spans]
    extended = dict(zip(todo, extend_to_words_many(
        [(all_spans[i], arrays[i][0], texts[keys[i][1]]) for i in todo], char_spans=True)))
    out = []
    for i, ((map_id, note_id, task_id), (offsets, _), spans, ok) in enumerate(zip(keys, arrays, all_spans, fits)):
        if not ok:
            out.append(MapPeaks(map_id, note_id, task_id, len(offsets), (), (), (), fits=False))
            continue
        words, chars = extended.get(i, ((), ()))
        out.append(MapPeaks(map_id, note_id, task_id, len(offsets), tuple(spans), tuple(words), tuple(chars)))
    return out


def _fits(offsets, text: str) -> bool:
    return len(offsets) == 0 or int(offsets[:, 1].max()) <= len(text)
