"""Decisions on one peak made at the same moment, on real PostgreSQL connections (one thread
each, committed rows: `transaction=True`), as two browser requests would make them.

- Two reviewers: each gets their own row (the unique constraint is per reviewer), both version 1,
  both audited; neither request fails.
- One reviewer in two windows: both transactions look, find no row (SELECT ... FOR UPDATE locks
  nothing when there is nothing), and both INSERT. The second INSERT waits on the unique index
  until the first commits, then fails with IntegrityError: `decide` must turn that into
  StaleDecision carrying the row that won (its "another window" branch), store nothing of the
  loser's and audit only the winner. To reach that branch on every run, `insert_together` holds
  each thread just before its INSERT until both are there; `test_..._however_the_requests_interleave`
  lets them run free, many times, and checks the same promises whichever branch each round takes.
"""

import threading

import pytest
from django.db import connection

from webapp.audit.models import AuditEvent
from webapp.review import decisions
from webapp.review.decisions import PeakContext, StaleDecision
from webapp.review.models import PeakDecision

from .fabricate import TEXT, word_span

pytestmark = pytest.mark.django_db(transaction=True)

SPAN = word_span(TEXT, "130")
TIMEOUT = 30


@pytest.fixture
def ctx(note, tasks, base, maps):
    return PeakContext(note, tasks["heart"], base, "attnlrp", "en")


@pytest.fixture
def second_clinician(django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("carl", password="x" * 12)
    user.groups.add(Group.objects.get_or_create(name="clinician")[0])
    return user


@pytest.fixture
def insert_together(monkeypatch):
    """Hold each caller of PeakDecision.objects.create until two are there, then let both INSERT."""
    barrier = threading.Barrier(2, timeout=TIMEOUT)
    manager = PeakDecision.objects
    original = manager.create
    calls = []

    def create(**kwargs):
        calls.append(kwargs["reviewer"].pk)
        barrier.wait()  # both transactions have looked and found no row
        return original(**kwargs)

    monkeypatch.setattr(manager, "create", create)
    return calls


def at_once(*calls):
    """Run each call in its own thread with its own database connection, started together by a
    barrier; returns [(result, exception)] in the calls' order. Each thread also checks that its
    connection still works afterwards (no transaction left broken by a failed INSERT)."""
    start = threading.Barrier(len(calls), timeout=TIMEOUT)
    outcomes = [None] * len(calls)

    def run(i, call):
        result = error = None
        try:
            start.wait()
            try:
                result = call()
            except Exception as exc:  # noqa: BLE001 - reported to the test
                error = exc
            # The connection is still usable after the request: no failed transaction left open.
            PeakDecision.objects.count()
            assert not connection.in_atomic_block
        except Exception as exc:  # noqa: BLE001
            error = error or exc
        finally:
            outcomes[i] = (result, error)
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 2)
    assert not any(thread.is_alive() for thread in threads), "a decision never returned (deadlock?)"
    return outcomes


def deciding(ctx, user, decision, span=SPAN):
    return lambda: decisions.decide(ctx, user, start=span[0], end=span[1], decision=decision, expected_version=0)


def decision_events():
    return list(AuditEvent.objects.filter(action=AuditEvent.Action.REVIEW_DECISION).order_by("pk"))


def test_two_reviewers_deciding_on_one_peak_at_once_each_get_their_own_decision(
    ctx, clinician, second_clinician, insert_together
):
    (mine, my_error), (theirs, their_error) = at_once(
        deciding(ctx, clinician, "accept"), deciding(ctx, second_clinician, "reject")
    )
    assert my_error is None and their_error is None
    assert sorted(insert_together) == sorted([clinician.pk, second_clinician.pk])  # both really inserted at once
    rows = {row.reviewer_id: row for row in PeakDecision.objects.filter(start=SPAN[0], end=SPAN[1])}
    assert set(rows) == {clinician.pk, second_clinician.pk}
    assert (rows[clinician.pk].pk, rows[clinician.pk].decision, rows[clinician.pk].version) == (mine.pk, "accept", 1)
    assert (rows[second_clinician.pk].pk, rows[second_clinician.pk].decision, rows[second_clinician.pk].version) == (
        theirs.pk,
        "reject",
        1,
    )
    assert all(row.previous is None for row in rows.values())
    events = decision_events()
    assert sorted((e.actor_id, e.object_id, e.details["op"], e.details["decision"]) for e in events) == sorted(
        [(clinician.pk, str(mine.pk), "create", "accept"), (second_clinician.pk, str(theirs.pk), "create", "reject")]
    )
    # Both stay stored and, differing, are a conflict; a tie rejects the span for dataset builds.
    assert decisions.is_conflict(decisions.decisions_on(ctx))
    assert decisions.rejected_spans([ctx.note.pk], [ctx.task.pk]) == {(ctx.note.pk, ctx.task.pk): [SPAN]}


def test_one_reviewer_deciding_in_two_windows_at_once_keeps_one_decision_and_shows_it_to_the_other(
    ctx, clinician, insert_together
):
    outcomes = at_once(deciding(ctx, clinician, "accept"), deciding(ctx, clinician, "reject"))
    assert insert_together == [clinician.pk, clinician.pk]  # both windows reached the INSERT
    won = [(i, result) for i, (result, error) in enumerate(outcomes) if error is None]
    lost = [(i, error) for i, (result, error) in enumerate(outcomes) if error is not None]
    assert len(won) == 1 and len(lost) == 1, outcomes
    (_, winner), (loser_index, refused) = won[0], lost[0]
    # The unique violation of the losing INSERT became the page's message, not a server error.
    assert isinstance(refused, StaleDecision), repr(refused)
    assert "another window a moment ago" in str(refused)
    assert refused.current is not None and refused.current.pk == winner.pk
    assert (refused.current.decision, refused.current.version) == (winner.decision, 1)
    # One row: the winner's, untouched by the loser.
    row = PeakDecision.objects.get()
    assert (row.pk, row.reviewer_id, row.decision, row.version, row.previous) == (
        winner.pk,
        clinician.pk,
        winner.decision,
        1,
        None,
    )
    assert row.decision == ("accept", "reject")[1 - loser_index]
    # Only the stored decision is audited.
    events = decision_events()
    assert [(e.actor_id, e.object_id, e.details["op"], e.details["decision"]) for e in events] == [
        (clinician.pk, str(winner.pk), "create", winner.decision)
    ]


def test_one_reviewer_in_two_windows_however_the_requests_interleave(ctx, clinician):
    """No forced interleaving: each round either hits the INSERT race or finds the other's row;
    either way exactly one decision is stored and audited and the other window is told why."""
    for round_ in range(6):
        PeakDecision.objects.all().delete()
        AuditEvent.objects.all().delete()
        outcomes = at_once(deciding(ctx, clinician, "accept"), deciding(ctx, clinician, "reject"))
        winners = [result for result, error in outcomes if error is None]
        errors = [error for result, error in outcomes if error is not None]
        assert len(winners) == 1 and len(errors) == 1, (round_, outcomes)
        assert isinstance(errors[0], StaleDecision), (round_, repr(errors[0]))
        assert errors[0].current is not None and errors[0].current.pk == winners[0].pk
        row = PeakDecision.objects.get()
        assert (row.pk, row.decision, row.version) == (winners[0].pk, winners[0].decision, 1)
        assert [(e.object_id, e.details["op"]) for e in decision_events()] == [(str(row.pk), "create")]
