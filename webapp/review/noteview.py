"""The note panel: one note's text coloured by one map's relevance, its peaks under the
parameters in effect (words, trimmed: ml.peaks), the gold evidence of the task, and every
reviewer's decisions on each peak. One call builds what the page shows.

A long note is shown one window at a time (webapp.lib.windows): the peaks are found over the
whole map (numbered in the note, so "peak 37" means the same on every window), but the HTML,
the colours, the peak rows with their forms and the words offered as new boundaries are built
for the window's characters only. `peak=N` (1-based, as shown) opens the window holding peak N;
`window=K` (0-based) a window by position. What a request builds beyond the window is a few
numbers per peak and per decision, never an object per character or per word of the note.

A map of a note longer than the model's context covers only the tokens the model saw
(ml.relevance cuts the note's end, or its start with truncate "left"): `MapReach` says where it
starts and ends; the rest is shown as written, with a marker where the map stops.

Task-specificity (ml.specificity): the note's maps of the same model version and configuration
for its OTHER tasks are read too (one query, the note's own maps only) and their peaks found
under the same parameters; `Specificity` says whether this task's peaks are the same as every
other task's (then they say little about this task) and which of them are. `view="sentences"`
replaces the word heat of one window by the sentence view of the whole note
(webapp.review.sentenceview); the window is then the one holding the chosen sentence.
"""

from __future__ import annotations

import bisect
import html
import json
import re
import time
from dataclasses import dataclass, field

from django.db.models import Subquery
from django.utils.formats import number_format
from django.utils.safestring import mark_safe
from django.utils.text import Truncator
from django.utils.timezone import template_localtime
from django.utils.translation import get_language, pgettext
from django.utils.translation import gettext as _

from ml.codec import decode_arrays
from ml.peaks import peaks_of_arrays
from ml.specificity import TaskMap, note_specificity
from webapp.corpus.models import Annotation, Note
from webapp.db.prepared import Prepared
from webapp.lib import rendering, windows
from webapp.lifecycle.status import ACTIVE
from webapp.pipeline.models import RelevanceJob, RelevanceMap
from webapp.review import caching, peakstore, sentenceview
from webapp.review.decisions import PeakContext, is_conflict, overlapping, shown_decisions
from webapp.review.models import PeakDecision

ADJUST_WORDS = 5  # how many words a boundary may move either way in the adjust form
ADJUST_REACH = 400  # characters either side of a boundary searched for those words
QUOTE_CHARS = 200  # of a peak's or a decision's text, quoted in its row (the page shows 140 at most)
_WORD = re.compile(r"\w+")
_TEXT = re.compile(r"\S")


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
    html: str = ""  # the row as the page shows it (row_html), set by the view that shows it

    @property
    def number(self) -> int:
        return self.index + 1

    @property
    def start_options_html(self) -> str:
        return options_html(self.start_options)

    @property
    def end_options_html(self) -> str:
        return options_html(self.end_options)

    @property
    def css(self) -> str:
        classes = [f"mine-{self.mine.decision}"] if self.mine else ["undecided"]
        if self.conflict:
            classes.append("conflict")
        return " ".join(classes)


@dataclass(frozen=True)
class MapReach:
    """The characters a map's tokens cover, for a map that does not cover the whole note."""

    start: int
    end: int
    tokens: int
    cut_start: bool  # text before `start`: the model saw the note's end only
    cut_end: bool  # text after `end`: the model saw the note's start only


@dataclass(frozen=True)
class Specificity:
    """This task's peaks against the note's other tasks' (same model version and configuration)."""

    other_tasks: int  # other tasks of the note with a map
    same_as_all: bool  # every peak of this task is a peak of every other task too
    shared: tuple[int, ...]  # numbers (1-based) of this task's peaks that every other task shares
    spearman: float | None  # mean rank correlation of this map with the others


