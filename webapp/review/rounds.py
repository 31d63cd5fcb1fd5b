"""Review rounds: a team's review of a corpus, with each (note, task) pair judged by k reviewers.

Creating a round draws its pairs once (RoundPair, in (note, task) order, each with its peaks under
the round's setting; pairs without a peak are left out) and names its reviewers in order.

Assignment (the rota). With R active reviewers (in the order they were named) and N pairs, the
k judgements of pair i are preferred for reviewers (i*k + m) mod R, m = 0..k-1: k different
reviewers a pair (k <= R), and every reviewer's share is floor or ceil of N*k/R pairs. The queue
(`next_claim`) serves a reviewer
1. their open claim, if its lease still holds (they come back to the pair they were on);
2. else the first pair of their share they have not judged that has fewer than k live claims;
3. else ("helping out") a pair that still needs judgements, started pairs first, provided that the
   slots left are not reserved for its preferred reviewers who have not claimed it yet (a claim
   whose lease lapsed gives up the reservation). An absent
   reviewer therefore keeps their share until a researcher removes them from the round; removing
   a reviewer re-deals the rota over the others and gives their open claims back.
So work is spread within one pair of even while everyone works, and no pair is held up.

Claims. A claim is one row per (pair, reviewer) (unique), with a lease (LEASE, renewed by each
decision on the pair). It is live while done or while its lease holds; an open claim whose lease
expired holds nothing. Taking a claim locks the pair's row (SELECT ... FOR UPDATE), counts the
pair's live claims again in a new statement (so it sees every claim committed before the lock was
granted) and inserts only below k: concurrent reviewers never push a pair beyond k live claims.
The lock is held for one count and one insert; a pair is never skipped because it is locked
(SKIP LOCKED would tell a reviewer "nothing left" while a pair is only being looked at).
A claim is done when its reviewer has decided every peak of the pair (`sync_claims`, called after
each decision and undo); an undo that leaves a peak undecided opens it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import BigIntegerField, Count, ExpressionWrapper, F, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce, Mod
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ml.peaks import peaks_of_rows
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.lifecycle.signals import round_completed
from webapp.pipeline.models import RelevanceMap
from webapp.projects.roles import CAPABILITIES, Capability, has_capability
from webapp.review import caching, orders
from webapp.review.models import PeakDecision, ReviewRound, RoundClaim, RoundPair, RoundReviewer

LEASE = timedelta(minutes=15)  # a claim's hold on its slot without a decision on the pair
DRAW_BATCH = 500  # maps read (and their peaks found) at a time when a round is created
HELP_SCAN = 2_000  # pairs looked at, at most, when helping out


class RoundError(Exception):
    """A round that cannot be created or changed as asked; the message is shown as written."""


# ---------------------------------------------------------------- creating


def create_round(
    corpus,
    *,
    name: str,
    tasks,
    model,
    method: str,
    template: str,
    config_key: str = "",
    profile=None,
    k: int = 2,
    reviewers=(),
    guideline: str = "",
    agreement_needed: int = 100,
    order: str = "drawn",
    order_seed: int = 0,
    actor=None,
) -> ReviewRound:
    """Create a round and draw its pairs (module docstring); RoundError says what is wrong."""
    tasks, reviewers = list(tasks), list(dict.fromkeys(reviewers))
    if not name.strip():
        raise RoundError(_("Give the round a name."))
    if not tasks:
        raise RoundError(_("Choose at least one task."))
    refused = [r.get_username() for r in reviewers if not has_capability(r, Capability.REVIEW, corpus.project_id)]
    if refused:
        raise RoundError(
            _("Only the project's clinicians review peaks: %(names)s may not.") % {"names": ", ".join(refused)}
        )
    if not 1 <= k <= len(reviewers):
        named = len(reviewers)
        raise RoundError(
            ngettext(  # "reviewers" for one too, as before; a translation may agree with the count
                "k (reviewers per pair) must be between 1 and the %(count)s reviewers named.",
                "k (reviewers per pair) must be between 1 and the %(count)s reviewers named.",
                named,
            )
            % {"count": named}
        )
    if not 50 <= agreement_needed <= 100:
        raise RoundError(_("The agreement a peak needs must be between 50% (a majority) and 100% (everyone)."))
    if order not in orders.ORDERS:
        raise RoundError(
            _("Unknown order %(order)s: choose one of %(orders)s.")
            % {"order": repr(order), "orders": ", ".join(orders.ORDERS)}
        )
    with transaction.atomic():
        rnd = ReviewRound.objects.create(
            corpus=corpus,
            name=name.strip(),
            model_version=model,
            method=method,
            template=template,
            config_key=config_key,
            profile=profile,
            k=k,
            guideline=guideline,
            agreement_needed=agreement_needed,
            order=order,
            order_seed=order_seed,
            created_by=actor,
        )
        rnd.tasks.set(tasks)
        RoundReviewer.objects.bulk_create([RoundReviewer(round=rnd, reviewer=r) for r in reviewers])
        drawn = _draw_pairs(rnd, tasks)
        if not drawn:
            raise RoundError(
                _(
                    "No (note, task) pair of these tasks has a peak under this model version, method, template and "
                    "peak setting in this corpus: compute relevance first, or choose another setting."
                )
            )
        if order != "drawn":
            orders.arrange(rnd)  # webapp.review.orders: positions in the round's order
    record(actor, AuditEvent.Action.REVIEW_DECISION, rnd, kind="review_round", pairs=drawn, k=k,
           agreement_needed=agreement_needed, order=order, reviewers=[r.pk for r in reviewers],
           tasks=[t.pk for t in tasks])  # fmt: skip
    return rnd


def _draw_pairs(rnd: ReviewRound, tasks) -> int:
    maps = (
        RelevanceMap.objects.for_config(rnd.method, rnd.template, rnd.config_key)
        .filter(note__corpus=rnd.corpus, model_version=rnd.model_version, task__in=tasks, task__retired=False)
        .order_by("note_id", "task_id")
        .with_arrays("id", "note_id", "task_id")
    )
    params, position, cursor = rnd.params, 0, None
    while True:
        page = maps
        if cursor is not None:
            page = page.filter(
                Q(note_id__gt=cursor[0]) | Q(note_id=cursor[0], task_id__gt=cursor[1]), note_id__gte=cursor[0]
            )
        rows = list(page[:DRAW_BATCH])
        if not rows:
            return position
        texts = dict(Note.objects.filter(pk__in={r[1] for r in rows}).values_list("pk", "text"))
        pairs = []
        for peaks in peaks_of_rows(rows, texts, params):
            if peaks.fits and len(peaks.char_spans):
                spans = [[int(a), int(b)] for a, b in peaks.char_spans]
                pairs.append(
                    RoundPair(round=rnd, position=position, note_id=peaks.note_id, task_id=peaks.task_id, peaks=spans)
                )
                position += 1
        RoundPair.objects.bulk_create(pairs)
        cursor = (rows[-1][1], rows[-1][2])


# ---------------------------------------------------------------- the rota


def members(rnd: ReviewRound) -> list[RoundReviewer]:
    """The round's active reviewers in rota order."""
    return list(rnd.members.filter(removed__isnull=True).select_related("reviewer").order_by("id"))


