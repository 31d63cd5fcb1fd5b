"""A curator settles the notes of a validation set on which its reviewers split: the split is
listed with every answer, the curator's answer replaces the majority in the tally (and so in the
recommended setting), a change keeps the previous answer, everything is audited, and only
curators (and project admins) may settle."""

import pytest
from django.urls import reverse

from tests.projects import make_member
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.review import validation
from webapp.review.models import ValidationJudgement, ValidationSet, ValidationVerdict

from .fabricate import TEXT, add_map

GRID = [
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4},
    {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.6},
]


@pytest.fixture
def vset(corpus, tasks, base, clinician):
    items = []
    for i in range(2):
        note = Note.objects.create(corpus=corpus, external_id=f"s{i}", text=TEXT)
        add_map(note, tasks["heart"], base, {"130": 0.9, "tachycardic": 0.45})
        items.append([note.pk, tasks["heart"].pk])
    return ValidationSet.objects.create(
        corpus=corpus,
        model_version=base,
        method="attnlrp",
        template="en",
        name="round-1",
        size=2,
        items=items,
        notes_available=2,
        grid=GRID,
        created_by=clinician,
    )


@pytest.fixture
def reviewers(django_user_model):
    people = []
    for name in ("ana", "ben"):
        user = django_user_model.objects.create_user(username=name)
        make_member(user, "clinician")
        people.append(user)
    return people


@pytest.fixture
def curator(django_user_model):
    user = django_user_model.objects.create_user(username="cora")
    make_member(user, "curator")
    return user


def answer(vset, reviewer, position, setting, reasonable):
    note_id, task_id = vset.items[position]
    ValidationJudgement.objects.create(
        validation_set=vset, note_id=note_id, task_id=task_id, setting=setting, reviewer=reviewer, reasonable=reasonable
    )


@pytest.fixture
def split(vset, reviewers):
    """Both notes: setting 1 reasonable to both reviewers; setting 2 splits on note 1 and is
    reasonable to both on note 2. Without a curator, setting 1 (2 of 2) beats setting 2 (1 of 2)."""
    ana, ben = reviewers
    for position in (0, 1):
        answer(vset, ana, position, 0, True)
        answer(vset, ben, position, 0, True)
    answer(vset, ana, 0, 1, True)
    answer(vset, ben, 0, 1, False)
    answer(vset, ana, 1, 1, True)
    answer(vset, ben, 1, 1, True)
    return vset


def test_only_split_answers_are_disputes(split):
    found = validation.disputes(split)
    assert [(d.position, d.setting) for d in found] == [(0, 1)]
    assert found[0].answers == [("ana", True), ("ben", False)]
    assert found[0].verdict is None and found[0].majority is False  # a tie is not reasonable


def test_the_curators_answer_replaces_the_majority_in_the_tally(split, curator):
    rows, best = validation.tally(split)
    assert [r.reasonable for r in rows] == [2, 1] and best.index == 0  # tie on note 1: not reasonable
    validation.settle(split, curator, position=0, setting=1, reasonable=True)
    rows, best = validation.tally(split)
    assert [r.reasonable for r in rows] == [2, 2] and [r.settled for r in rows] == [0, 1]
    assert best.index == 0  # a tie between settings goes to the first, as before
    validation.settle(split, curator, position=0, setting=1, reasonable=False)
    verdict = ValidationVerdict.objects.get()
    assert (verdict.reasonable, verdict.previous, verdict.version) == (False, True, 2)
    assert [r.reasonable for r in validation.tally(split)[0]] == [2, 1]
    events = AuditEvent.objects.filter(action=AuditEvent.Action.REVIEW_DECISION, details__kind="validation_verdict")
    assert events.count() == 2 and all(e.actor == curator for e in events)


def test_nothing_to_settle_where_reviewers_agree_or_on_a_retired_set(split, curator):
    with pytest.raises(validation.ValidationSetError, match="did not split"):
        validation.settle(split, curator, position=1, setting=1, reasonable=False)
    with pytest.raises(validation.ValidationSetError, match="No such item"):
        validation.settle(split, curator, position=5, setting=0, reasonable=False)
    validation.retire(split, curator)
    with pytest.raises(validation.ValidationSetError, match="retired"):
        validation.settle(split, curator, position=0, setting=1, reasonable=True)
    assert not ValidationVerdict.objects.exists()


def test_a_curator_settles_through_the_page(client, split, curator):
    client.force_login(curator)
    results = client.get(reverse("review:validation_results", args=[split.pk])).content.decode()
    assert 'id="settle-link"' in results and "1 note × setting with split answers" in results
    url = reverse("review:validation_settle", args=[split.pk])
    page = client.get(url).content.decode()
    assert "Split <strong>1</strong> of 1" in page and "ana" in page and "ben" in page
    assert 'name="position" value="0"' in page and 'name="setting" value="1"' in page
    assert "the majority gives <strong>not reasonable</strong>" in page
    response = client.post(url, {"position": 0, "setting": 1, "answer": "yes", "index": 0})
    assert response.status_code == 302
    assert ValidationVerdict.objects.get().reasonable is True
    page = client.get(url).content.decode()
    assert "Settled: <strong>reasonable</strong> by cora" in page
    refused = client.post(url, {"position": 1, "setting": 1, "answer": "no"}, follow=True).content.decode()
    assert "Not recorded" in refused and "did not split" in refused


def test_reviewers_and_researchers_may_not_settle(client, split, reviewers, researcher):
    url = reverse("review:validation_settle", args=[split.pk])
    for user in (reviewers[0], researcher):
        client.force_login(user)
        assert client.get(url).status_code in (403, 404)
        assert client.post(url, {"position": 0, "setting": 1, "answer": "yes"}).status_code in (403, 404)
        results = client.get(reverse("review:validation_results", args=[split.pk])).content.decode()
        assert 'id="settle-link"' not in results and "a curator of the project settles them" in results
    assert not ValidationVerdict.objects.exists()