@dataclass
class NotePanel:
    note: Note
    selection: object
    window: windows.Window
    found: bool = False  # a map exists for the selection
    fits: bool = True
    n_tokens: int = 0
    n_chars: int = 0
    html: str = ""
    n_peaks: int = 0  # in the whole note
    shown: range = range(0)  # indices of the peaks overlapping the window
    peaks: list = field(default_factory=list)  # rows of the shown peaks
    decided: int = 0  # peaks of the whole note this reviewer has decided
    select: int | None = None  # the peak asked for (peak=N), to select on the page
    reach: MapReach | None = None
    reach_window: int | None = None  # the window where the map starts or ends
    gold: list = field(default_factory=list)  # character spans
    annotations: list = field(default_factory=list)
    prev_id: int | None = None
    next_id: int | None = None
    specificity: Specificity | None = None
    view: str = "words"  # or "sentences"
    sentences: sentenceview.SentenceView | None = None
    recomputing: list = field(default_factory=list)  # jobs under way computing this note's maps (no map yet)
    millis: float = 0.0


def gold_of(note, task) -> tuple[list, list]:
    """(annotations of the note for the task, their evidence spans)."""
    if task is None or not ANY_GOLD.rows(None, note_id=note.pk, task_id=task.pk):  # the usual answer: none
        return [], []
    annotations = list(Annotation.objects.filter(note=note, task=task).order_by("annotator_name"))
    spans = sorted({(int(a), int(b)) for ann in annotations for a, b in (ann.evidence or [])})
    return annotations, spans


def _any_gold(_shape, *, note_id, task_id):
    return Annotation.objects.filter(note_id=note_id, task_id=task_id).values_list("pk")[:1]


def _any_decision(_shape, *, note_id, task_id, model_id, method, template, config):
    rows = PeakDecision.objects.filter(note_id=note_id, task_id=task_id, model_version_id=model_id, method=method)
    return rows.filter(template=template, config_key=config).values_list("pk")[:1]


# Whether a pair has gold or decisions at all, by SQL built once (webapp.db.prepared): on a
# pair's first visit the answer is usually no, and then no model query is built.
ANY_GOLD = Prepared(_any_gold)
ANY_DECISION = Prepared(_any_decision)


def map_arrays(note, selection):
    """(offsets, scores) of the selection's map of the note, or None."""
    if not selection.ready:
        return None
    row = selection.maps().filter(note=note, task=selection.task, model_version=selection.model).with_arrays().first()
    return row[0] if row is not None else None


def stored_peaks(note, selection, *, arrays: bool):
    """(arrays or None, character spans of the peaks, fits) of the selection's map of the note,
    its peaks from the store (webapp.review.peakstore; a profile's are stored on first use, moved
    sliders' computed for the request); None without a map."""
    if not selection.ready:
        return None
    values = {"task_id": selection.task.pk, "model_id": selection.model.pk, "method": selection.method,
              "template": selection.template, "config": selection.config}  # fmt: skip
    rows = STORED_PEAKS.rows(arrays, note_id=note.pk, key=peakstore.params_key(selection.params), **values)
    if rows and rows[0][0] is not None:  # stored: one query, built once per process
        spans, fits = rows[0][0], rows[0][1]
        spans = json.loads(spans) if isinstance(spans, str) else spans
        found = decode_arrays(rows[0][3], rows[0][2]) if arrays else None
        return found, [tuple(s) for s in spans], bool(fits)
    if not rows:
        return None
    maps = selection.maps().filter(note=note, task=selection.task, model_version=selection.model)
    return peakstore.peaks_of_map(maps, note, selection.params, arrays=arrays, store=not selection.custom)


def _stored_peaks(arrays, *, note_id, task_id, model_id, method, template, config, key):
    """The map's stored spans and fits under `key` (NULL when not stored), and with `arrays` its
    scores and offsets: peakstore.peaks_of_map's query."""
    maps = RelevanceMap.objects.for_config(method, template, config).filter(
        note_id=note_id, task_id=task_id, model_version_id=model_id
    )
    rows = maps.annotate(stored_spans=peakstore.stored(key), stored_fits=peakstore.stored(key, "fits"))
    return rows.values_list("stored_spans", "stored_fits", *(("data", "tokens__offsets") if arrays else ()))[:1]


STORED_PEAKS = Prepared(_stored_peaks)


