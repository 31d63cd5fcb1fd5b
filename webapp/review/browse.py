"""The note browser of the review pages: a corpus's notes with, under the chosen model version,
method, template (and task) and peak parameters, how many maps and peaks each has and how far
its review is.

Paging is by keyset on note id (never OFFSET, never COUNT over the corpus). With a task chosen
the notes come from that task's maps (index pipeline_map_lookup: model version, method, task,
note), otherwise from the corpus's notes (index corpus_note_corpus_id_idx).

Filters that need a note's text or peaks (review state, number of peaks, text search) cannot
use an index: each page looks at no more than SCAN notes after the cursor, computes what it
needs for them in chunks (the first one a page's worth, so a filter most notes pass costs about
what the unfiltered page does), and stops as soon as the page is full. "partly" and "fully"
first keep only the window's notes that have a decision under the selection (one EXISTS query
over index review_decision_note_task): no other note can be in those states, so their peaks are
never computed and a window without decisions costs two queries. The page says which notes were
searched, and the "next" link continues after the last note looked at. The words of a text
search match as in the corpus browser (webapp.corpus.search: stemmed in the corpus's language on
PostgreSQL).

Review state of a note: over the peaks of its maps in the selection, "no peaks", "undecided"
(no peak decided by anyone), "partly" or "fully" reviewed. A peak counts as decided when some
reviewer has a decision on exactly its span. (Peak counts: see `summarise`.)

Memory: `summarise` reads the notes' texts and maps in batches of at most TEXT_BUDGET characters
(one query for the maps and one for the texts a batch; short notes make one batch), so a page of
long notes holds a few of them at a time, never CHUNK notes of IMPORT_MAX_NOTE_CHARS each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef
from django.db.models.functions import Length
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.peaks import peaks_of_rows
from webapp.corpus import search
from webapp.corpus.models import Note
from webapp.review.models import PeakDecision

PER_PAGE = 50
SCAN = 1_000
CHUNK = 250
TEXT_BUDGET = 2_000_000  # characters of note text (with their maps) summarised at once
STATES = (
    ("", gettext_lazy("any")),
    ("undecided", gettext_lazy("undecided")),
    ("partly", gettext_lazy("partly reviewed")),
    ("fully", gettext_lazy("fully reviewed")),
    ("none", gettext_lazy("no peaks (or not computed yet)")),
)
REVIEWED = ("partly", "fully")  # states only a note with some decision under the selection can be in


@dataclass
class Filters:
    state: str = ""
    min_peaks: int | None = None
    max_peaks: int | None = None
    q: str = ""

    @classmethod
    def from_query(cls, query) -> Filters:
        def number(name):
            try:
                value = int(query.get(name, ""))
            except ValueError:
                return None
            return value if value >= 0 else None

        state = query.get("state", "")
        return cls(
            state if state in dict(STATES) else "",
            number("min_peaks"),
            number("max_peaks"),
            query.get("q", "").strip()[:200],
        )

    @property
    def scanning(self) -> bool:
        return bool(self.state or self.q) or self.min_peaks is not None or self.max_peaks is not None

    def keep(self, row) -> bool:
        if self.state and row.state != self.state:
            return False
        if self.min_peaks is not None and row.peaks < self.min_peaks:
            return False
        if self.max_peaks is not None and row.peaks > self.max_peaks:
            return False
        return True


@dataclass
class NoteRow:
    id: int
    external_id: str
    length: int
    maps: int = 0
    peaks: int = 0
    decided: int = 0

    @property
    def state(self) -> str:
        if not self.peaks:
            return "none"
        if not self.decided:
            return "undecided"
        return "fully" if self.decided >= self.peaks else "partly"

    @property
    def state_label(self) -> str:
        if not self.maps:  # "no peaks" would read as computed and empty
            return _("not computed yet")
        return dict(STATES)[self.state]


@dataclass
class Page:
    rows: list = field(default_factory=list)
    next_after: int | None = None
    scanned: int = 0
    first_id: int | None = None
    last_id: int | None = None
    limited: bool = False  # filters looked at a bounded window


def candidates(corpus, selection, after: int | None, limit: int) -> list[int]:
    if selection.task is not None and selection.model is not None:
        ids = (
            selection.maps()
            .filter(note__corpus=corpus, task=selection.task, model_version=selection.model)
            .order_by("note_id")
            .values_list("note_id", flat=True)
        )
        if after is not None:
            ids = ids.filter(note_id__gt=after)
    else:
        ids = Note.objects.filter(corpus=corpus).order_by("id").values_list("id", flat=True)
        if after is not None:
            ids = ids.filter(id__gt=after)
    return list(ids[:limit])


def summarise(note_ids: list[int], selection) -> dict[int, NoteRow]:
    """Rows for the notes, with their maps, peaks and decided peaks under the selection.

    Peaks are counted exactly as the note page shows them (ml.peaks: widened to words and
    trimmed, from ONE batch call for all the maps), so the two pages always agree."""
    rows = {
        n["id"]: NoteRow(n["id"], n["external_id"], n["length"])
        for n in Note.objects.filter(pk__in=note_ids)
        .annotate(length=Length("text"))
        .values("id", "external_id", "length")
    }
    if selection.model is None or not rows:
        return rows
    maps = selection.maps().filter(note_id__in=note_ids, model_version=selection.model)
    decisions = decisions_under(selection).filter(note_id__in=note_ids)
    if selection.task is not None:
        maps = maps.filter(task=selection.task)
    decided = None
    for batch in _batches(note_ids, rows):
        map_rows = list(maps.filter(note_id__in=batch).with_arrays("id", "note_id", "task_id"))
        if not map_rows:
            continue
        if decided is None:
            decided = set(decisions.values_list("note_id", "task_id", "start", "end"))
        texts = dict(Note.objects.filter(pk__in={r[1] for r in map_rows}).values_list("pk", "text"))
        for peaks in peaks_of_rows(map_rows, texts, selection.params):
            row = rows[peaks.note_id]
            row.maps += 1
            row.peaks += peaks.count
            row.decided += sum(1 for a, b in peaks.char_spans if (peaks.note_id, peaks.task_id, a, b) in decided)
    return rows


def decisions_under(selection):
    """Every reviewer's peak decisions on the maps the selection shows (its task, if chosen)."""
    decisions = PeakDecision.objects.filter(
        model_version=selection.model,
        method=selection.method,
        template=selection.template,
        config_key=selection.config,
    )
    return decisions.filter(task=selection.task) if selection.task is not None else decisions