def preferred(position: int, reviewers: int, k: int) -> set[int]:
    """Rota positions of the reviewers preferred for the pair at `position`."""
    return {(position * k + m) % reviewers for m in range(min(k, reviewers))}


def share(rota_position: int, reviewers: int, k: int, pairs: int) -> int:
    """How many of `pairs` pairs the reviewer at `rota_position` is preferred for."""
    return sum(1 for i in range(pairs) if (rota_position - i * k) % reviewers < k)


# ---------------------------------------------------------------- claiming


def _live_count(now):
    return Coalesce(
        Subquery(
            RoundClaim.objects.live(now)
            .filter(pair=OuterRef("pk"))
            .order_by()
            .values("pair")
            .annotate(n=Count("pk"))
            .values("n")
        ),
        0,
    )


def next_claim(rnd: ReviewRound, reviewer, *, now=None) -> RoundClaim | None:
    """The claim the reviewer should work on now, taken atomically (module docstring); None when
    nothing is left for them. RoundError if they are not an active reviewer of the round."""
    now = now or timezone.now()
    rota = members(rnd)
    me = next((i for i, m in enumerate(rota) if m.reviewer_id == reviewer.pk), None)
    if me is None:
        raise RoundError(_("You are not a reviewer of this round."))
    current = RoundClaim.objects.open(now).filter(round=rnd, reviewer=reviewer).order_by("claimed").first()
    if current is not None:
        RoundClaim.objects.filter(pk=current.pk).update(expires=now + LEASE)
        return current
    R, k = len(rota), rnd.k
    judged = RoundClaim.objects.live(now).filter(round=rnd, reviewer=reviewer).values("pair_id")
    open_pairs = (
        RoundPair.objects.filter(round=rnd).exclude(pk__in=judged).annotate(live=_live_count(now)).filter(live__lt=k)
    )
    # pair i is in my share when (me - i*k) mod R < k; the offset keeps the dividend positive
    offset = R * k * (RoundPair.objects.filter(round=rnd).count() + 1)
    slot = ExpressionWrapper(Mod(Value(me + offset) - F("position") * k, Value(R)), output_field=BigIntegerField())
    mine, after = open_pairs.annotate(slot=slot).filter(slot__lt=k).order_by("position"), -1
    first = ("-disagreement",) if rnd.order == "disagreement" else ()  # webapp.review.orders
    if first:
        mine, open_pairs = (q.annotate(disagreement=orders.disagreement(rnd)) for q in (mine, open_pairs))
        for pair in mine.order_by(*first, "position")[:HELP_SCAN]:
            claim = _take(rnd, pair, reviewer, now)
            if claim is not None:
                return claim
    while not first and (batch := list(mine.filter(position__gt=after)[:100])):
        for pair in batch:
            claim = _take(rnd, pair, reviewer, now)
            if claim is not None:
                return claim
        after = batch[-1].position
    holders = {m.reviewer_id: i for i, m in enumerate(rota)}
    for pair in open_pairs.order_by(*first, "-live", "position")[:HELP_SCAN]:
        claim = _take(rnd, pair, reviewer, now, help_out=(holders, R))
        if claim is not None:
            return claim
    return None


