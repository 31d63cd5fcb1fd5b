"""Base vs DSM: the relevance of two model versions on the same note and task, side by side and
as a difference map (first minus second: red and hatched where the first is higher, green and
underlined where the second is, as in the paper's Figure 2), and a summary over the corpus:
the relative change of relevance on gold evidence spans (the paper: +37.2% after DSM).

Tokenisations: a fine-tuned model keeps its parent's tokenizer, but two model versions may
not share one. The maps are compared at character level (webapp.lib.rendering): the
difference map cuts the text at the union of both maps' token boundaries; for the gold
relevance, the second map is projected onto the first map's tokens (length-weighted mean of its
per-character scores) and ml.metrics is applied on the first map's tokens. With identical
tokenisations the projection is the identity (and is skipped).

A long note is compared one window at a time (webapp.lib.windows, `?window=K` as on the note
page): the two heatmaps and the difference map are built for the window's characters only, while
the figures of the whole note (same tokens, the relevance on gold and its change) come from the
maps' token arrays (numpy, a few arrays of the maps' length), never from HTML or an object per
character or word of the note. A map cut by the model's context (noteview.MapReach) gets the note
page's notice and marker where it stops; the difference map covers only the characters both maps
reach (outside them one side has no relevance, so there is nothing to compare), with a marker
where that part starts or ends.

Summary sample: the first SUMMARY_PAIRS (note, task) pairs with gold evidence (annotations in
id order) that have maps of both versions; per pair the gold relevance is the sum of the
normalised scores on gold tokens (ml.metrics.gold_relevance, measure "score"), aggregated by
ml.metrics.aggregate_relative_change, overall and per task, each with a paired bootstrap 95% CI
and p-value over the pairs (ml.metrics.relative_change_bootstrap: both models' values of a pair
are drawn together; SUMMARY_RESAMPLES resamples, seed 0), shown from MIN_PAIRS pairs on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db.models.functions import Length
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.metrics import (
    PairedDiff,
    aggregate_relative_change,
    gold_relevance,
    relative_change_bootstrap,
    relative_change_on_gold,
)
from webapp.corpus.models import Annotation, Note, Task
from webapp.lib import rendering, windows
from webapp.pipeline.models import ModelVersion, RelevanceMap
from webapp.review.noteview import MapReach, edge_marker, gold_of, map_reach, reach_markers, window_html

SUMMARY_PAIRS = 1_000
SUMMARY_RESAMPLES = 1_000
#: Below this many pairs a bootstrap CI is too narrow and its p-value too small to report (n
#: pairs that all rise give p = 2 / (R + 1) whatever n): the change alone is shown.
MIN_PAIRS = 10
ANNOTATION_SCAN = 20_000
CHANGE_BINS = [
    (-math.inf, -0.5, gettext_lazy("below −50%")),
    (-0.5, -0.2, gettext_lazy("−50 to −20%")),
    (-0.2, -0.05, gettext_lazy("−20 to −5%")),
    (-0.05, 0.05, gettext_lazy("−5 to +5%")),
    (0.05, 0.2, gettext_lazy("+5 to +20%")),
    (0.2, 0.5, gettext_lazy("+20 to +50%")),
    (0.5, 1.0, gettext_lazy("+50 to +100%")),
    (1.0, math.inf, gettext_lazy("above +100%")),
]


@dataclass(frozen=True)
class MapEdge:
    """Where one model's map of the note stops (it covers only what the model's context held)."""

    side: str  # "first" or "second"
    model: ModelVersion
    reach: MapReach
    window: int  # index of the window holding the edge


@dataclass
class NoteComparison:
    window: windows.Window | None = None
    n_chars: int = 0
    found_first: bool = False
    found_second: bool = False
    same_tokens: bool = True
    html_first: str = ""  # of the window
    html_second: str = ""
    html_diff: str = ""
    edges: list[MapEdge] = field(default_factory=list)
    gold: list = field(default_factory=list)
    annotations: list = field(default_factory=list)
    change: float = math.nan  # relative change on gold for this note (second vs first)
    gold_first: float = math.nan
    gold_second: float = math.nan

    @property
    def compared(self) -> bool:
        return self.found_first and self.found_second

    @property
    def change_percent(self) -> float:
        return 100 * self.change


@dataclass
class Change:
    """A mean relative change on gold with its paired bootstrap CI, as percentages for pages."""

    result: PairedDiff
    ratio_of_sums: PairedDiff | None = None

    @property
    def has_ci(self) -> bool:
        return self.result.n >= MIN_PAIRS

    @property
    def percent(self) -> float:
        return 100 * self.result.diff

    @property
    def low_percent(self) -> float:
        return 100 * self.result.low

    @property
    def high_percent(self) -> float:
        return 100 * self.result.high

    @property
    def ratio_low_percent(self) -> float:
        return 100 * self.ratio_of_sums.low if self.ratio_of_sums else math.nan

    @property
    def ratio_high_percent(self) -> float:
        return 100 * self.ratio_of_sums.high if self.ratio_of_sums else math.nan


@dataclass
class TaskChange:
    task: Task
    pairs: int  # with relevance on gold under the first model
    undefined: int  # without: left out
    change: Change


@dataclass
class Summary:
    pairs: int = 0
    undefined: int = 0
    projected: int = 0  # pairs whose two maps had different tokenisations
    mean_change: float = math.nan
    ratio_of_sums_change: float = math.nan
    histogram: list = field(default_factory=list)  # [(label, count, percent of the largest bin)]
    limit: int = SUMMARY_PAIRS
    overall: Change | None = None  # mean_change and ratio_of_sums_change with their CIs
    per_task: list[TaskChange] = field(default_factory=list)  # by task description
    gold_pairs: int = 0  # annotated (note, task) pairs with gold evidence looked at
    first_maps: int = 0  # of those, how many have a map of the first model / of the second
    second_maps: int = 0
    min_pairs: int = MIN_PAIRS  # fewest pairs that get a CI and p-value

    @property
    def mean_change_percent(self) -> float:
        return 100 * self.mean_change

    @property
    def ratio_of_sums_percent(self) -> float:
        return 100 * self.ratio_of_sums_change


def _arrays(note_id, task_id, model, method, template, config_key=""):
    row = (
        RelevanceMap.objects.for_config(method, template, config_key)
        .filter(note_id=note_id, task_id=task_id, model_version=model)
        .with_arrays()
        .first()
    )
    return row[0] if row is not None else None


def compare_note(
    note,
    task,
    first,
    second,
    method: str,
    template: str,
    config_key: str = "",
    *,
    window=None,
    window_chars: int | None = None,
) -> NoteComparison:
    """The comparison of one window of the note (`window`: an index, as in ?window=K) and the
    figures of the whole note; `window_chars` defaults to windows.WINDOW_CHARS."""
    text = note.text
    parts = windows.windows(text, window_chars)
    win = windows.pick(parts, window)
    out = NoteComparison(window=win, n_chars=len(text))
    out.annotations, out.gold = gold_of(note, task)
    a = _arrays(note.pk, task.pk, first, method, template, config_key) if first and task else None
    b = _arrays(note.pk, task.pk, second, method, template, config_key) if second and task else None
    out.found_first, out.found_second = a is not None, b is not None
    for side, model, arrays in (("first", first, a), ("second", second, b)):
        offsets, scores = arrays if arrays is not None else ([], [])
        reach = map_reach(text, offsets) if arrays is not None else None
        if reach is not None:
            edge = reach.end if reach.cut_end else reach.start
            out.edges.append(MapEdge(side, model, reach, windows.holding(parts, edge).index))
        setattr(
            out,
            f"html_{side}",
            window_html(
                text, win, offsets, scores, (), out.gold, markers=reach_markers(reach, win, id_prefix=f"{side}-")
            ),
        )
    if a is None or b is None:
        return out
    out.same_tokens = rendering.same_tokens(a[0], b[0])
    out.html_diff = _diff_html(text, win, a, b, out.gold, out.edges)
    if out.gold:
        projected = b[1] if out.same_tokens else rendering.project_scores(b[0], b[1], a[0], len(text))
        out.gold_first = gold_relevance(a[1], a[0], out.gold)
        out.gold_second = gold_relevance(projected, a[0], out.gold)
        out.change = relative_change_on_gold(a[1], projected, a[0], out.gold)
    return out


def _diff_html(text, win, a, b, gold, edges) -> str:
    """The difference map of the window, over the characters both maps reach."""
    low, high = 0, len(text)
    if edges and len(a[0]) and len(b[0]):
        low = max(int(a[0][:, 0].min()), int(b[0][:, 0].min()))
        high = min(int(a[0][:, 1].max()), int(b[0][:, 1].max()))
    start, end = max(win.start, low), min(win.end, high)
    if start < end:
        (off_a, sc_a), (off_b, sc_b) = (rendering.tokens_in(offsets, scores, start, end) for offsets, scores in (a, b))
        off_a, off_b = off_a + (start - win.start), off_b + (start - win.start)  # from the window's start
    else:  # the window lies outside what both maps reach
        off_a = off_b = np.zeros((0, 2), np.int64)
        sc_a = sc_b = np.zeros(0)
    piece = text[win.start : win.end]
    segs = rendering.diff_segments(piece, off_a, sc_a, off_b, sc_b, windows.clip(gold, win))
    return rendering.diff_html(piece, segs, markers=_diff_markers(text, win, low, high, edges) if edges else None)


def _diff_markers(text, win, low: int, high: int, edges: list[MapEdge]) -> dict[int, str]:
    """Markers where the compared characters start or end inside the window, naming the map(s)
    that stop there."""
    common = map_reach(text, np.array([[low, high]])) if high > low else None
    if common is None:
        return {}
    out = {}
    for kind, offset, cut in (("start", common.start, common.cut_start), ("end", common.end, common.cut_end)):
        if not cut or not win.holds(offset):
            continue
        names = [
            e.model.name
            for e in edges
            if (e.reach.end if kind == "end" else e.reach.start) == offset
            and (e.reach.cut_end if kind == "end" else e.reach.cut_start)
        ]
        if len(names) > 1:
            whose = _("both relevance maps")
        elif names:
            whose = _("%(model)s's relevance map") % {"model": names[0]}
        else:
            whose = _("a map")
        label = (
            _("difference starts here, with %(whose)s")
            if kind == "start"
            else _("difference ends here, with %(whose)s")
        )
        out[offset - win.start] = edge_marker(kind, label % {"whose": whose}, f"diff-map-{kind}")
    return out


def corpus_summary(
    corpus, first, second, method: str, template: str, config_key: str = "", *, limit: int = SUMMARY_PAIRS
) -> Summary:
    summary = Summary(limit=limit)
    gold: dict[tuple, set] = {}
    rows = (
        Annotation.objects.filter(note__corpus=corpus)
        .exclude(evidence=[])
        .order_by("id")
        .values_list("note_id", "task_id", "evidence")[:ANNOTATION_SCAN]
    )
    for note_id, task_id, evidence in rows:
        gold.setdefault((note_id, task_id), set()).update((int(x), int(y)) for x, y in evidence)
    summary.gold_pairs = len(gold)
    if not gold or first is None or second is None:
        return summary
    maps: dict[tuple, dict] = defaultdict(dict)
    notes = sorted({n for n, _ in gold})
    for start in range(0, len(notes), 2_000):
        chunk = notes[start : start + 2_000]
        for note_id, task_id, model_id, arrays in (
            RelevanceMap.objects.for_config(method, template, config_key)
            .filter(note_id__in=chunk, model_version__in=[first, second])
            .with_arrays("note_id", "task_id", "model_version_id")
        ):
            if (note_id, task_id) in gold:
                maps[(note_id, task_id)][model_id] = arrays
    both = [key for key in gold if first.pk in maps.get(key, {}) and second.pk in maps.get(key, {})][:limit]
    lengths = dict(Note.objects.filter(pk__in={n for n, _ in both}).annotate(n=Length("text")).values_list("pk", "n"))
    summary.first_maps = sum(1 for found in maps.values() if first.pk in found)
    summary.second_maps = sum(1 for found in maps.values() if second.pk in found)
    gold_a, gold_b, changes, task_ids = [], [], [], []
    for key in both:
        off_a, sc_a = maps[key][first.pk]
        off_b, sc_b = maps[key][second.pk]
        if not rendering.same_tokens(off_a, off_b):
            summary.projected += 1
        projected = rendering.project_scores(off_b, sc_b, off_a, lengths[key[0]])
        spans = sorted(gold[key])
        ga, gb = gold_relevance(sc_a, off_a, spans), gold_relevance(projected, off_a, spans)
        gold_a.append(ga)
        gold_b.append(gb)
        task_ids.append(key[1])
        if ga:
            changes.append((gb - ga) / ga)
    aggregate = aggregate_relative_change(gold_a, gold_b)
    summary.pairs = aggregate["n_pairs"]
    summary.undefined = aggregate["n_undefined"]
    summary.mean_change = aggregate["mean_change"]
    summary.ratio_of_sums_change = aggregate["ratio_of_sums_change"]
    counts = [sum(1 for c in changes if low <= c < high) for low, high, _ in CHANGE_BINS]
    top = max(counts, default=0)
    summary.histogram = [
        (label, n, round(100 * n / top) if top else 0) for (_, _, label), n in zip(CHANGE_BINS, counts)
    ]
    if summary.pairs:
        summary.overall = _change(gold_a, gold_b, ratio=True)
        summary.per_task = per_task_changes(gold_a, gold_b, task_ids)
    return summary


def per_task_changes(gold_a: list[float], gold_b: list[float], task_ids: list[int]) -> list[TaskChange]:
    """The relative change on gold of each task's pairs (`gold_a[i]`, `gold_b[i]` of task
    `task_ids[i]`), with its paired bootstrap CI; tasks in description order."""
    by_task: dict[int, tuple[list, list]] = defaultdict(lambda: ([], []))
    for a, b, task_id in zip(gold_a, gold_b, task_ids):
        by_task[task_id][0].append(a)
        by_task[task_id][1].append(b)
    tasks = Task.objects.filter(pk__in=list(by_task)).order_by("description", "pk")
    out = []
    for task in tasks:
        a, b = by_task[task.pk]
        change = _change(a, b)
        out.append(TaskChange(task, change.result.n, len(a) - change.result.n, change))
    return out


def partner_for(model: ModelVersion | None, project_id: int) -> ModelVersion | None:
    """The model version a comparison with `model` most likely wants: its latest child of the
    project (the DSM model trained from it; never another project's), else its parent."""
    if model is None:
        return None
    children = ModelVersion.objects.of_project(project_id).filter(parent=model)
    return children.order_by("-created", "-pk").first() or model.parent


def _change(gold_a, gold_b, *, ratio: bool = False) -> Change:
    mean = relative_change_bootstrap(gold_a, gold_b, SUMMARY_RESAMPLES, seed=0)
    ratio_of_sums = (
        relative_change_bootstrap(gold_a, gold_b, SUMMARY_RESAMPLES, seed=0, statistic="ratio_of_sums")
        if ratio
        else None
    )
    return Change(mean, ratio_of_sums)
