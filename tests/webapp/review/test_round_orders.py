"""What a round's queue serves first (webapp.review.orders): as drawn, the model's uncertainty,
seeded random stratified across tasks, disagreement so far; chosen at creation, changed on the
round's page (audited), shown there and named in the export."""

import json
from collections import Counter

import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.review import decisions, orders, rounds, team_export
from webapp.review.decisions import PeakContext

from .fabricate import TEXT, add_map
from .test_rounds import finish, make_reviewers, new_round


def notes_scored(corpus, tasks, base, scores, task="heart"):
    """One note a score: its heart-rate map peaks on "130" with that score."""
    notes = []
    for i, score in enumerate(scores):
        note = Note.objects.create(corpus=corpus, external_id=f"o{task}{i}", text=TEXT)
        add_map(note, tasks[task], base, {"130": score} if task == "heart" else {"Pacemaker": score})
        notes.append(note)
    return notes


def served(rnd, reviewer):
    """The notes the queue serves `reviewer`, one after another, each judged as it comes."""
    out = []
    while (claim := rounds.next_claim(rnd, reviewer)) is not None:
        out.append(claim.pair.note_id)
        finish(claim, reviewer)
    return out


def test_as_drawn_the_queue_serves_pairs_in_note_order(corpus, tasks, base, sharp, django_user_model):
    notes = notes_scored(corpus, tasks, base, [0.9, 0.45, 0.6])
    (me,) = make_reviewers(django_user_model, 1)
    rnd = new_round(corpus, tasks, base, sharp, [me], k=1)
    assert rnd.order == "drawn"
    assert served(rnd, me) == [n.pk for n in notes]


def test_by_uncertainty_the_peaks_nearest_the_threshold_come_first(corpus, tasks, base, sharp, django_user_model):
    # sharp: no smoothing, upper 0.4; margins 0.5, 0.05, 0.2, 0.01
    notes = notes_scored(corpus, tasks, base, [0.9, 0.45, 0.6, 0.41])
    (me,) = make_reviewers(django_user_model, 1)
    rnd = new_round(corpus, tasks, base, sharp, [me], k=1, order="uncertainty")
    assert served(rnd, me) == [notes[3].pk, notes[1].pk, notes[2].pk, notes[0].pk]
    margins = orders.margins(rnd)
    assert sorted(round(m, 2) for m in margins.values()) == [0.01, 0.05, 0.2, 0.5]


def test_the_stratified_order_is_seeded_and_keeps_each_tasks_share_in_every_prefix(
    corpus, tasks, base, sharp, django_user_model
):
    notes_scored(corpus, tasks, base, [0.9] * 8)
    notes_scored(corpus, tasks, base, [0.9] * 4, task="pacemaker")
    (me,) = make_reviewers(django_user_model, 1)

    def order_of(seed):
        rnd = rounds.create_round(
            corpus, name=f"s{seed}", tasks=list(tasks.values()), model=base, method="attnlrp", template="en",
            profile=sharp, k=1, reviewers=[me], order="stratified", order_seed=seed,
        )  # fmt: skip
        return [(p.note_id, p.task_id) for p in rnd.pairs.order_by("position")]

    first, again, other = order_of(7), order_of(7), order_of(8)
    assert first == again and first != other  # seeded
    assert first != sorted(first)  # not the drawn order
    heart = tasks["heart"].pk
    for n in (3, 6, 9, 12):  # 2 heart pairs to 1 pacemaker pair in every prefix of 3
        assert Counter(t == heart for _, t in first[:n]) == {True: 2 * n // 3, False: n // 3}


def test_by_disagreement_a_split_pair_comes_first(corpus, tasks, base, sharp, django_user_model):
    notes = notes_scored(corpus, tasks, base, [0.9, 0.9, 0.9])
    a, b, c = make_reviewers(django_user_model, 3)
    rnd = new_round(corpus, tasks, base, sharp, [a, b, c], k=3, order="disagreement")
    # a and b have judged the third pair and split on it; nobody has judged the others
    third = rnd.pairs.get(note=notes[2])
    ctx = PeakContext(notes[2], tasks["heart"], base, "attnlrp", "en", rnd.config_key)
    (start, end), = third.peaks  # fmt: skip
    decisions.decide(ctx, a, start=start, end=end, decision="accept", expected_version=0)
    decisions.decide(ctx, b, start=start, end=end, decision="reject", expected_version=0)
    claim = rounds.next_claim(rnd, c)
    assert claim.pair.note_id == notes[2].pk
    annotated = rnd.pairs.annotate(d=orders.disagreement(rnd)).order_by("position")
    assert [p.d for p in annotated] == [0, 0, 1]


def test_the_order_is_shown_changed_on_the_round_page_audited_and_named_in_the_export(
    client, corpus, tasks, base, sharp, researcher, django_user_model
):
    notes = notes_scored(corpus, tasks, base, [0.9, 0.45])
    (me,) = make_reviewers(django_user_model, 1)
    rnd = new_round(corpus, tasks, base, sharp, [me], k=1)
    client.force_login(researcher)
    page = client.get(reverse("review:round", args=[rnd.pk])).content.decode()
    assert "Review first: <strong>as drawn (note, task)</strong>" in page
    response = client.post(reverse("review:round_order", args=[rnd.pk]), {"order": "uncertainty", "order_seed": 0})
    assert response.status_code == 302
    rnd.refresh_from_db()
    assert rnd.order == "uncertainty"
    assert [p.note_id for p in rnd.pairs.order_by("position")] == [notes[1].pk, notes[0].pk]
    event = AuditEvent.objects.get(details__kind="review_round_order")
    assert event.actor == researcher and event.details["order"] == "uncertainty"
    page = client.get(reverse("review:round", args=[rnd.pk])).content.decode()
    assert "the model&#x27;s uncertainty first" in page or "the model's uncertainty first" in page
    assert "changed 1 time" in page
    records = [json.loads(line) for line in team_export.jsonl_lines(rnd)]
    assert {r["order"] for r in records} == {"uncertainty"}
    header = next(iter(team_export.csv_lines(rnd)))
    assert header.startswith("round,order,")


def test_a_clinician_cannot_change_the_order_and_an_unknown_one_is_refused(
    client, corpus, tasks, base, sharp, clinician, researcher, django_user_model
):
    notes_scored(corpus, tasks, base, [0.9])
    rnd = new_round(corpus, tasks, base, sharp, [clinician], k=1)
    client.force_login(clinician)
    assert client.post(reverse("review:round_order", args=[rnd.pk]), {"order": "uncertainty"}).status_code == 403
    client.force_login(researcher)
    client.post(reverse("review:round_order", args=[rnd.pk]), {"order": "loudest"})
    rnd.refresh_from_db()
    assert rnd.order == "drawn"
    with pytest.raises(rounds.RoundError, match="Unknown order"):
        new_round(corpus, tasks, base, sharp, [clinician], k=1, order="loudest")