def with_decisions(note_ids: list[int], selection) -> list[int]:
    """The notes of note_ids (in their order) with some decision under the selection."""
    if selection.model is None or not note_ids:
        return []
    decided = Note.objects.filter(pk__in=note_ids).filter(
        Exists(decisions_under(selection).filter(note_id=OuterRef("pk")))
    )
    found = set(decided.values_list("pk", flat=True))
    return [i for i in note_ids if i in found]


def _batches(note_ids: list[int], rows: dict[int, NoteRow]) -> list[list[int]]:
    """The notes in groups of at most TEXT_BUDGET characters (a longer note alone): what one
    batch holds in memory, texts and maps, stays bounded however long the notes are."""
    out, size = [[]], 0
    for note_id in note_ids:
        length = rows[note_id].length if note_id in rows else 0
        if out[-1] and size + length > TEXT_BUDGET:
            out.append([])
            size = 0
        out[-1].append(note_id)
        size += length
    return out


def _chunks(pool: list[int], per_page: int):
    """The pool a page's worth first (a filter most notes pass is then answered by it alone),
    then CHUNK notes at a time."""
    first = min(per_page, CHUNK)
    if pool:
        yield pool[:first]
    for k in range(first, len(pool), CHUNK):
        yield pool[k : k + CHUNK]


def browse(
    corpus, selection, filters: Filters, after=None, *, per_page: int | None = None, scan: int | None = None
) -> Page:
    per_page = per_page or PER_PAGE
    scan = scan or SCAN
    try:
        after = int(after) if after not in (None, "") else None
    except ValueError:
        after = None
    if not filters.scanning:
        ids = candidates(corpus, selection, after, per_page + 1)
        shown = ids[:per_page]
        rows = summarise(shown, selection)
        return Page(
            [rows[i] for i in shown if i in rows],
            shown[-1] if len(ids) > per_page else None,
            len(shown),
            shown[0] if shown else None,
            shown[-1] if shown else None,
        )
    window = candidates(corpus, selection, after, scan + 1)
    more = len(window) > scan
    window = window[:scan]
    page = Page(limited=True, first_id=window[0] if window else None)
    if filters.q and window:
        matches = search.matching(Note.objects.filter(pk__in=window), filters.q, language=corpus.language).values_list(
            "pk", flat=True
        )
        matching = set(matches)
        pool = [i for i in window if i in matching]
    else:
        pool = window
    if filters.state in REVIEWED:  # the window's other notes cannot match: skip their peaks
        pool = with_decisions(pool, selection)
    examined_to = None
    for chunk in _chunks(pool, per_page):
        rows = summarise(chunk, selection)
        for note_id in chunk:
            examined_to = note_id
            row = rows.get(note_id)
            if row is not None and filters.keep(row):
                page.rows.append(row)
                if len(page.rows) == per_page:
                    break
        if len(page.rows) == per_page:
            break
    stopped_early = len(page.rows) == per_page and examined_to is not None and examined_to != window[-1]
    if stopped_early:
        page.next_after = page.last_id = examined_to
    else:
        page.next_after = window[-1] if more else None
        page.last_id = window[-1] if window else None
    page.scanned = window.index(page.last_id) + 1 if page.last_id is not None else 0
    return page
