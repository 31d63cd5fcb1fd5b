"""Review rounds: drawing pairs, the rota, atomic claims with a lease, removing a reviewer,
progress; and 10 reviewers claiming at once on real PostgreSQL."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from tests.conftest import _make_user
from webapp.corpus.models import Note
from webapp.review import decisions, rounds
from webapp.review.decisions import PeakContext
from webapp.review.models import RoundClaim, RoundPair

from .fabricate import TEXT, add_map


def make_notes(corpus, tasks, base, n, peaked=None):
    notes = [Note.objects.create(corpus=corpus, external_id=f"r{i}", text=TEXT) for i in range(n)]
    for note in notes:
        add_map(note, tasks["heart"], base, peaked or {"130": 0.9})
    return notes


def make_reviewers(django_user_model, n):
    return [_make_user(django_user_model, f"rev{i:02d}", "clinician") for i in range(n)]


def new_round(corpus, tasks, base, sharp, reviewers, k=2, **extra):
    return rounds.create_round(
        corpus,
        name="ward round",
        tasks=[tasks["heart"]],
        model=base,
        method="attnlrp",
        template="en",
        profile=sharp,
        k=k,
        reviewers=reviewers,
        **extra,
    )


def finish(claim, reviewer, decision="accept"):
    """Decide every peak of the claim's pair as the review page does, then sync the claim."""
    pair, rnd = claim.pair, claim.round
    ctx = PeakContext(pair.note, pair.task, rnd.model_version, rnd.method, rnd.template, rnd.config_key)
    for a, b in pair.peaks:
        decisions.decide(ctx, reviewer, start=a, end=b, decision=decision, expected_version=0)
    rounds.sync_claims(reviewer, pair.note_id, pair.task_id, rnd.model_version_id, rnd.method, rnd.template,
                       rnd.config_key)  # fmt: skip


def test_a_round_draws_the_pairs_with_peaks_in_note_order(corpus, tasks, base, sharp, django_user_model):
    notes = make_notes(corpus, tasks, base, 3)
    add_map(notes[1], tasks["pacemaker"], base, {"Pacemaker": 0.9})  # not a task of the round
    empty = Note.objects.create(corpus=corpus, external_id="flat", text=TEXT)
    add_map(empty, tasks["heart"], base, {})  # no peak: not a pair
    rnd = new_round(corpus, tasks, base, sharp, make_reviewers(django_user_model, 2))
    pairs = list(rnd.pairs.order_by("position"))
    assert [(p.position, p.note_id, p.task_id) for p in pairs] == [(i, n.pk, tasks["heart"].pk) for i, n in
                                                                   enumerate(notes)]  # fmt: skip
    assert pairs[0].peaks == [[TEXT.index("130"), TEXT.index("130") + 3]]


def test_a_round_without_pairs_or_with_k_above_the_reviewers_is_refused(corpus, tasks, base, sharp, django_user_model):
    reviewers = make_reviewers(django_user_model, 2)
    with pytest.raises(rounds.RoundError, match="No \\(note, task\\) pair"):
        new_round(corpus, tasks, base, sharp, reviewers)
    make_notes(corpus, tasks, base, 1)
    with pytest.raises(rounds.RoundError, match="between 1 and the 2 reviewers"):
        new_round(corpus, tasks, base, sharp, reviewers, k=3)


def test_a_researcher_cannot_be_named_a_reviewer(corpus, tasks, base, sharp, researcher, clinician):
    make_notes(corpus, tasks, base, 1)
    with pytest.raises(rounds.RoundError, match="rita may not"):
        new_round(corpus, tasks, base, sharp, [clinician, researcher], k=1)


def test_the_rota_gives_k_different_reviewers_a_pair_and_even_shares():
    for R in range(1, 8):
        for k in range(1, R + 1):
            for N in range(0, 13):
                assert all(len(rounds.preferred(i, R, k)) == k for i in range(N))
                shares = [rounds.share(j, R, k, N) for j in range(R)]
                assert sum(shares) == N * k and max(shares) - min(shares) <= 1