def char_peaks(note, arrays, params) -> tuple[list, bool]:
    """(word-extended character spans of the peaks, whether the map fits the note)."""
    result = peaks_of_arrays([(None, note.pk, 0)], [arrays], {note.pk: note.text}, params)[0]
    return [tuple(span) for span in result.char_spans], result.fits


def computing(note) -> list:
    """The relevance jobs under way that name this note among their notes (note_filter "ids"):
    its maps are being computed, e.g. again after a missed identifier changed its text
    (webapp.deid_ops.missed). One query over the corpus's unfinished jobs, read only for a page
    without a map."""
    jobs = RelevanceJob.objects.filter(corpus_id=note.corpus_id, status__in=ACTIVE).only("pk", "status", "note_filter")
    return [job for job in jobs.order_by("pk") if note.pk in ((job.note_filter or {}).get("ids") or ())]


def still_computing(note, selection) -> bool:
    """The page has no map of its selection yet and a job is computing the note's maps (the poll
    of the panel's "being recomputed" notice waits while this holds)."""
    if (
        selection.ready
        and selection.maps().filter(note=note, task=selection.task, model_version=selection.model).exists()
    ):
        return False
    return bool(computing(note))


def map_reach(text: str, offsets) -> MapReach | None:
    """Where a map's tokens start and end in the note, when text (not only whitespace) lies
    outside them; None for a map that covers the note."""
    if not len(offsets):
        return None
    start, end = int(offsets[:, 0].min()), int(offsets[:, 1].max())
    cut_start, cut_end = _TEXT.search(text, 0, start) is not None, _TEXT.search(text, end) is not None
    return MapReach(start, end, len(offsets), cut_start, cut_end) if cut_start or cut_end else None


def specificity(note, selection, offsets, scores, spans) -> Specificity | None:
    """This task's peaks (`spans`) against the peaks of the note's other tasks' maps of the same
    model version and configuration, found under the same parameters; None when the note has
    no other task with a map."""
    rows = list(
        selection.maps()
        .filter(note=note, model_version=selection.model)
        .exclude(task=selection.task)
        .with_arrays("task_id")
    )
    if not rows:
        return None
    found = peaks_of_arrays(
        [(None, note.pk, task_id) for task_id, _ in rows],
        [arrays for _, arrays in rows],
        {note.pk: note.text},
        selection.params,
    )
    maps = [TaskMap("this", offsets, scores, spans)]
    maps += [
        TaskMap(task_id, arrays[0], arrays[1], [tuple(s) for s in result.char_spans])
        for (task_id, arrays), result in zip(rows, found)
        if result.fits
    ]
    return _specificity_of(maps, "this", spans)


def note_specificities(note, selection) -> dict[int, Specificity | None]:
    """{task id: what `specificity` says of that task's peaks} for every task of the note with a
    map of the selection's model version and configuration, from one read of the note's maps (a
    task whose map does not fit the note, or has no peak: None)."""
    rows = list(selection.maps().filter(note=note, model_version=selection.model).with_arrays("task_id"))
    found = peaks_of_arrays(
        [(None, note.pk, task_id) for task_id, _ in rows],
        [arrays for _, arrays in rows],
        {note.pk: note.text},
        selection.params,
    )
    maps = [
        TaskMap(task_id, arrays[0], arrays[1], [tuple(s) for s in result.char_spans])
        for (task_id, arrays), result in zip(rows, found)
        if result.fits
    ]
    out: dict[int, Specificity | None] = {task_id: None for task_id, _ in rows}
    if len(maps) < 2:
        return out
    every = note_specificity(maps)
    for m in maps:
        if m.peaks:
            out[m.task] = _specificity_of(maps, m.task, m.peaks, every)
    return out


def _specificity_of(maps, task, spans, every=None) -> Specificity | None:
    if len(maps) < 2:
        return None
    mine = (every or note_specificity(maps)).of(task)
    shared = {tuple(span) for span in mine.shared_peaks}
    return Specificity(
        other_tasks=len(maps) - 1,
        same_as_all=mine.same_as_all,
        shared=tuple(i + 1 for i, span in enumerate(spans) if tuple(span) in shared),
        spearman=None if mine.spearman_mean != mine.spearman_mean else round(mine.spearman_mean, 2),
    )


