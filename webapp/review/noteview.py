"""The note panel: one note's text coloured by one map's relevance, its peaks under the
parameters in effect (words, trimmed: ml.peaks), the gold evidence of
the task, and every reviewer's decisions on each peak. One call builds what the page shows.
"""
from __future__ import annotations

import bisect
import re
import time
from dataclasses import dataclass, field

from django.db.models import Subquery

from ml.codec import decode_map
from webapp.corpus.models import Annotation, Note
from ml.peaks import peaks_of_arrays
from webapp.review import rendering
from webapp.review.decisions import PeakContext, decisions_on, is_conflict, overlapping

ADJUST_WORDS = 5  # how many words a boundary may move either way in the adjust form
_WORD = re.compile(r"\w+")


@dataclass
class PeakRow:
    index: int
    start: int
    end: int
    text: str
    mine: object | None  # this reviewer's PeakDecision
    decisions: list  # every reviewer's decisions on overlapping spans
    conflict: bool
    start_options: list = field(default_factory=list)  # [(offset, label, selected)]
    end_options: list = field(default_factory=list)

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def css(self) -> str:
        classes = [f"mine-{self.mine.decision}"] if self.mine else ["undecided"]
        if self.conflict:
            classes.append("conflict")
        return " ".join(classes)


@dataclass
class NotePanel:
    note: Note
    selection: object
    found: bool = False  # a map exists for the selection
    fits: bool = True
    n_tokens: int = 0
    html: str = ""
    peaks: list = field(default_factory=list)
    gold: list = field(default_factory=list)  # character spans
    annotations: list = field(default_factory=list)
    prev_id: int | None = None
    next_id: int | None = None
    millis: float = 0.0

    @property
    def decided(self) -> int:
        return sum(1 for p in self.peaks if p.mine)


def gold_of(note, task) -> tuple[list, list]:
    """(annotations of the note for the task, their evidence spans)."""
    if task is None:
        return [], []
    annotations = list(Annotation.objects.filter(note=note, task=task).order_by("annotator_name"))
    spans = sorted({(int(a), int(b)) for ann in annotations for a, b in (ann.evidence or [])})
    return annotations, spans


def map_arrays(note, selection):
    """(offsets, scores) of the selection's map of the note, or None."""
    if not selection.ready:
        return None
    data = (selection.maps()
            .filter(note=note, task=selection.task, model_version=selection.model)
            .values_list("data", flat=True).first())
    return decode_map(data) if data is not None else None


def char_peaks(note, arrays, params) -> tuple[list, bool]:
    """(word-extended character spans of the peaks, whether the map fits the note)."""
    result = peaks_of_arrays([(None, note.pk, 0)], [arrays], {note.pk: note.text}, params)[0]
    return [tuple(span) for span in result.char_spans], result.fits


def build_panel(note, selection, reviewer) -> NotePanel:
    started = time.perf_counter()
    panel = NotePanel(note, selection)
    panel.annotations, panel.gold = gold_of(note, selection.task)
    panel.prev_id, panel.next_id = neighbours(note, selection)
    arrays = map_arrays(note, selection)
    if arrays is None:
        panel.html = rendering.segments_html(note.text, rendering.segments(note.text, [], [], (), panel.gold))
        panel.millis = (time.perf_counter() - started) * 1000
        return panel
    panel.found = True
    offsets, scores = arrays
    panel.n_tokens = len(offsets)
    spans, panel.fits = char_peaks(note, arrays, selection.params)
    if not panel.fits:
        offsets, scores = offsets[:0], scores[:0]
    ctx = PeakContext(note, selection.task, selection.model, selection.method, selection.template, selection.config)
    decisions = decisions_on(ctx)
    for d in decisions:  # what each decision covers, for the page
        d.span_text = note.text[d.start:d.end]
        d.adjusted_text = note.text[d.adjusted_start:d.adjusted_end] if d.adjusted_start is not None else ""
    words = [m.span() for m in _WORD.finditer(note.text)]
    for i, (a, b) in enumerate(spans):
        near = overlapping(decisions, a, b)
        mine = next((d for d in near if d.reviewer_id == reviewer.pk and (d.start, d.end) == (a, b)), None)
        row = PeakRow(i, a, b, note.text[a:b], mine, near, is_conflict(near))
        row.start_options, row.end_options = boundary_options(note.text, words, a, b, mine)
        panel.peaks.append(row)
    segs = rendering.segments(note.text, offsets, scores, spans, panel.gold)
    panel.html = rendering.segments_html(note.text, segs, peak_classes=[p.css for p in panel.peaks])
    panel.millis = (time.perf_counter() - started) * 1000
    return panel