def test_a_reviewer_gets_their_open_claim_back_until_they_finish_it(corpus, tasks, base, sharp, django_user_model):
    make_notes(corpus, tasks, base, 4)
    a, b = make_reviewers(django_user_model, 2)
    rnd = new_round(corpus, tasks, base, sharp, [a, b], k=1)
    first = rounds.next_claim(rnd, a)
    assert rounds.next_claim(rnd, a).pk == first.pk  # same pair until decided
    finish(first, a)
    first.refresh_from_db()
    assert first.done is not None
    second = rounds.next_claim(rnd, a)
    assert second.pair_id != first.pair_id
    # a's share under k=1, R=2: positions 0 and 2
    assert [first.pair.position, second.pair.position] == [0, 2]


def test_an_undo_opens_a_finished_claim_again(corpus, tasks, base, sharp, django_user_model):
    notes = make_notes(corpus, tasks, base, 1)
    (a,) = make_reviewers(django_user_model, 1)
    rnd = new_round(corpus, tasks, base, sharp, [a], k=1)
    claim = rounds.next_claim(rnd, a)
    finish(claim, a)
    decisions.undo_last(a, notes[0])
    rounds.sync_claims(a, notes[0].pk, tasks["heart"].pk, base.pk, "attnlrp", "en", rnd.config_key)
    claim.refresh_from_db()
    assert claim.done is None and claim.expires > timezone.now()


def test_an_expired_lease_gives_the_slot_to_another_reviewer(corpus, tasks, base, sharp, django_user_model):
    make_notes(corpus, tasks, base, 1)
    a, b = make_reviewers(django_user_model, 2)
    rnd = new_round(corpus, tasks, base, sharp, [a, b], k=1)
    claim = rounds.next_claim(rnd, a)
    assert rounds.next_claim(rnd, b) is None  # the one slot is held
    RoundClaim.objects.filter(pk=claim.pk).update(expires=timezone.now() - timedelta(seconds=1))
    taken = rounds.next_claim(rnd, b)
    assert taken is not None and taken.pair_id == claim.pair_id
    # a comes back and decides anyway: the pair is full, so their decision is outside the round
    finish(claim, a)
    assert RoundClaim.objects.live(timezone.now()).filter(pair=claim.pair).count() == 1


def test_removing_a_reviewer_gives_back_their_open_claims_and_redeals_the_rota(
    corpus, tasks, base, sharp, django_user_model, researcher
):
    make_notes(corpus, tasks, base, 4)
    a, b, c = make_reviewers(django_user_model, 3)
    rnd = new_round(corpus, tasks, base, sharp, [a, b, c], k=2)
    finish(rounds.next_claim(rnd, a), a)
    open_claim = rounds.next_claim(rnd, a)
    assert rounds.remove_reviewer(rnd, a, actor=researcher) == 1
    assert not RoundClaim.objects.filter(pk=open_claim.pk).exists()
    assert RoundClaim.objects.filter(round=rnd, reviewer=a, done__isnull=False).count() == 1  # kept
    with pytest.raises(rounds.RoundError, match="not a reviewer"):
        rounds.next_claim(rnd, a)
    for reviewer in (b, c):
        while (claim := rounds.next_claim(rnd, reviewer)) is not None:
            finish(claim, reviewer)
    done = RoundClaim.objects.filter(round=rnd, done__isnull=False)
    assert done.count() == 4 * 2  # every pair judged twice all the same
    progress = rounds.progress(rnd)
    assert progress.complete_pairs == 4 and progress.done == 8
    assert [(r.name, r.removed) for r in progress.reviewers] == [("rev01", False), ("rev02", False), ("rev00", True)]


def test_helping_out_leaves_the_slots_of_reviewers_who_have_not_started(corpus, tasks, base, sharp,
                                                                         django_user_model):  # fmt: skip
    make_notes(corpus, tasks, base, 2)
    a, b = make_reviewers(django_user_model, 2)
    rnd = new_round(corpus, tasks, base, sharp, [a, b], k=1)
    finish(rounds.next_claim(rnd, a), a)
    assert rounds.next_claim(rnd, a) is None  # pair 1 is b's share
    rounds.remove_reviewer(rnd, b)
    assert rounds.next_claim(rnd, a).pair.position == 1  # re-dealt


