"""What a review round's queue serves first: the round's `order` (chosen when it is created,
changed on its page).

- `drawn`: the pairs as drawn, by (note id, task id).
- `uncertainty`: the model's least certain pairs first. A peak is found where the smoothed
  relevance reaches `upper` (ml.peaks); its margin is how far its highest smoothed score goes
  past `upper`, and a pair's is the smallest margin of its peaks: a pair whose weakest peak only
  just passed the threshold comes first (ties by note, task).
- `stratified`: at random, stratified across tasks, from the round's `order_seed`: each task's
  pairs are shuffled with the seed and the tasks interleaved in proportion to their sizes, so
  every first n pairs hold each task's share of the round (a systematic stratified sample).
- `disagreement`: pairs whose decisions so far disagree first: for each pair, the smaller of the
  number of its decisions that keep a peak (accept, adjust) and that reject one, counting every
  reviewer's decisions on the pair's map (the round's model version, method, template and
  configuration); more first, then as drawn. It changes as reviewers decide, so it is computed
  in the queue's query (`disagreement`), not stored; with k >= 3 a pair split so far reaches
  the reviewer who settles it sooner.

The static orders (drawn, uncertainty, stratified) are the pairs' `position`s: `arrange`
renumbers them, and the rota deals by position (webapp.review.rounds), so a reviewer's share and
the helping-out both follow the order. Renumbering is one transaction; claims keep their pairs.
"""

from __future__ import annotations

import random

import numpy as np
from django.db import transaction
from django.db.models import Count, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce, Least
from django.utils.translation import gettext as _

from ml.peaks.runs import smooth
from webapp.pipeline.models import RelevanceMap
from webapp.review.models import PeakDecision, ReviewRound, RoundPair

ORDERS = dict(ReviewRound._meta.get_field("order").choices)
STATIC = ("drawn", "uncertainty", "stratified")
BATCH = 500  # maps read at a time for the uncertainty order


class OrderError(Exception):
    """An order that does not exist; the message is shown as written."""


def disagreement(rnd: ReviewRound):
    """An annotation of RoundPair rows: min(decisions keeping, decisions rejecting) on the pair."""
    decisions = (
        PeakDecision.objects.filter(
            note_id=OuterRef("note_id"),
            task_id=OuterRef("task_id"),
            model_version_id=rnd.model_version_id,
            method=rnd.method,
            template=rnd.template,
            config_key=rnd.config_key,
        )
        .order_by()
        .values("note_id")
        .annotate(
            n=Least(
                Count("pk", filter=Q(decision=PeakDecision.Decision.REJECT)),
                Count("pk", filter=~Q(decision=PeakDecision.Decision.REJECT)),
            )
        )
        .values("n")
    )
    return Coalesce(Subquery(decisions, output_field=IntegerField()), Value(0))


def margins(rnd: ReviewRound) -> dict[int, float]:
    """{pair id: the smallest margin of its peaks over `upper`} (module docstring); pairs whose
    map is gone are left out."""
    params = rnd.params
    pairs = {(p.note_id, p.task_id): p for p in RoundPair.objects.filter(round=rnd).only("pk", "note", "task", "peaks")}
    maps = (
        RelevanceMap.objects.for_config(rnd.method, rnd.template, rnd.config_key)
        .filter(note__corpus_id=rnd.corpus_id, model_version_id=rnd.model_version_id)
        .filter(note_id__in={n for n, _ in pairs}, task_id__in={t for _, t in pairs})
        .order_by("pk")
    )
    out: dict[int, float] = {}
    ids = list(maps.values_list("pk", flat=True))
    for i in range(0, len(ids), BATCH):
        for note_id, task_id, (offsets, scores) in RelevanceMap.objects.filter(pk__in=ids[i : i + BATCH]).with_arrays(
            "note_id", "task_id"
        ):
            pair = pairs.get((note_id, task_id))
            if pair is None or not pair.peaks:
                continue
            y = smooth(np.asarray(scores, np.float32), kernel_size=params.kernel_size, sigma=params.sigma)
            offsets = np.asarray(offsets).reshape(-1, 2)
            tops = []
            for a, b in pair.peaks:
                inside = (offsets[:, 0] < b) & (offsets[:, 1] > a)
                if inside.any():
                    tops.append(float(y[inside].max()) - params.upper)
            if tops:
                out[pair.pk] = min(tops)
    return out


def stratified(pairs: list[tuple[int, int]], seed: int) -> list[int]:
    """Pair ids in a seeded random order stratified across tasks; `pairs`: (pair id, task id)."""
    rng = random.Random(seed)
    by_task: dict[int, list[int]] = {}
    for pk, task_id in sorted(pairs):
        by_task.setdefault(task_id, []).append(pk)
    keyed = []
    for task_id in sorted(by_task):
        ids = by_task[task_id]
        rng.shuffle(ids)
        n = len(ids)
        # the j-th pair of a task of n pairs sits at (j + 1/2) / n of the way through the round
        keyed += [((j + 0.5) / n, task_id, pk) for j, pk in enumerate(ids)]
    return [pk for _, _, pk in sorted(keyed)]


def sequence(rnd: ReviewRound) -> list[int]:
    """The round's pair ids in its static order (`drawn` for `disagreement`)."""
    rows = list(RoundPair.objects.filter(round=rnd).order_by("note_id", "task_id").values_list("pk", "task_id"))
    if rnd.order == "uncertainty":
        found = margins(rnd)
        drawn = {pk: i for i, (pk, _) in enumerate(rows)}
        return sorted(drawn, key=lambda pk: (pk not in found, found.get(pk, 0.0), drawn[pk]))
    if rnd.order == "stratified":
        return stratified(rows, rnd.order_seed)
    return [pk for pk, _ in rows]


def arrange(rnd: ReviewRound) -> int:
    """Renumber the round's pairs' positions in its order; returns how many pairs."""
    ids = sequence(rnd)
    with transaction.atomic():
        # positions are unique per round (checked row by row): first move them all past the end
        RoundPair.objects.filter(round=rnd).update(position=F("position") + len(ids))
        RoundPair.objects.bulk_update(
            [RoundPair(pk=pk, position=i) for i, pk in enumerate(ids)], ["position"], batch_size=1_000
        )
    return len(ids)


def change(rnd: ReviewRound, order: str, seed: int | None = None, *, actor=None) -> None:
    """Set the round's order (and seed) and renumber its pairs; audited."""
    from webapp.audit.log import record
    from webapp.audit.models import AuditEvent

    if order not in ORDERS:
        raise OrderError(
            _("Unknown order %(order)s: choose one of %(orders)s.")
            % {"order": repr(order), "orders": ", ".join(ORDERS)}
        )
    rnd.order = order
    if seed is not None:
        rnd.order_seed = seed
    with transaction.atomic():
        rnd.save(update_fields=["order", "order_seed"])
        pairs = arrange(rnd)
    record(actor, AuditEvent.Action.REVIEW_DECISION, rnd, kind="review_round_order", order=order,
           seed=rnd.order_seed, pairs=pairs)  # fmt: skip


def changes(rnd: ReviewRound) -> int:
    """How many times the round's order was changed after it was created (the audit log)."""
    from webapp.audit.models import AuditEvent

    return AuditEvent.objects.filter(
        object_type=rnd._meta.label, object_id=str(rnd.pk), details__kind="review_round_order"
    ).count()