def build_panel(
    note,
    selection,
    reviewer,
    *,
    window=None,
    peak=None,
    window_chars: int | None = None,
    view=None,
    sentence=None,
    by=None,
) -> NotePanel:
    """The panel of one window of the note: `window` (an index) or the window holding peak
    number `peak` (1-based); `window_chars` defaults to windows.WINDOW_CHARS. `view="sentences"`:
    the sentence view (by "sentence" or "line", `sentence` the chosen one, 0-based)."""
    started = time.perf_counter()
    text = note.text
    parts = windows.windows(text, window_chars)
    panel = NotePanel(note, selection, parts[0], n_chars=len(text))
    panel.annotations, panel.gold = gold_of(note, selection.task)
    panel.prev_id, panel.next_id = neighbours(note, selection)
    asked = {"window": window, "peak": peak, "view": view, "sentence": sentence, "by": by, "chars": window_chars}
    base, key = None, None
    found = caching.fingerprint(note, selection)  # webapp.review.caching: the decision-free part, kept
    if found is not None:
        # what picks the window, as the window it picks: no window asked is the first one
        given = {**asked, "window": windows.pick(parts, window).index, "peak": _int(peak)}
        given["window_given"] = window is not None and view == "sentences"  # the sentence's window otherwise
        key = caching.key_for(note, selection, found, panel.gold, given)
        base = caching.get(key)
    if base is None:
        base = panel_base(note, selection, parts, panel.gold, **asked, maps=found)
        if key is not None and base.found:
            caching.put(key, base)
    for name in ("found", "fits", "n_tokens", "window", "shown", "select", "reach", "reach_window", "specificity"):
        setattr(panel, name, getattr(base, name))
    panel.view, panel.sentences, spans = base.view, base.sentences, base.spans
    panel.n_peaks = len(spans)
    if not panel.found:
        panel.recomputing = computing(note)
    win = panel.window
    decisions = []
    if panel.found:
        ctx = PeakContext(note, selection.task, selection.model, selection.method, selection.template, selection.config)
        values = {"task_id": selection.task.pk, "model_id": selection.model.pk, "method": selection.method,
                  "template": selection.template, "config": selection.config}  # fmt: skip
        decisions = shown_decisions(ctx) if ANY_DECISION.rows(None, note_id=note.pk, **values) else []
    mine = {(d.start, d.end): d for d in decisions if d.reviewer_id == reviewer.pk}
    panel.decided = sum(1 for span in spans if span in mine)
    _quote(text, overlapping(decisions, win.start, win.end))
    panel.peaks = [_peak_row(text, i, spans[i], decisions, mine, base.options.get(i)) for i in panel.shown]
    panel.html = caching.fill(base.html, {p.index: p.css for p in panel.peaks})
    panel.millis = (time.perf_counter() - started) * 1000
    return panel