def _take(rnd, pair, reviewer, now, help_out=None) -> RoundClaim | None:
    """Claim `pair` for `reviewer` if it still has room (under the pair row's lock)."""
    with transaction.atomic():
        RoundPair.objects.select_for_update().filter(pk=pair.pk).values_list("pk", flat=True).get()
        claims = list(RoundClaim.objects.filter(pair=pair).values_list("reviewer_id", "done", "expires"))
        live = {r for r, done, expires in claims if done is not None or expires > now}
        if len(live) >= rnd.k or reviewer.pk in live:
            return None
        if help_out is not None:
            holders, R = help_out
            # slots kept for preferred reviewers who never claimed the pair (a lapsed claim forfeits)
            started = {holders[r] for r, _, _ in claims if r in holders} | {holders[reviewer.pk]}
            waiting = preferred(pair.position, R, rnd.k) - started
            if len(live) + len(waiting) >= rnd.k:
                return None
        claim, _ = RoundClaim.objects.update_or_create(
            pair=pair,
            reviewer=reviewer,
            defaults={"round": rnd, "claimed": now, "expires": now + LEASE, "done": None},
        )
        return claim


def sync_claims(reviewer, note_id: int, task_id: int, model_id: int, method: str, template: str, config_key: str):
    """After a decision or undo of `reviewer` on (note, task) under a map: in every round of that
    map holding the pair, renew their claim's lease and mark it done when every peak of the pair
    has their decision (open again when not). A reviewer deciding on a round's pair without a
    claim (its lease expired) takes one if the pair has room. Nothing to do, and no query, when no
    round of that map exists (webapp.review.caching.any_round)."""
    if not caching.any_round(model_id, method, template, config_key):
        return
    now = timezone.now()
    pairs = RoundPair.objects.filter(
        note_id=note_id,
        task_id=task_id,
        round__model_version_id=model_id,
        round__method=method,
        round__template=template,
        round__config_key=config_key,
        round__members__reviewer=reviewer,
        round__members__removed__isnull=True,
    ).select_related("round")
    for pair in pairs:
        decided = set(
            PeakDecision.objects.filter(
                reviewer=reviewer,
                note_id=note_id,
                task_id=task_id,
                model_version_id=model_id,
                method=method,
                template=template,
                config_key=config_key,
            ).values_list("start", "end")
        )
        finished = all((a, b) in decided for a, b in pair.peaks)
        claim = RoundClaim.objects.filter(pair=pair, reviewer=reviewer).first()
        if claim is None or (claim.done is None and claim.expires <= now):
            claim = _take(pair.round, pair, reviewer, now)
            if claim is None:
                continue  # the pair is full: this decision is outside the round's k
        RoundClaim.objects.filter(pk=claim.pk).update(expires=now + LEASE, done=now if finished else None)
        # A round can only have become complete when this pair just got its k-th finished
        # judgement: the round-wide check runs once per pair, not after every decision.
        rnd = pair.round
        if finished and _finished_judgements(pair) >= rnd.k and is_complete(rnd):
            transaction.on_commit(lambda rnd=rnd: round_completed.send(sender=ReviewRound, round=rnd))


def _finished_judgements(pair: RoundPair) -> int:
    return RoundClaim.objects.filter(pair=pair, done__isnull=False).count()


