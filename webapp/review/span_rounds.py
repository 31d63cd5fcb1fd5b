"""Added spans in a review round: part of a pair's judgement, agreement by overlap among the pair's
k reviewers, and the curator's final choice where they disagree.

Rules
- A pair's added spans are those of the round's reviewers (active or removed) on the pair's note
  and task (webapp.review.spans; wherever they added them, in the round's queue or not).
- Spans that overlap, of any reviewers, form one group (connected by overlap), named by its extent
  (the union's first and last character). A reviewer supports a group when one of their spans is
  in it.
- The pair's judges are its reviewers who finished their claim (every peak decided) and those who
  added a span to it: a judge who added nothing in a group's words judged that there is no
  evidence there. A group is disputed, as a peak is (webapp.review.adjudication), when at least two
  judges judged the pair and fewer of them than the round's `agreement_needed` percent are on the
  most common side (supporting or not).
- The curator's choice (SpanAdjudication, one row per round and group extent) is final: accept
  keeps the one span the curator chose (one of the group's spans, or its extent) as gold evidence,
  reject keeps none. Without it, a group is kept when at least half of its judges support it (a
  tie keeps it: evidence a reviewer saw stays until a curator says otherwise), as the extent of
  the spans the most supporters chose. Every choice is audited (REVIEW_DECISION, kind
  "span_adjudication").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction
from django.utils.html import escape
from django.utils.translation import gettext as _

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.review.models import AddedSpan, ReviewRound, RoundClaim, SpanAdjudication


class SpanAdjudicationError(Exception):
    """Nothing stored; the message is shown as written."""


@dataclass
class SpanGroup:
    pair: object  # RoundPair
    start: int
    end: int
    spans: list = field(default_factory=list)  # AddedSpan rows of the group
    judges: frozenset = frozenset()  # reviewer ids who judged the pair
    adjudication: SpanAdjudication | None = None
    agreement_needed: int = 100

    @property
    def supporters(self) -> set:
        return {s.reviewer_id for s in self.spans}

    @property
    def agreement(self) -> float | None:
        judges = len(self.judges | self.supporters)
        if judges < 2:
            return None
        support = len(self.supporters)
        return max(support, judges - support) / judges

    @property
    def disputed(self) -> bool:
        agreement = self.agreement
        return agreement is not None and agreement * 100 < self.agreement_needed

    @property
    def variants(self) -> list[tuple[int, int]]:
        """The distinct spans of the group, the most chosen first; its extent last if not among them."""
        counts = Counter((s.start, s.end) for s in self.spans)
        out = sorted(counts, key=lambda span: (-counts[span], span))
        return out + ([(self.start, self.end)] if (self.start, self.end) not in counts else [])

    @property
    def result(self) -> tuple[tuple[int, int] | None, str]:
        """(the span kept as gold or None, by whom: "curator" or "majority")."""
        if self.adjudication is not None:
            a = self.adjudication
            return ((a.chosen_start, a.chosen_end) if a.kept else None), "curator"
        judges = len(self.judges | self.supporters)
        kept = 2 * len(self.supporters) >= judges
        return (self.variants[0] if kept else None), "majority"


def _groups(spans) -> list[tuple[int, int, list]]:
    """Spans (sorted by start) connected by overlap: [(start, end, members)]."""
    out: list[tuple[int, int, list]] = []
    for s in sorted(spans, key=lambda s: (s.start, s.end)):
        if out and s.start < out[-1][1]:
            a, b, members = out[-1]
            out[-1] = (a, max(b, s.end), members + [s])
        else:
            out.append((s.start, s.end, [s]))
    return out


def round_span_groups(rnd: ReviewRound, pairs=None) -> list[SpanGroup]:
    """Every group of added spans of the round's pairs, in pair order."""
    pairs = list(pairs if pairs is not None else rnd.pairs.select_related("note", "task").order_by("position"))
    reviewer_ids = list(rnd.members.values_list("reviewer_id", flat=True))
    by_pair = defaultdict(list)
    rows = AddedSpan.objects.filter(
        note_id__in={p.note_id for p in pairs}, task_id__in={p.task_id for p in pairs}, reviewer_id__in=reviewer_ids
    ).select_related("reviewer")
    for row in rows:
        by_pair[(row.note_id, row.task_id)].append(row)
    finished = defaultdict(set)
    for pair_id, reviewer_id in RoundClaim.objects.filter(round=rnd, done__isnull=False).values_list(
        "pair_id", "reviewer_id"
    ):
        finished[pair_id].add(reviewer_id)
    settled = {
        (a.note_id, a.task_id, a.start, a.end): a
        for a in SpanAdjudication.objects.filter(round=rnd).select_related("curator")
    }
    out = []
    for pair in pairs:
        for start, end, members in _groups(by_pair.get((pair.note_id, pair.task_id), [])):
            out.append(
                SpanGroup(
                    pair,
                    start,
                    end,
                    members,
                    frozenset(finished[pair.pk]),
                    settled.get((pair.note_id, pair.task_id, start, end)),
                    rnd.agreement_needed,
                )
            )
    return out