def panel_base(
    note, selection, parts, gold, *, window, peak, view, sentence, by, chars, maps=None
) -> caching.PanelBase:
    """What the panel shows that no decision changes (webapp.review.caching keeps it): the
    peaks, the window, the map's reach, the specificity, the sentence view, and the window's
    HTML with a placeholder where each peak's review state goes. `maps`: the note's fingerprint
    (caching.fingerprint), under which every task's specificity is kept at once."""
    text = note.text
    found = stored_peaks(note, selection, arrays=True)
    offsets, scores, spans, fits, n_tokens, reach = (), (), [], True, 0, None
    if found is not None:
        (offsets, scores), spans, fits = found
        n_tokens = len(offsets)
        if not fits:
            offsets, scores = offsets[:0], scores[:0]
        reach = map_reach(text, offsets)
    spec = None
    if found is not None and fits and spans:
        if maps is not None:
            key = caching.specificity_key(note, selection, maps)
            spec = caching.specificities(key, lambda: note_specificities(note, selection)).get(selection.task.pk)
        else:
            spec = specificity(note, selection, offsets, scores, spans)
    sentences = None
    if view == "sentences":
        sentences = sentenceview.build(text, offsets, scores, gold, by=by or "sentence", chosen=sentence)
    asked, select = _int(peak), None
    if asked is not None and 1 <= asked <= len(spans):
        select = asked - 1
        win = windows.holding(parts, spans[select][0])
    elif sentences is not None and sentences.chosen is not None and window is None:
        win = windows.holding(parts, sentences.units[sentences.chosen].start)
    else:
        win = windows.pick(parts, window)
    shown = windows.spans_in(spans, win)
    html_ = window_html(
        text,
        win,
        offsets,
        scores,
        [spans[i] for i in shown],
        gold,
        first_peak=shown.start,
        peak_classes=[caching.PLACEHOLDER.format(i) for i in shown],
        markers=reach_markers(reach, win),
    )
    reach_window = None
    if reach is not None:
        reach_window = windows.holding(parts, reach.end if reach.cut_end else reach.start).index
    return caching.PanelBase(
        found=found is not None,
        fits=bool(fits),
        n_tokens=n_tokens,
        spans=list(spans),
        html=html_,
        window=win,
        shown=shown,
        select=select,
        reach=reach,
        reach_window=reach_window,
        specificity=spec,
        view="sentences" if view == "sentences" else "words",
        sentences=sentences,
        options={i: boundary_options(text, *spans[i]) for i in shown},
    )


def decided_row(note, selection, reviewer, spans, span) -> tuple[PeakRow, int]:
    """After a decision on `span`, one of the map's peaks `spans`: its row as the panel shows it,
    and how many of the peaks the reviewer has decided (what a decision's answer shows, without
    building the whole panel)."""
    ctx = PeakContext(note, selection.task, selection.model, selection.method, selection.template, selection.config)
    decisions = shown_decisions(ctx)
    mine = {(d.start, d.end): d for d in decisions if d.reviewer_id == reviewer.pk}
    _quote(note.text, overlapping(decisions, *span))
    return _peak_row(note.text, spans.index(span), span, decisions, mine), sum(1 for s in spans if s in mine)


def _peak_row(text: str, index: int, span, decisions, mine, options=None) -> PeakRow:
    """`options`: the peak's boundary choices as panel_base found them (none selected), if kept."""
    a, b = span
    near = overlapping(decisions, a, b)
    row = PeakRow(index, a, b, text[a : min(b, a + QUOTE_CHARS)], mine.get((a, b)), near, is_conflict(near))
    if options is None:
        row.start_options, row.end_options = boundary_options(text, a, b, row.mine)
    else:
        row.start_options, row.end_options = _selected(options, a, b, row.mine)
    return row


def options_html(choices) -> str:
    """The `<option>`s of a boundary select, as the template wrote them with a loop (the same
    escaping): a peak row's two selects were half of the note page's template time."""
    return mark_safe(
        "".join(
            f'<option value="{offset}"{" selected" if selected else ""}>{html.escape(str(label))}</option>'
            for offset, label, selected in choices
        )
    )


@dataclass(frozen=True)
class RowPage:
    """What a peak row's HTML takes from its page: the decision form's address, its CSRF field and
    selection fields (written once a request), the window, the guideline version, the signed-in
    reviewer and whether they may decide."""

    decide_url: str
    csrf_html: str
    fields_html: str
    window_index: int
    guideline_version: int
    user_id: int | None
    can_review: bool


_row_words: dict[str, dict] = {}


def _words() -> dict:
    """The row's words in the active language, escaped as the template escaped them ({% translate
    %} escapes its text, {% blocktranslate %} its values only), kept per process and language."""
    language = get_language()
    words = _row_words.get(language)
    if words is None:
        esc = html.escape
        words = {
            "characters": _("characters %(start)s–%(end)s"),
            "you_said": esc(_("You:")),
            "to": esc(pgettext("a decision adjusted to a span", "to")),
            "on": esc(pgettext("a decision on a span", "on")),
            "not_decided": esc(_("Not decided by you.")),
            "disagree": esc(_("Reviewers disagree on this peak:")),
            "you": esc(_("you")),
            "accept": esc(_("Accept")),
            "reject": esc(_("Reject")),
            "adjust": esc(_("Adjust boundaries or add a note")),
            "start": esc(pgettext("of a span", "Start")),
            "end": esc(pgettext("of a span", "End")),
            "your_note": esc(_("Your note on this peak")),
            "save": esc(_("Save adjusted boundaries")),
            "decision": {value: esc(str(label)) for value, label in PeakDecision.Decision.choices},
        }
        _row_words[language] = words
    return words


