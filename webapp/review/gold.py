"""Gold evidence made in the app: the peaks reviewers kept and the spans they added, each with its
origin, for the localisation evaluation (registered as a gold source of
webapp.evaluation.gold_sources in the app's ready: `pairs_of`, `evidence`) and the annotation-tool
exports (webapp.interchange.exporting).

Rules
- An accepted peak: a peak decision that keeps it (accept, or adjust: the adjusted span), of a
  span not rejected under the rejected-spans rule (webapp.review.decisions.rejected_spans: a
  curator's decision, else the reviewers' majority). Origin "accepted_peak", its reviewer.
- An added span: a reviewer's span the model missed (webapp.review.spans). Where a curator settled
  a round's group of added spans (SpanAdjudication), the group's spans give way to the curator's
  choice: origin "curator" with the chosen span, or nothing on reject. Otherwise origin
  "added_span", its reviewer.
- Spans are character offsets of the note; the same words from two reviewers are two items (the
  origin and who are kept), `spans_by_pair` merges them for a metric that wants a union.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from webapp.review.decisions import rejected_spans
from webapp.review.models import AddedSpan, Adjudication, PeakDecision, SpanAdjudication


@dataclass(frozen=True)
class GoldSpan:
    start: int
    end: int
    origin: str  # "accepted_peak", "added_span" or "curator"
    annotator: str  # the reviewer's (or curator's) username


def evidence(pairs) -> dict[tuple[int, int], list[GoldSpan]]:
    """{(note_id, task_id): [GoldSpan, ...]} of the given (note_id, task_id) pairs, in order."""
    pairs = set(pairs)
    note_ids, task_ids = {n for n, _ in pairs}, {t for _, t in pairs}
    out: dict[tuple[int, int], set[GoldSpan]] = defaultdict(set)
    rejected = rejected_spans(note_ids, task_ids)
    kept = PeakDecision.objects.filter(note_id__in=note_ids, task_id__in=task_ids).exclude(
        decision=PeakDecision.Decision.REJECT
    )
    for d in kept.select_related("reviewer"):
        key = (d.note_id, d.task_id)
        if key not in pairs or (d.start, d.end) in rejected.get(key, ()):
            continue
        a, b = (d.adjusted_start, d.adjusted_end) if d.adjusted_start is not None else (d.start, d.end)
        out[key].add(GoldSpan(a, b, "accepted_peak", d.reviewer.get_username()))
    settled = list(
        SpanAdjudication.objects.filter(note_id__in=note_ids, task_id__in=task_ids).select_related("curator")
    )
    for s in settled:
        if (s.note_id, s.task_id) in pairs and s.kept:
            out[(s.note_id, s.task_id)].add(GoldSpan(s.chosen_start, s.chosen_end, "curator", s.curator.get_username()))
    for row in AddedSpan.objects.filter(note_id__in=note_ids, task_id__in=task_ids).select_related("reviewer"):
        key = (row.note_id, row.task_id)
        inside = any(
            (s.note_id, s.task_id) == key and s.start <= row.start and row.end <= s.end for s in settled
        )  # a curator's choice replaces the group's spans
        if key in pairs and not inside:
            out[key].add(GoldSpan(row.start, row.end, "added_span", row.reviewer.get_username()))
    return {key: sorted(spans, key=lambda g: (g.start, g.end, g.origin, g.annotator)) for key, spans in out.items()}


def pairs_of(corpus, tasks=()) -> list[tuple[int, int]]:
    """Sorted (note_id, task_id) pairs of the corpus (of these tasks or task ids; every task when
    none) that hold gold made in the app: what the localisation evaluation plans its pairs from
    (registered with webapp.evaluation.gold_sources in the app's ready)."""
    task_ids = [getattr(t, "pk", t) for t in tasks]
    kinds = (
        PeakDecision.objects.exclude(decision=PeakDecision.Decision.REJECT),
        AddedSpan.objects.all(),
        SpanAdjudication.objects.filter(decision=SpanAdjudication.Decision.ACCEPT),
    )
    candidates: set[tuple[int, int]] = set()
    for rows in kinds:
        rows = rows.filter(note__corpus=corpus)
        if task_ids:
            rows = rows.filter(task_id__in=task_ids)
        candidates.update(rows.values_list("note_id", "task_id").distinct().order_by())
    return sorted(pair for pair, items in evidence(candidates).items() if items) if candidates else []


# ---------------------------------------------------------------- the same rules in SQL
# For the launch form's gold check and its estimate: whether the corpus has gold made in the app,
# and which pairs, as queries whose number does not grow with the decisions and which hand no
# decision row to Python. `evidence` stays the reference; tests check the two agree.


def _of(rows, corpus, task_ids):
    rows = rows.filter(note__corpus=corpus)
    return rows.filter(task_id__in=task_ids) if task_ids else rows


def _same_span(**extra):
    """Rows on the span (note, task, start, end) of the outer row."""
    span = {name: OuterRef(name) for name in ("note_id", "task_id", "start", "end")}
    return {**span, **extra}


def _count_of(rows, field: str):
    """A subquery: the distinct `field` values of `rows` (0 without rows)."""
    counted = rows.order_by().values("note_id").annotate(n=Count(field, distinct=True)).values("n")[:1]
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def kept_decisions(corpus, tasks=()):
    """The decisions `evidence` turns into gold ("accepted_peak"): kept, on a span not rejected
    (no curator's reject; without a curator's decision, fewer than half of its reviewers' latest
    decisions reject it, or none)."""
    task_ids = [getattr(t, "pk", t) for t in tasks]
    curator = Adjudication.objects.filter(**_same_span())
    later = PeakDecision.objects.filter(**_same_span(reviewer_id=OuterRef("reviewer_id"))).filter(
        Q(updated__gt=OuterRef("updated")) | Q(updated=OuterRef("updated"), pk__gt=OuterRef("pk"))
    )
    latest_rejects = PeakDecision.objects.filter(**_same_span(decision=PeakDecision.Decision.REJECT)).filter(
        ~Exists(later)
    )
    return (
        _of(PeakDecision.objects.exclude(decision=PeakDecision.Decision.REJECT), corpus, task_ids)
        .filter(~Exists(curator.filter(decision=Adjudication.Decision.REJECT)))
        .annotate(
            rejects=_count_of(latest_rejects, "reviewer_id"),
            reviewers=_count_of(PeakDecision.objects.filter(**_same_span()), "reviewer_id"),
        )
        .filter(Exists(curator) | Q(rejects=0) | Q(reviewers__gt=2 * F("rejects")))
    )


def added_gold(corpus, tasks=()):
    """The added spans `evidence` keeps ("added_span"): those inside no group a curator settled."""
    task_ids = [getattr(t, "pk", t) for t in tasks]
    settled = SpanAdjudication.objects.filter(
        note_id=OuterRef("note_id"), task_id=OuterRef("task_id"), start__lte=OuterRef("start"), end__gte=OuterRef("end")
    )
    return _of(AddedSpan.objects.all(), corpus, task_ids).filter(~Exists(settled))


def curator_gold(corpus, tasks=()):
    """A curator's choices that keep a span ("curator")."""
    task_ids = [getattr(t, "pk", t) for t in tasks]
    return _of(SpanAdjudication.objects.filter(decision=SpanAdjudication.Decision.ACCEPT), corpus, task_ids)


def has_gold(corpus, tasks=()) -> bool:
    """Whether `pairs_of(corpus, tasks)` has a pair, in at most three EXISTS queries."""
    return any(rows(corpus, tasks).exists() for rows in (curator_gold, added_gold, kept_decisions))


def pair_rows(corpus, tasks=()):
    """The pairs of `pairs_of` as (note_id, task_id) rows of one query (a UNION, to count or join
    with other sources' pairs in the database)."""
    first, *others = (
        rows(corpus, tasks).order_by().values_list("note_id", "task_id")
        for rows in (curator_gold, added_gold, kept_decisions)
    )
    return first.union(*others)


def spans_by_pair(pairs) -> dict[tuple[int, int], list[tuple[int, int]]]:
    """The distinct character spans of `evidence`, per pair (what a localisation metric reads)."""
    return {key: sorted({(g.start, g.end) for g in items}) for key, items in evidence(pairs).items()}
