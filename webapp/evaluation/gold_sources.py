"""Where the localisation evaluation's gold evidence comes from, with its origin.

- "imported": the evidence spans of the corpus's annotations (imported from an annotation tool,
  or typed), always;
- every source an app above registers when it starts (`gold_from`): review registers the gold made
  in the app (webapp.review.gold: the peaks reviewers kept, "accepted_peak"; the spans they added,
  "added_span"; a curator's choice on a round's added spans, "curator").

This module imports no app above evaluation: review fills the registry in its AppConfig.ready,
as pipeline.launch_initial.suggest_with is filled by evaluation.

A source is two functions: `pairs(corpus, tasks)`, the (note id, task id) pairs of the corpus
(of these tasks; all tasks when none) for which it holds evidence, and `evidence(pairs)`,
{pair: [items with start, end, origin, annotator]} of the given pairs. The evaluation plans its
pairs from the union of every source's pairs, and scores each pair against the union of their
spans; the result counts the spans and pairs of each origin (`gold_origins`). A source may add
`exists(corpus, tasks)` and `pair_rows(corpus, tasks)` (its pairs as one queryset of (note id,
task id) rows): the launch form's gold check (`has_gold`) and its estimate (`count_pairs`) then
ask the database instead of reading every row the source's pairs come from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.utils.translation import gettext_lazy

from webapp.corpus.models import Annotation

Pair = tuple[int, int]
IMPORTED = "imported"


ORIGINS = {  # each origin in words, in the order the result page lists them
    IMPORTED: gettext_lazy("annotations (imported or typed)"),
    "accepted_peak": gettext_lazy("peaks kept in review"),
    "added_span": gettext_lazy("spans added in review"),
    "curator": gettext_lazy("a curator's choice on added spans"),
}


class Evidence(NamedTuple):
    start: int
    end: int
    origin: str
    annotator: str


@dataclass(frozen=True)
class GoldSource:
    name: str
    pairs: Callable[..., Iterable[Pair]]  # (corpus, tasks) -> pairs with evidence from this source
    evidence: Callable[[Iterable[Pair]], dict]  # pairs -> {pair: [item with start, end, origin, annotator]}
    exists: Callable[..., bool] | None = None  # (corpus, tasks) -> whether `pairs` has one, cheaply
    pair_rows: Callable | None = None  # (corpus, tasks) -> `pairs` as a queryset of (note id, task id)


_SOURCES: dict[str, GoldSource] = {}


def gold_from(source: GoldSource) -> None:
    """Register a source of gold evidence (one per name: registering it again replaces it)."""
    _SOURCES[source.name] = source


def sources() -> list[GoldSource]:
    return list(_SOURCES.values())


def _imported(corpus, tasks=()):
    rows = Annotation.objects.filter(note__corpus=corpus).exclude(evidence=[])
    return rows.filter(task__in=list(tasks)) if tasks else rows


def imported_pairs(corpus, tasks=(), *, limit: int | None = None) -> list[Pair]:
    """Sorted distinct (note id, task id) of the corpus's annotations with evidence spans."""
    rows = _imported(corpus, tasks).values_list("note_id", "task_id").distinct().order_by("note_id", "task_id")
    return [tuple(pair) for pair in (rows[:limit] if limit else rows)]


def registered_pairs(corpus, tasks=()) -> set[Pair]:
    """The pairs with evidence from the registered sources only."""
    out: set[Pair] = set()
    for source in sources():
        out.update((int(n), int(t)) for n, t in source.pairs(corpus, list(tasks)))
    return out


def gold_pairs(corpus, tasks=(), *, limit: int | None = None) -> list[Pair]:
    """Sorted distinct pairs with gold evidence from any source; with `limit`, at most that many
    (the imported ones first: enough to say the corpus has gold without asking the others)."""
    imported = imported_pairs(corpus, tasks, limit=limit)
    if limit and len(imported) >= limit:
        return imported
    pairs = sorted(set(imported) | registered_pairs(corpus, tasks))
    return pairs[:limit] if limit else pairs


def has_gold(corpus, tasks=()) -> bool:
    """Whether `gold_pairs(corpus, tasks)` has a pair: one EXISTS query for the annotations, then
    each source's `exists` (its pairs read only for a source without one)."""
    if _imported(corpus, tasks).exists():
        return True
    tasks = list(tasks)
    return any(s.exists(corpus, tasks) if s.exists else bool(list(s.pairs(corpus, tasks))) for s in sources())


def count_pairs(corpus, tasks=()) -> int:
    """len(gold_pairs(corpus, tasks)), counted in the database when every source has `pair_rows`."""
    tasks = list(tasks)
    if any(s.pair_rows is None for s in sources()):
        return len(gold_pairs(corpus, tasks))
    imported = _imported(corpus, tasks).order_by().values_list("note_id", "task_id")
    return imported.union(*(s.pair_rows(corpus, tasks) for s in sources())).count()


def evidence(pairs: Iterable[Pair]) -> dict[Pair, list[Evidence]]:
    """{pair: [Evidence, ...]} of every source, for the given pairs (pairs with none are absent)."""
    wanted = {(int(n), int(t)) for n, t in pairs}
    out: dict[Pair, list[Evidence]] = {}
    if not wanted:
        return out
    rows = (
        Annotation.objects.filter(note_id__in={n for n, _ in wanted}, task_id__in={t for _, t in wanted})
        .exclude(evidence=[])
        .values_list("note_id", "task_id", "evidence", "annotator_name")
    )
    for note_id, task_id, spans, annotator in rows:
        if (note_id, task_id) in wanted:
            out.setdefault((note_id, task_id), []).extend(
                Evidence(int(a), int(b), IMPORTED, annotator) for a, b in spans
            )
    for source in sources():
        for pair, items in source.evidence(wanted).items():
            if pair in wanted and items:
                out.setdefault(pair, []).extend(Evidence(g.start, g.end, g.origin, g.annotator) for g in items)
    return out


def count_origins(found: dict[Pair, list[Evidence]], into: dict) -> dict:
    """Add the distinct spans and the pairs of each origin of `found` to `into`
    ({origin: {"spans": n, "pairs": n}}) and return it."""
    for items in found.values():
        by_origin: dict[str, set] = {}
        for item in items:
            by_origin.setdefault(item.origin, set()).add((item.start, item.end))
        for origin, spans in by_origin.items():
            counts = into.setdefault(origin, {"spans": 0, "pairs": 0})
            counts["spans"] += len(spans)
            counts["pairs"] += 1
    return into