def _when(value) -> str:
    """A decision's time as the template's |date:"Y-m-d H:i" wrote it (in the current time zone);
    the format's fields written directly (dateformat's parser was a tenth of a decision's answer)."""
    t = template_localtime(value)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}"


def _cut(text: str, length: int) -> str:
    """|truncatechars:length, escaped."""
    return html.escape(Truncator(text).chars(length))


def row_html(row: PeakRow, page: RowPage) -> str:
    """A peak's row (its quote, the reviewer's decision, the others', the decision form), written
    in Python as the note page's template wrote it: every text from the note or a reviewer is
    escaped. A page's rows were most of its template time."""
    w, esc = _words(), html.escape
    mine, i = row.mine, row.index
    said = w["decision"]
    if mine is not None:
        state = f'{w["you_said"]} <strong class="state-word">{said.get(mine.decision, esc(mine.decision))}</strong>'
        if mine.adjusted_start is not None:
            state += f" {w['to']} <q>{_cut(mine.adjusted_text, 140)}</q>"
        state += f" · {_when(mine.updated)}"
        if mine.comment:
            state += f" · “{esc(mine.comment)}”"
    else:
        state = f'<span class="muted">{w["not_decided"]}</span>'
    if row.conflict:
        items = []
        for d in row.decisions:
            item = f"<li>{esc(d.reviewer.get_username())}"
            if d.reviewer_id == page.user_id:
                item += f" ({w['you']})"
            item += f": <strong>{said.get(d.decision, esc(d.decision))}</strong>"
            if d.adjusted_start is not None:
                item += f" {w['to']} <q>{_cut(d.adjusted_text, 80)}</q>"
            item += f" {w['on']} <q>{_cut(d.span_text, 80)}</q> · {_when(d.updated)}"
            if d.comment:
                item += f" · “{esc(d.comment)}”"
            items.append(item + "</li>")
        others = (
            f'  \n  <div class="conflict" role="note"><strong>{w["disagree"]}</strong>\n'
            f"    <ul>{''.join(items)}</ul>\n  </div>\n  "
        )
    else:
        others = "  " + "".join(
            f'<p class="others muted">{esc(d.reviewer.get_username())}: {said.get(d.decision, esc(d.decision))}'
            f" · {_when(d.updated)}</p>"
            for d in row.decisions
            if d.reviewer_id != page.user_id
        )
    form = ""
    if page.can_review:
        url = esc(page.decide_url)
        opened = " open" if mine is not None and mine.decision == "adjust" else ""
        comment = esc(mine.comment) if mine is not None else ""
        version = mine.version if mine is not None and mine.version else 0
        hidden = '<input type="hidden" name="{}" value="{}">'.format
        button = '<button type="submit" name="decision" value="{0}" class="{1}">{2} <kbd>{3}</kbd></button>'.format
        select = '<select name="adjusted_{0}" data-bound="{0}">{1}</select>'.format
        form = (
            f'\n  <form method="post" action="{url}" class="decide-form"\n'
            f'        hx-post="{url}" hx-target="#peak-item-{i}" hx-swap="outerHTML">\n'
            f"    {page.csrf_html}{page.fields_html}\n"
            f"    {hidden('start', row.start)}{hidden('end', row.end)}{hidden('window', page.window_index)}\n"
            f"    {hidden('version', version)}{hidden('guideline', page.guideline_version)}{hidden('active_ms', '')}\n"
            f"    {button('accept', 'accept', w['accept'], 'a')}\n"
            f"    {button('reject', 'reject', w['reject'], 'x')}\n"
            f"    <details{opened}><summary>{w['adjust']}</summary>\n"
            f'      <div class="adjust">\n'
            f"        <label>{w['start']} {select('start', options_html(row.start_options))}</label>\n"
            f"        <label>{w['end']} {select('end', options_html(row.end_options))}</label>\n"
            f'        <label class="wide">{w["your_note"]} '
            f'<textarea name="comment" rows="2" maxlength="2000">{comment}</textarea></label>\n'
            f"        {button('adjust', 'adjust-button', w['save'], 'Enter')}\n"
            f"      </div>\n"
            f"    </details>\n"
            f"  </form>\n  "
        )
    characters = w["characters"] % {"start": row.start, "end": row.end}
    return mark_safe(
        f'\n<li class="peak-item {row.css}" id="peak-item-{i}" data-peak="{i}">\n'
        f'  <div class="peak-head"><span class="peak-no">{row.number}</span> <q>{_cut(row.text, 140)}</q> '
        f'<span class="muted">{characters}</span></div>\n'
        f'  <p class="peak-state">{state}</p>\n'
        f"{others}\n"
        f"  {form}\n</li>\n"
    )