def test_a_pair_gets_no_more_than_k_claims_when_reviewers_take_it_at_once(
    corpus, tasks, base, sharp, django_user_model
):
    pytest.importorskip("psycopg")
    assert connection.vendor == "postgresql"
    make_notes(corpus, tasks, base, 1)
    reviewers = make_reviewers(django_user_model, 10)
    rnd = new_round(corpus, tasks, base, sharp, reviewers, k=3)
    pair = RoundPair.objects.get(round=rnd)
    barrier, taken = threading.Barrier(10), []

    def take(reviewer):
        try:
            barrier.wait()
            if rounds._take(rnd, pair, reviewer, timezone.now()) is not None:
                taken.append(reviewer.pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(r,)) for r in reviewers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(taken) == 3 == RoundClaim.objects.filter(pair=pair).count()


test_a_pair_gets_no_more_than_k_claims_when_reviewers_take_it_at_once = pytest.mark.django_db(transaction=True)(
    test_a_pair_gets_no_more_than_k_claims_when_reviewers_take_it_at_once
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pairs, k", [(25, 2), (23, 3)])
def test_ten_reviewers_at_once_judge_every_pair_exactly_k_times_and_evenly(
    corpus, tasks, base, sharp, django_user_model, pairs, k
):
    assert connection.vendor == "postgresql"
    make_notes(corpus, tasks, base, pairs)
    reviewers = make_reviewers(django_user_model, 10)
    rnd = new_round(corpus, tasks, base, sharp, reviewers, k=k)
    barrier, errors = threading.Barrier(10), []

    def work(reviewer):
        try:
            barrier.wait()
            while (claim := rounds.next_claim(rnd, reviewer)) is not None:
                finish(claim, reviewer, "accept" if claim.pair.position % 3 else "reject")
        except Exception as exc:  # noqa: BLE001  (reported by the main thread)
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(r,)) for r in reviewers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    claims = list(RoundClaim.objects.filter(round=rnd).values_list("pair__position", "reviewer_id", "done"))
    assert all(done is not None for _, _, done in claims)
    per_pair = {}
    for position, reviewer_id, _ in claims:
        per_pair.setdefault(position, []).append(reviewer_id)
    assert sorted(per_pair) == list(range(pairs))
    assert all(len(ids) == k == len(set(ids)) for ids in per_pair.values())  # exactly k, no reviewer twice
    per_reviewer = [sum(r.pk in ids for ids in per_pair.values()) for r in reviewers]
    assert max(per_reviewer) - min(per_reviewer) <= 1 and sum(per_reviewer) == pairs * k


def test_the_decision_that_completes_a_round_announces_it_once(
    corpus, tasks, base, sharp, django_user_model, django_capture_on_commit_callbacks
):
    from webapp.integrations.models import Webhook, WebhookDelivery

    Webhook.objects.create(project=corpus.project, url="http://127.0.0.1:9/hook", secret="s" * 32, events=[])
    make_notes(corpus, tasks, base, 2)
    a, b = make_reviewers(django_user_model, 2)
    rnd = new_round(corpus, tasks, base, sharp, [a, b], k=1)
    with django_capture_on_commit_callbacks(execute=True):
        finish(rounds.next_claim(rnd, a), a)
    assert not rounds.is_complete(rnd) and not WebhookDelivery.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        finish(rounds.next_claim(rnd, b), b)
        pair = RoundClaim.objects.get(round=rnd, reviewer=b).pair  # seen complete again: announced once
        rounds.sync_claims(b, pair.note_id, pair.task_id, base.pk, "attnlrp", "en", rnd.config_key)
    assert rounds.is_complete(rnd)
    delivery = WebhookDelivery.objects.get()
    assert delivery.event == "review_round" and delivery.payload["status"] == "done"
    assert delivery.payload["object"] == {"type": "review.ReviewRound", "id": rnd.pk}
    assert delivery.payload["counts"] == {"pairs": 2, "reviewers_per_pair": 1}
