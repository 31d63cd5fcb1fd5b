"""Peaks of stored maps under a PeakProfile (ml.peaks.peaks_of_maps / peaks_of_rows on RelevanceMap rows)."""

import numpy as np

from ml.peaks import PeakParams, extend_to_words, find_peaks, peak_char_spans, peaks_of_maps, peaks_of_rows, trim_peaks
from webapp.corpus.models import Note
from webapp.pipeline.models import PeakProfile, RelevanceMap

from .fabricate import TEXT, add_map, word_offsets


def test_it_gives_what_ml_peaks_gives_map_by_map(note, tasks, model, paper):
    rng = np.random.default_rng(0)
    offsets = word_offsets(TEXT)
    for task in tasks.values():
        add_map(note, task, model, scores=rng.random(len(offsets)).astype(np.float32))
    maps = list(RelevanceMap.objects.order_by("pk"))
    got = peaks_of_maps(maps, paper.params)
    for m, peaks in zip(maps, got):
        off, scores = m.arrays()
        spans = find_peaks(scores, paper.params)
        words = extend_to_words(spans, off, TEXT)
        words, chars = trim_peaks(words, peak_char_spans(words, off, TEXT), off, TEXT)
        assert (peaks.map_id, peaks.note_id, peaks.task_id) == (m.pk, note.pk, m.task_id)
        assert list(peaks.token_spans) == spans
        assert list(peaks.word_spans) == words
        assert list(peaks.char_spans) == chars


def test_rows_and_instances_agree(maps, sharp, note):
    rows = RelevanceMap.objects.order_by("pk").with_arrays("id", "note_id", "task_id")
    assert peaks_of_rows(rows, {note.pk: TEXT}, sharp.params) == peaks_of_maps(
        RelevanceMap.objects.order_by("pk"), sharp.params
    )


def test_a_map_longer_than_its_note_does_not_fit(corpus, tasks, model, sharp):
    note = Note.objects.create(corpus=corpus, external_id="short", text="bp low")
    add_map(note, tasks["heart"], model, {0}, offsets=[(0, 2), (3, 6), (7, 12)])
    (peaks,) = peaks_of_maps(RelevanceMap.objects.filter(note=note), sharp.params)
    assert not peaks.fits and peaks.char_spans == ()


def test_a_profile_gives_its_params_and_trims_by_default(sharp):
    assert sharp.params == PeakParams(
        kernel_size=sharp.kernel_size, sigma=sharp.sigma, lower=sharp.lower, upper=sharp.upper
    )
    assert sharp.params.trim is True and sharp.params.strict is False


def test_the_reference_profile_keeps_untrimmed_peaks(db):
    reference = PeakProfile.objects.create(name="reference", strict=True, trim=False)
    assert reference.params == PeakParams(strict=True, trim=False)