def _selected(options, start: int, end: int, mine) -> tuple[list, list]:
    """Boundary choices with the reviewer's adjusted bounds (else the peak's own) selected."""
    chosen_start = mine.adjusted_start if mine is not None and mine.adjusted_start is not None else start
    chosen_end = mine.adjusted_end if mine is not None and mine.adjusted_end is not None else end
    starts, ends = options
    return (
        [(o, label, o == chosen_start) for o, label, _ in starts],
        [(o, label, o == chosen_end) for o, label, _ in ends],
    )


def _quote(text: str, decisions) -> None:
    """What each decision covers, and its adjusted span, as the page quotes them."""
    for d in decisions:
        d.span_text = text[d.start : min(d.end, d.start + QUOTE_CHARS)]
        d.adjusted_text = (
            text[d.adjusted_start : min(d.adjusted_end, d.adjusted_start + QUOTE_CHARS)]
            if d.adjusted_start is not None
            else ""
        )


def window_html(text, win, offsets, scores, peaks, gold, *, first_peak=0, peak_classes=(), markers=None) -> str:
    """HTML of the window's characters: the map's tokens, the peaks and the gold spans that
    reach into it, cut to it."""
    local_offsets, local_scores = rendering.tokens_in(offsets, scores, win.start, win.end)
    piece = text[win.start : win.end]
    return rendering.heat_html(
        piece,
        local_offsets,
        local_scores,
        windows.clip(peaks, win),
        windows.clip(gold, win),
        peak_classes=peak_classes,
        first_peak=first_peak,
        markers=markers,
    )


def reach_markers(reach: MapReach | None, win, *, id_prefix: str = "") -> dict[int, str]:
    """Markers where the map starts or ends inside the window; `id_prefix` keeps the ids apart
    where a page shows several maps."""
    if reach is None:
        return {}
    out = {}
    tokens = {"tokens": number_format(reach.tokens, force_grouping=True)}
    if reach.cut_start and win.holds(reach.start):
        label = _("relevance map starts here: the model saw the last %(tokens)s tokens") % tokens
        out[reach.start - win.start] = edge_marker("start", label, f"{id_prefix}map-start")
    if reach.cut_end and win.holds(reach.end):
        label = _("relevance map ends here: the model saw the first %(tokens)s tokens") % tokens
        out[reach.end - win.start] = edge_marker("end", label, f"{id_prefix}map-end")
    return out


def edge_marker(edge: str, label: str, element_id: str) -> str:
    """A marker where a map starts or ends ("start" or "end"), drawn by CSS from data-label, so
    the note's text is unchanged."""
    label = html.escape(label)
    return (
        f'<span class="map-edge map-{edge}" id="{element_id}" role="note" aria-label="{label}" '
        f'data-label="{label}"></span>'
    )


