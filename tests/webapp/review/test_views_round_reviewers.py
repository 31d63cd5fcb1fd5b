"""A round's reviewer form names a person by id: a member of the round's project is added or taken
off; any other id (a user of another project only, one that does not exist, not a number) is an
unknown id, a 404 that prints no username, so the usernames of other projects cannot be listed."""

import pytest

from tests.conftest import _make_user
from webapp.corpus.models import Note
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role, forget_roles
from webapp.review import rounds
from webapp.review.models import RoundReviewer

from .fabricate import TEXT, add_map


@pytest.fixture
def ward_round(corpus, tasks, base, sharp, clinician):
    note = Note.objects.create(corpus=corpus, external_id="r1", text=TEXT)
    add_map(note, tasks["heart"], base, {"130": 0.9})
    common = {"model": base, "method": "attnlrp", "template": "en", "profile": sharp, "k": 1}
    return rounds.create_round(corpus, name="june", tasks=[tasks["heart"]], reviewers=[clinician], **common)


@pytest.fixture
def outsider(db, django_user_model):
    """A clinician of another project only."""
    project = Project.objects.create(name="Oncology", slug="onco")
    user = django_user_model.objects.create_user(username="oncology-olga")
    Membership.objects.create(project=project, user=user, role=Role.CLINICIAN)
    return user


def _post(client, rnd, reviewer, action="add"):
    return client.post(f"/review/rounds/{rnd.pk}/reviewers/", {"reviewer": reviewer, "action": action}, follow=True)


def test_a_user_of_another_project_is_an_unknown_id_and_their_name_is_not_printed(
    client_for, ward_round, researcher, outsider
):
    client = client_for(researcher)
    for action in ("add", "remove"):
        response = _post(client, ward_round, outsider.pk, action)
        assert response.status_code == 404
        assert "oncology-olga" not in response.content.decode()
    assert not RoundReviewer.objects.filter(reviewer=outsider).exists()


def test_an_id_that_does_not_exist_or_is_not_a_number_answers_the_same(client_for, ward_round, researcher, outsider):
    client = client_for(researcher)
    for reviewer in (outsider.pk + 1000, "olga", ""):
        assert _post(client, ward_round, reviewer).status_code == 404


def test_a_member_of_the_project_is_added_and_taken_off(client_for, ward_round, researcher, django_user_model):
    carl = _make_user(django_user_model, "carl", "clinician")
    client = client_for(researcher)
    page = _post(client, ward_round, carl.pk).content.decode()
    assert "carl now reviews in this round" in page
    assert RoundReviewer.objects.filter(round=ward_round, reviewer=carl, removed__isnull=True).exists()
    page = _post(client, ward_round, carl.pk, "remove").content.decode()
    assert "carl is off the round" in page


def test_a_member_who_may_not_review_is_named_because_they_are_the_projects_own(
    client_for, ward_round, researcher, django_user_model
):
    cora = _make_user(django_user_model, "cora", "curator")
    page = _post(client_for(researcher), ward_round, cora.pk).content.decode()
    assert "cora may not" in page


def test_a_reviewer_who_left_the_project_can_still_be_taken_off(client_for, ward_round, researcher, clinician):
    Membership.objects.filter(user=clinician).delete()
    forget_roles(clinician)
    response = _post(client_for(researcher), ward_round, clinician.pk, "remove")
    assert response.status_code == 200 and "clara is off the round" in response.content.decode()
    assert RoundReviewer.objects.get(round=ward_round, reviewer=clinician).removed is not None