def is_complete(rnd: ReviewRound) -> bool:
    """Every pair of the round has k finished judgements: no pair short of k (the database stops
    at the first one it finds, rather than counting every pair's judgements)."""
    finished = (
        RoundClaim.objects.filter(pair=OuterRef("pk"), done__isnull=False)
        .order_by()
        .values("pair")
        .annotate(n=Count("pk"))
        .values("n")
    )
    short = RoundPair.objects.filter(round=rnd).annotate(finished=Coalesce(Subquery(finished), 0))
    return not short.filter(finished__lt=rnd.k).exists()


# ---------------------------------------------------------------- reviewers


def remove_reviewer(rnd: ReviewRound, reviewer, *, actor=None) -> int:
    """Take `reviewer` off the round: their open claims go back (their finished ones count);
    returns the number of claims given back."""
    with transaction.atomic():
        updated = RoundReviewer.objects.filter(round=rnd, reviewer=reviewer, removed__isnull=True).update(
            removed=timezone.now()
        )
        if not updated:
            raise RoundError(_("%(reviewer)s is not a reviewer of this round.") % {"reviewer": reviewer.get_username()})
        returned, _per_model = RoundClaim.objects.filter(round=rnd, reviewer=reviewer, done__isnull=True).delete()
    record(actor, AuditEvent.Action.REVIEW_DECISION, rnd, kind="round_reviewer_removed", reviewer=reviewer.pk,
           claims_returned=returned)  # fmt: skip
    return returned


def add_reviewer(rnd: ReviewRound, reviewer, *, actor=None) -> None:
    """Add (or bring back) a reviewer; the rota is re-dealt over the active reviewers."""
    if not has_capability(reviewer, Capability.REVIEW, rnd.corpus.project_id):
        raise RoundError(
            _("Only the project's clinicians review peaks: %(names)s may not.") % {"names": reviewer.get_username()}
        )
    row, created = RoundReviewer.objects.get_or_create(round=rnd, reviewer=reviewer)
    if not created and row.removed is None:
        raise RoundError(_("%(reviewer)s already reviews in this round.") % {"reviewer": reviewer.get_username()})
    if not created:
        RoundReviewer.objects.filter(pk=row.pk).update(removed=None)
    record(actor, AuditEvent.Action.REVIEW_DECISION, rnd, kind="round_reviewer_added", reviewer=reviewer.pk)


def reviewer_candidates(project_id: int):
    """The project's members who may review (for the round form)."""
    from webapp.projects.models import Membership

    reviewing = [role.value for role in CAPABILITIES[Capability.REVIEW]]
    members = Membership.objects.filter(project_id=project_id, role__in=reviewing).values("user")
    return list(get_user_model().objects.filter(is_active=True, pk__in=members).order_by("username"))


# ---------------------------------------------------------------- progress


@dataclass(frozen=True)
class ReviewerProgress:
    name: str
    user_id: int
    share: int | None  # pairs of the rota; None: removed
    done: int
    open: int
    removed: bool


@dataclass(frozen=True)
class RoundProgress:
    pairs: int
    k: int
    done: int  # judgements finished
    open: int  # claims open under a lease
    complete_pairs: int  # pairs with k judgements finished
    reviewers: list

    @property
    def needed(self) -> int:
        return self.pairs * self.k

    @property
    def percent(self) -> float:
        return 100 * self.done / self.needed if self.needed else 0.0


def progress(rnd: ReviewRound, *, now=None) -> RoundProgress:
    now = now or timezone.now()
    pairs = rnd.pairs.count()
    claims = RoundClaim.objects.filter(round=rnd)
    done_by = dict(
        claims.filter(done__isnull=False).values("reviewer").annotate(n=Count("pk")).values_list("reviewer", "n")
    )
    open_by = dict(claims.open(now).values("reviewer").annotate(n=Count("pk")).values_list("reviewer", "n"))
    complete = claims.filter(done__isnull=False).values("pair").annotate(n=Count("pk")).filter(n__gte=rnd.k).count()
    rota = members(rnd)
    rows = [
        ReviewerProgress(
            m.reviewer.get_username(),
            m.reviewer_id,
            share(i, len(rota), rnd.k, pairs),
            done_by.get(m.reviewer_id, 0),
            open_by.get(m.reviewer_id, 0),
            False,
        )  # fmt: skip
        for i, m in enumerate(rota)
    ]
    for m in rnd.members.filter(removed__isnull=False).select_related("reviewer"):
        rows.append(
            ReviewerProgress(m.reviewer.get_username(), m.reviewer_id, None, done_by.get(m.reviewer_id, 0), 0, True)
        )
    return RoundProgress(pairs, rnd.k, sum(done_by.values()), sum(open_by.values()), complete, rows)


def is_member(rnd: ReviewRound, user) -> bool:
    return rnd.members.filter(reviewer=user, removed__isnull=True).exists()