def boundary_options(text: str, start: int, end: int, mine=None) -> tuple[list, list]:
    """Choices for an adjusted start and end: word starts from ADJUST_WORDS words before the
    peak's start to ADJUST_WORDS words after it (inside the peak), and word ends from
    ADJUST_WORDS words before its end (inside the peak) to ADJUST_WORDS words after it. Words
    are looked for within ADJUST_REACH characters of each boundary, so a long peak or note
    costs what a short one does. The peak's own boundaries are always offered; the reviewer's
    adjusted ones are selected."""
    at_start, at_end = _words_around(text, start), _words_around(text, end)
    k = bisect.bisect_right([w[0] for w in at_start], start) - 1  # the word at or before the start
    m = bisect.bisect_left([w[0] for w in at_end], end) - 1  # the last word starting before the end
    begin_choices = {start} | {
        a for a, _ in at_start[max(0, k - ADJUST_WORDS) : max(k, 0) + ADJUST_WORDS + 1] if a < end
    }
    end_choices = {end} | {b for _, b in at_end[max(0, m - ADJUST_WORDS) : max(m, 0) + ADJUST_WORDS + 1] if b > start}
    chosen_start = mine.adjusted_start if mine is not None and mine.adjusted_start is not None else start
    chosen_end = mine.adjusted_end if mine is not None and mine.adjusted_end is not None else end
    word_at = {a: b for a, b in at_start}
    word_to = {b: a for a, b in at_end}

    def start_label(offset):
        """The word a boundary starts, to name the choice."""
        word = text[offset : word_at[offset]] if offset in word_at else text[offset : offset + 12]
        return f"{offset}: «{word.strip()[:30]}…»"

    def end_label(offset):
        word = text[word_to[offset] : offset] if offset in word_to else text[max(0, offset - 12) : offset]
        return f"{offset}: «…{word.strip()[-30:]}»"

    return (
        [(o, start_label(o), o == chosen_start) for o in sorted(begin_choices)],
        [(o, end_label(o), o == chosen_end) for o in sorted(end_choices)],
    )


def _words_around(text: str, offset: int) -> list[tuple[int, int]]:
    """The words within ADJUST_REACH characters of an offset; a word cut by that range is left out."""
    lo, hi = max(0, offset - ADJUST_REACH), min(len(text), offset + ADJUST_REACH)
    found = [m.span() for m in _WORD.finditer(text, lo, hi)]
    if found and found[0][0] == lo and lo > 0 and _WORD.match(text, lo - 1):
        found.pop(0)
    if found and found[-1][1] == hi and hi < len(text) and _WORD.match(text, hi):
        found.pop()
    return found


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def neighbours(note, selection) -> tuple[int | None, int | None]:
    """The previous and next note of the corpus (by id) that has a map of the selection's task,
    model version, method and template; without a task, the previous and next note. One query:
    two index-bounded subqueries (ORDER BY ... LIMIT 1), built once per process
    (webapp.db.prepared)."""
    if selection.ready:
        values = {"task_id": selection.task.pk, "model_id": selection.model.pk, "method": selection.method,
                  "template": selection.template, "config": selection.config}  # fmt: skip
    else:
        values = {}
    rows = NEIGHBOURS.rows(selection.ready, note_id=note.pk, corpus_id=note.corpus_id, **values)
    return rows[0] if rows else (None, None)


def _neighbours(ready, *, note_id, corpus_id, task_id=0, model_id=0, method="", template="", config=""):
    if ready:
        maps = RelevanceMap.objects.for_config(method, template, config).filter(
            note__corpus_id=corpus_id, task_id=task_id, model_version_id=model_id
        )
        prev_ids = maps.filter(note_id__lt=note_id).order_by("-note_id").values("note_id")[:1]
        next_ids = maps.filter(note_id__gt=note_id).order_by("note_id").values("note_id")[:1]
    else:
        notes = Note.objects.filter(corpus_id=corpus_id)
        prev_ids = notes.filter(pk__lt=note_id).order_by("-pk").values("pk")[:1]
        next_ids = notes.filter(pk__gt=note_id).order_by("pk").values("pk")[:1]
    return (
        Note.objects.filter(pk=note_id)
        .annotate(prev_id=Subquery(prev_ids), next_id=Subquery(next_ids))
        .values_list("prev_id", "next_id")[:1]
    )


NEIGHBOURS = Prepared(_neighbours)
