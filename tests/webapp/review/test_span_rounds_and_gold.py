"""Added spans in a round (webapp.review.span_rounds): groups by overlap, disputes under the
round's rule, the curator's final choice; and the gold evidence made in the app with its origin
(webapp.review.gold)."""

import pytest
from django.utils import timezone

from tests.conftest import _make_user
from webapp.audit.models import AuditEvent
from webapp.review import decisions, gold, rounds, span_rounds, spans
from webapp.review.models import RoundClaim

from .fabricate import TEXT, word_span


@pytest.fixture
def team(note, tasks, base, sharp, maps, clinician, django_user_model):
    other = _make_user(django_user_model, "carl", "clinician")
    curator = _make_user(django_user_model, "cora", "curator")
    rnd = rounds.create_round(
        note.corpus, name="r", tasks=[tasks["heart"]], model=base, method="attnlrp", template="en", profile=sharp,
        k=2, reviewers=[clinician, other],
    )  # fmt: skip
    pair = rnd.pairs.get()
    now = timezone.now()
    for reviewer in (clinician, other):
        RoundClaim.objects.create(round=rnd, pair=pair, reviewer=reviewer, claimed=now, expires=now, done=now)
    return {"round": rnd, "pair": pair, "a": clinician, "b": other, "curator": curator, "task": tasks["heart"]}


def add(note, team, who, words):
    a = TEXT.index(words)
    return spans.add(note, team["task"], team[who], start=a, end=a + len(words), round=team["round"])[0]


def test_overlapping_spans_of_both_reviewers_agree_and_a_lone_one_is_disputed(note, team):
    add(note, team, "a", "febrile 38.5")
    add(note, team, "b", "febrile")
    add(note, team, "a", "Pacemaker")
    groups = span_rounds.round_span_groups(team["round"])
    assert [(TEXT[g.start : g.end], g.disputed) for g in groups] == [("febrile 38.5", False), ("Pacemaker", True)]
    assert groups[0].variants[-1] == (groups[0].start, groups[0].end)


def test_the_curators_choice_is_final_in_the_gold(note, team):
    add(note, team, "a", "Pacemaker")
    add(note, team, "b", "febrile")
    group = next(g for g in span_rounds.disputed(team["round"]) if TEXT[g.start : g.end] == "Pacemaker")
    span_rounds.adjudicate(team["round"], team["curator"], note_id=note.pk, task_id=team["task"].pk,
                           start=group.start, end=group.end, decision="reject")  # fmt: skip
    pair = (note.pk, team["task"].pk)
    found = gold.evidence([pair])[pair]
    assert [(TEXT[g.start : g.end], g.origin, g.annotator) for g in found] == [("febrile", "added_span", "carl")]
    span_rounds.adjudicate(team["round"], team["curator"], note_id=note.pk, task_id=team["task"].pk,
                           start=group.start, end=group.end, decision="accept")  # fmt: skip
    origins = {(TEXT[g.start : g.end], g.origin) for g in gold.evidence([pair])[pair]}
    assert ("Pacemaker", "curator") in origins and ("Pacemaker", "added_span") not in origins
    events = AuditEvent.objects.filter(details__kind="span_adjudication")
    assert [e.details["op"] for e in events.order_by("id")] == ["create", "update"]


def test_accepted_peaks_are_gold_with_their_origin_and_rejected_ones_are_not(note, team, base):
    ctx = decisions.PeakContext(note, team["task"], base, "attnlrp", "en", team["round"].config_key)
    for word, outcome in (("130", "accept"), ("tachycardic", "reject")):
        a, b = word_span(TEXT, word)
        decisions.decide(ctx, team["a"], start=a, end=b, decision=outcome, expected_version=0)
    pair = (note.pk, team["task"].pk)
    assert [(TEXT[g.start : g.end], g.origin) for g in gold.evidence([pair])[pair]] == [("130", "accepted_peak")]
    assert gold.spans_by_pair([pair]) == {pair: [word_span(TEXT, "130")]}


def test_a_curator_keeps_only_a_span_the_reviewers_added(note, team):
    add(note, team, "a", "Pacemaker")
    group = span_rounds.disputed(team["round"])[0]
    with pytest.raises(span_rounds.SpanAdjudicationError):
        span_rounds.adjudicate(team["round"], team["curator"], note_id=note.pk, task_id=team["task"].pk,
                               start=group.start, end=group.end, decision="accept", chosen=(0, 2))  # fmt: skip