def excerpt(group: SpanGroup, around: int = 300) -> str:
    """The note around the group, its words marked (HTML, escaped)."""
    text = group.pair.note.text
    a, b = max(0, group.start - around), min(len(text), group.end + around)
    return (
        ("…" if a > 0 else "")
        + escape(text[a : group.start])
        + f'<mark class="added-group">{escape(text[group.start : group.end])}</mark>'
        + escape(text[group.end : b])
        + ("…" if b < len(text) else "")
    )


def disputed(rnd: ReviewRound) -> list[SpanGroup]:
    return [g for g in round_span_groups(rnd) if g.disputed]


def adjudicate(
    rnd: ReviewRound,
    curator,
    *,
    note_id: int,
    task_id: int,
    start: int,
    end: int,
    decision: str,
    chosen: tuple[int, int] | None = None,
    comment: str = "",
) -> SpanAdjudication:
    """Store the curator's final choice on a group of added spans of the round (audited)."""
    if decision not in SpanAdjudication.Decision.values:
        raise SpanAdjudicationError(_("A curator accepts or rejects added spans."))
    group = next(
        (
            g
            for g in round_span_groups(rnd, rnd.pairs.filter(note_id=note_id, task_id=task_id))
            if (g.start, g.end) == (start, end)
        ),
        None,
    )
    if group is None:
        raise SpanAdjudicationError(_("These are not added spans of this round (they may have changed); look again."))
    if decision == SpanAdjudication.Decision.ACCEPT:
        chosen = tuple(chosen) if chosen else group.variants[0]
        if chosen not in group.variants:
            raise SpanAdjudicationError(_("Keep one of the spans the reviewers added, or their extent."))
    else:
        chosen = (None, None)
    values = {
        "decision": decision,
        "chosen_start": chosen[0],
        "chosen_end": chosen[1],
        "comment": comment.strip(),
        "curator": curator,
    }
    key = {"round": rnd, "note_id": note_id, "task_id": task_id, "start": start, "end": end}
    with transaction.atomic():
        row = SpanAdjudication.objects.select_for_update().filter(**key).first()
        if row is None:
            try:
                with transaction.atomic():
                    row = SpanAdjudication.objects.create(**key, **values)
            except IntegrityError:
                raise SpanAdjudicationError(
                    _("Another curator decided these spans a moment ago; look again.")
                ) from None
            op = "create"
        else:
            row.previous = {
                "decision": row.decision,
                "chosen": [row.chosen_start, row.chosen_end],
                "comment": row.comment,
                "curator": row.curator_id,
            }
            for name, value in values.items():
                setattr(row, name, value)
            row.version += 1
            row.save()
            op = "update"
    record(curator, AuditEvent.Action.REVIEW_DECISION, row, kind="span_adjudication", op=op, round=rnd.pk,
           note=note_id, task=task_id, span=[start, end], decision=decision, chosen=list(chosen),
           version=row.version)  # fmt: skip
    return row