def boundary_options(text: str, words: list, start: int, end: int, mine=None) -> tuple[list, list]:
    """Choices for an adjusted start and end: word starts up to ADJUST_WORDS words before the
    peak through its last word, and word ends from its first word to ADJUST_WORDS words after.
    The peak's own boundaries are always offered; the reviewer's adjusted ones are selected."""
    starts = [w[0] for w in words]
    first = bisect.bisect_right(starts, start) - 1  # the word at or before the start
    last = bisect.bisect_left(starts, end) - 1  # the last word starting inside the peak
    lo, hi = max(0, first - ADJUST_WORDS), min(len(words) - 1, max(last, first) + ADJUST_WORDS)
    begin_choices = {start} | {words[k][0] for k in range(lo, max(last, lo) + 1) if words[k][0] < end}
    end_choices = {end} | {words[k][1] for k in range(max(first, 0), hi + 1) if words[k][1] > start}
    chosen_start = mine.adjusted_start if mine is not None and mine.adjusted_start is not None else start
    chosen_end = mine.adjusted_end if mine is not None and mine.adjusted_end is not None else end

    def label(offset, at_start):
        """The word a boundary starts (or ends), to name the choice."""
        if at_start:
            k = bisect.bisect_right(starts, offset) - 1
            on_word = 0 <= k < len(words) and words[k][0] == offset
            word = text[offset:words[k][1]] if on_word else text[offset:offset + 12]
            return f"{offset}: «{word.strip()[:30]}…»"
        k = bisect.bisect_right(starts, offset - 1) - 1
        on_word = 0 <= k < len(words) and words[k][1] == offset
        word = text[words[k][0]:offset] if on_word else text[max(0, offset - 12):offset]
        return f"{offset}: «…{word.strip()[-30:]}»"

    return ([(o, label(o, True), o == chosen_start) for o in sorted(begin_choices)],
            [(o, label(o, False), o == chosen_end) for o in sorted(end_choices)])


def neighbours(note, selection) -> tuple[int | None, int | None]:
    """The previous and next note of the corpus (by id) that has a map of the selection's task,
    model version, method and template; without a task, the previous and next note. One query:
    two index-bounded subqueries (ORDER BY ... LIMIT 1)."""
    if selection.ready:
        maps = selection.maps().filter(
            note__corpus_id=note.corpus_id, task=selection.task, model_version=selection.model)
        prev_ids = maps.filter(note_id__lt=note.pk).order_by("-note_id").values("note_id")[:1]
        next_ids = maps.filter(note_id__gt=note.pk).order_by("note_id").values("note_id")[:1]
    else:
        notes = Note.objects.filter(corpus_id=note.corpus_id)
        prev_ids = notes.filter(pk__lt=note.pk).order_by("-pk").values("pk")[:1]
        next_ids = notes.filter(pk__gt=note.pk).order_by("pk").values("pk")[:1]
    row = (Note.objects.filter(pk=note.pk).annotate(prev_id=Subquery(prev_ids), next_id=Subquery(next_ids))
           .values_list("prev_id", "next_id").first())
    return row if row is not None else (None, None)
