"""Adjudication: a curator settles the peaks of a round on which its reviewers disagree.

A peak of a round is disputed when at least two of the round's reviewers decided it (under the
round's map) and fewer of them than the round's `agreement_needed` percent agree on keeping it
(accept or adjust keep, reject removes). At the default, 100, any disagreement sends the peak to a
curator; a round of k=3 at 66 lets a 2-to-1 split stand by majority and sends only peaks whose
reviewers are more divided (or a 1-to-1 split where a third judgement is still missing).
Disputed peaks are served to curators in the round's pair order, each with every reviewer's
decision side by side. The curator's decision (Adjudication: accept or reject, one row per (note,
task, character span), a change counts `version` and keeps `previous`) is final: dataset builds use
it instead of the majority (decisions.rejected_spans), and every change is audited
(REVIEW_DECISION, kind "adjudication"). Without a curator's decision the majority rule holds (a
tie rejects); the pages say so.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.lib import windows
from webapp.pipeline.models import RelevanceMap
from webapp.review.models import Adjudication, PeakDecision, ReviewRound, RoundPair

EXCERPT = 300  # characters of the note shown either side of a disputed peak


class AdjudicationError(Exception):
    """Nothing stored; the message is shown as written."""


@dataclass
class RoundPeak:
    """A peak of a round with its reviewers' decisions and the curator's, if any."""

    pair: RoundPair
    start: int
    end: int
    decisions: list = field(default_factory=list)  # PeakDecision of the round's reviewers
    adjudication: Adjudication | None = None
    agreement_needed: int = 100  # percent (ReviewRound.agreement_needed)

    @property
    def key(self) -> tuple:
        return (self.pair.note_id, self.pair.task_id, self.start, self.end)

    @property
    def agreement(self) -> float | None:
        """The share of its reviewers on the most common side (keep or reject); None under two."""
        if len(self.decisions) < 2:
            return None
        kept = sum(d.kept for d in self.decisions)
        return max(kept, len(self.decisions) - kept) / len(self.decisions)

    @property
    def disputed(self) -> bool:
        # Integer percent against the share times 100, so 2 of 3 (66.67%) meets a rule of 66.
        agreement = self.agreement
        return agreement is not None and agreement * 100 < self.agreement_needed

    @property
    def majority_kept(self) -> bool | None:
        """The rule without a curator: kept unless rejects are at least half (None: no decision)."""
        if not self.decisions:
            return None
        rejects = sum(not d.kept for d in self.decisions)
        return not (rejects and 2 * rejects >= len(self.decisions))

    @property
    def result(self) -> tuple[bool | None, str]:
        """(kept, by whom: "curator", "majority" or "none")."""
        if self.adjudication is not None:
            return self.adjudication.kept, "curator"
        kept = self.majority_kept
        return kept, "majority" if kept is not None else "none"


def round_peaks(rnd: ReviewRound, pairs=None) -> list[RoundPeak]:
    """Every peak of the round's pairs (in order), with the decisions of its reviewers (active or
    removed) under the round's map, and the adjudication of the span."""
    pairs = list(pairs if pairs is not None else rnd.pairs.select_related("note", "task").order_by("position"))
    reviewer_ids = list(rnd.members.values_list("reviewer_id", flat=True))
    note_ids = {p.note_id for p in pairs}
    rows = PeakDecision.objects.filter(
        note_id__in=note_ids,
        task_id__in={p.task_id for p in pairs},
        model_version=rnd.model_version,
        method=rnd.method,
        template=rnd.template,
        config_key=rnd.config_key,
        reviewer_id__in=reviewer_ids,
    ).select_related("reviewer")
    by_peak = defaultdict(list)
    for d in rows.order_by("reviewer_id"):
        by_peak[(d.note_id, d.task_id, d.start, d.end)].append(d)
    settled = {
        (a.note_id, a.task_id, a.start, a.end): a
        for a in Adjudication.objects.filter(note_id__in=note_ids).select_related("curator")
    }
    out = []
    for pair in pairs:
        for start, end in pair.peaks:
            key = (pair.note_id, pair.task_id, start, end)
            out.append(RoundPeak(pair, start, end, by_peak.get(key, []), settled.get(key), rnd.agreement_needed))
    return out


@dataclass(frozen=True)
class Summary:
    peaks: int
    disputed: int
    settled: int  # disputed peaks a curator decided

    @property
    def by_majority(self) -> int:
        return self.disputed - self.settled


def summary(peaks: list[RoundPeak]) -> Summary:
    disputed = [p for p in peaks if p.disputed]
    return Summary(len(peaks), len(disputed), sum(p.adjudication is not None for p in disputed))


def excerpt_html(rnd: ReviewRound, peak: RoundPeak) -> str:
    """The note around a disputed peak as its reviewers saw it: the round's map as heat (its
    method, template and configuration), the task's gold evidence underlined, the peak outlined;
    EXCERPT characters either side, "…" where the note goes on."""
    from webapp.review.noteview import gold_of, window_html  # noteview reads decisions, as this module

    note, task = peak.pair.note, peak.pair.task
    text = note.text
    window = windows.Window(0, max(0, peak.start - EXCERPT), min(len(text), peak.end + EXCERPT), 1)
    row = (
        RelevanceMap.objects.for_config(rnd.method, rnd.template, rnd.config_key)
        .filter(note=note, task=task, model_version=rnd.model_version)
        .with_arrays()
        .first()
    )
    offsets, scores = row[0] if row is not None else (np.zeros((0, 2), np.int64), np.zeros(0, np.float32))
    _annotations, gold = gold_of(note, task)
    body = window_html(text, window, offsets, scores, [(peak.start, peak.end)], gold, peak_classes=["current"])
    return ("…" if window.start > 0 else "") + body + ("…" if window.end < len(text) else "")


def disputed(rnd: ReviewRound) -> list[RoundPeak]:
    return [p for p in round_peaks(rnd) if p.disputed]


def adjudicate(
    rnd: ReviewRound, curator, *, note_id: int, task_id: int, start: int, end: int, decision: str, comment: str = ""
) -> Adjudication:
    """Store the curator's final decision on a peak of the round (audited)."""
    if decision not in Adjudication.Decision.values:
        raise AdjudicationError(_("A curator accepts or rejects a peak."))
    pair = rnd.pairs.filter(note_id=note_id, task_id=task_id).first()
    if pair is None or [start, end] not in pair.peaks:
        raise AdjudicationError(_("This span is not a peak of this round."))
    values = {"decision": decision, "comment": comment.strip(), "curator": curator, "round": rnd}
    with transaction.atomic():
        row = (
            Adjudication.objects.select_for_update()
            .filter(note_id=note_id, task_id=task_id, start=start, end=end)
            .first()
        )
        if row is None:
            try:
                with transaction.atomic():
                    row = Adjudication.objects.create(note_id=note_id, task_id=task_id, start=start, end=end, **values)
            except IntegrityError:
                raise AdjudicationError(_("Another curator decided this peak a moment ago; it is shown.")) from None
            op = "create"
        else:
            row.previous = {"decision": row.decision, "comment": row.comment, "curator": row.curator_id}
            for name, value in values.items():
                setattr(row, name, value)
            row.version += 1
            row.save()
            op = "update"
    record(curator, AuditEvent.Action.REVIEW_DECISION, row, kind="adjudication", op=op, round=rnd.pk,
           note=note_id, task=task_id, span=[start, end], decision=decision, version=row.version)  # fmt: skip
    return row
