"""Peaks ("groups") of relevance maps: the product's central output (docs/METHOD.md, sections Peaks and Masking).

One place for the concept, in four small modules:
* `params`  PeakParams, the frozen parameters with the paper's values as defaults (kernel 3,
            sigma 1.0, lower 0.2, upper 0.4, >=, peaks trimmed to words).
* `runs`    Gaussian smoothing and the maximal runs above the thresholds (token peaks), for one
            map or, vectorised, for many.
* `words`   widening token runs to whole words, their character spans, the trimming rule
            (no peak starts or ends in punctuation; punctuation-only peaks are dropped), and the
            per-word heat the note view colours.
* `batch`   all of it for many stored maps at once (MapPeaks): what the dataset builder, the
            review pages, the validation workflow and the CLI call.
"""

from ml.peaks.batch import MapPeaks, map_fits, note_peaks, peaks_of_arrays, peaks_of_maps, peaks_of_rows
from ml.peaks.params import PAPER, PeakParams, check_params
from ml.peaks.runs import BATCH_TOKENS, find_peaks, find_peaks_many, gaussian_weights, smooth
from ml.peaks.words import (
    extend_to_words,
    extend_to_words_many,
    peak_char_spans,
    trim_peaks,
    word_heat,
    words_of,
)

__all__ = [
    "BATCH_TOKENS",
    "PAPER",
    "MapPeaks",
    "PeakParams",
    "map_fits",
    "check_params",
    "extend_to_words",
    "extend_to_words_many",
    "find_peaks",
    "find_peaks_many",
    "gaussian_weights",
    "note_peaks",
    "peak_char_spans",
    "peaks_of_arrays",
    "peaks_of_maps",
    "peaks_of_rows",
    "smooth",
    "trim_peaks",
    "word_heat",
    "words_of",
]
