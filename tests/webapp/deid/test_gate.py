"""The gate itself (webapp.deid.gate): de-identified corpora pass; others are refused with the
reason naming them; a project admin's confirmation lets them go with one RELEASE_IDENTIFIABLE
row; anyone else's is refused (403, audited); the command line confirms with its flag. Marking
a corpus de-identified is a project admin's, confirmed, audited; so is taking it back. The
corpus page's card says all this and offers the mark to admins only."""

import pytest
from django.urls import reverse

from tests.projects import make_member
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.deid import gate
from webapp.projects.models import Project


@pytest.fixture
def ward(project):
    return Corpus.objects.create(project=project, name="ward", language="it")


@pytest.fixture
def clean(project):
    return Corpus.objects.create(project=project, name="clean", language="it", deidentified=True)


def rows(action=AuditEvent.Action.RELEASE_IDENTIFIABLE):
    return AuditEvent.objects.filter(action=action)


def test_deidentified_corpora_pass_and_nothing_is_recorded(clean, researcher):
    passage = gate.release([clean], researcher, False, what="dataset download", obj=clean)
    assert passage.open and passage.reason == "" and not rows().exists()


def test_a_corpus_that_is_not_deidentified_is_refused_with_its_name(ward, clean, researcher):
    with pytest.raises(gate.Refused) as refused:
        gate.release([clean, ward], researcher, False, what="dataset download", obj=ward)
    assert refused.value.status == 409
    assert str(refused.value) == (
        "Corpus ward is not de-identified: de-identify it, or a project admin may confirm that its data may "
        "leave as it is."
    )
    assert refused.value.corpora == (ward,) and not rows().exists()


def test_several_corpora_are_named_together(project, ward, researcher):
    other = Corpus.objects.create(project=project, name="icu", language="it")
    with pytest.raises(gate.Refused, match="Corpora ward, icu are not de-identified: de-identify them"):
        gate.release([ward, other, ward], researcher, True, what="training launch", obj=ward)


def test_a_project_admins_confirmation_lets_it_go_with_one_audit_row(ward, clean, admin_user):
    passage = gate.release([ward, clean], admin_user, True, what="dataset download", obj=ward, format="jsonl")
    assert not passage.open and passage.may_confirm
    event = rows().get()
    assert event.actor == admin_user and event.project_id == ward.project_id
    assert (event.object_type, event.object_id) == ("corpus.Corpus", str(ward.pk))
    # the action, the object, the corpora: ids and names, never a note's text
    assert event.details == {
        "what": "dataset download",
        "corpora": [ward.pk],
        "corpus_names": ["ward"],
        "format": "jsonl",
    }
    assert gate.released(ward)


def test_a_site_admin_is_an_admin_of_every_project(ward, site_admin):
    gate.release([ward], site_admin, True, what="annotation export", obj=ward)
    assert rows().get().actor == site_admin


@pytest.mark.parametrize("role", ["researcher", "clinician", "curator"])
def test_anyone_elses_confirmation_is_refused_and_audited(ward, django_user_model, role):
    user = make_member(django_user_model.objects.create_user(username=f"u-{role}"), role)
    with pytest.raises(gate.Refused) as refused:
        gate.release([ward], user, True, what="dataset build", obj=ward)
    assert refused.value.status == 403 and "Only an admin of the project may confirm it" in str(refused.value)
    assert not rows().exists() and not gate.released(ward)
    denied = rows(AuditEvent.Action.PERMISSION_DENIED).get()
    assert denied.actor == user and denied.details["what"] == "dataset build"
    assert denied.details["corpora"] == [ward.pk]


def test_an_admin_of_another_project_may_not_confirm(ward, django_user_model):
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    user = make_member(django_user_model.objects.create_user(username="boss"), "admin", elsewhere)
    make_member(user, "researcher")
    with pytest.raises(gate.Refused) as refused:
        gate.release([ward], user, True, what="dataset build", obj=ward)
    assert refused.value.status == 403


def test_the_command_line_confirms_with_its_flag(ward):
    with pytest.raises(gate.Refused):
        gate.release([ward], "command line", False, what="annotation export", obj=ward)
    gate.release([ward], "command line", True, what="annotation export", obj=ward)
    event = rows().get()
    assert event.actor is None and event.actor_name.startswith("cli:") and event.details["as"] == "command line"


def test_the_gate_for_a_page_offers_the_checkbox_to_admins_only(ward, admin_user, researcher):
    assert gate.gate_for([ward], admin_user).may_confirm
    assert not gate.gate_for([ward], researcher).may_confirm
    assert gate.gate_for([ward], admin_user).confirm_label == (
        "Let it leave although corpus ward is not de-identified (recorded in the audit log)"
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, False),
        ({"confirm_identifiable": "1"}, True),
        ({"confirm_identifiable": "on"}, True),
        ({"confirm_identifiable": "0"}, False),
        (None, False),
    ],
)
def test_confirmed_reads_a_form_or_a_query(data, expected):
    assert gate.confirmed(data) is expected


# ---------------------------------------------------------------- marking a corpus de-identified


def test_an_admin_marks_a_corpus_deidentified_with_the_confirmation(ward, admin_user):
    with pytest.raises(gate.Refused, match="Confirm that the notes of corpus ward were de-identified"):
        gate.mark_deidentified(ward, admin_user, confirm=False)
    assert gate.mark_deidentified(ward, admin_user, confirm=True)
    ward.refresh_from_db()
    assert ward.deidentified
    event = rows(AuditEvent.Action.MARK_DEIDENTIFIED).get()
    assert event.actor == admin_user and event.details == {"deidentified": True, "name": "ward"}
    assert not gate.mark_deidentified(ward, admin_user, confirm=True)  # nothing changed: no second row
    assert rows(AuditEvent.Action.MARK_DEIDENTIFIED).count() == 1


def test_taking_the_mark_back_is_audited_and_closes_the_gate(clean, admin_user, researcher):
    assert gate.mark_deidentified(clean, admin_user, confirm=False, deidentified=False)
    clean.refresh_from_db()
    assert not clean.deidentified
    assert rows(AuditEvent.Action.MARK_DEIDENTIFIED).get().details["deidentified"] is False
    with pytest.raises(gate.Refused):
        gate.release([clean], researcher, False, what="dataset download", obj=clean)


def test_only_a_project_admin_may_mark(ward, researcher):
    with pytest.raises(gate.Refused) as refused:
        gate.mark_deidentified(ward, researcher, confirm=True)
    assert refused.value.status == 403
    ward.refresh_from_db()
    assert not ward.deidentified and not rows(AuditEvent.Action.MARK_DEIDENTIFIED).exists()


def test_the_corpus_page_offers_the_mark_to_admins_and_marks(client, ward, admin_user):
    client.force_login(admin_user)
    html = client.get(reverse("corpus:detail", args=[ward.pk])).content.decode()
    assert "Its data leaves only after a project admin's confirmation" in html
    assert reverse("deid:corpus_mark", args=[ward.pk]) in html
    response = client.post(reverse("deid:corpus_mark", args=[ward.pk]), {"deidentified": "1"}, follow=True)
    assert "Confirm that the notes of corpus ward were de-identified" in response.content.decode()
    client.post(reverse("deid:corpus_mark", args=[ward.pk]), {"deidentified": "1", "confirm": "1"})
    ward.refresh_from_db()
    assert ward.deidentified
    html = client.get(reverse("corpus:detail", args=[ward.pk])).content.decode()
    assert "Its data may leave" in html and "Mark as not de-identified" in html
    client.post(reverse("deid:corpus_mark", args=[ward.pk]), {"deidentified": "0"})
    ward.refresh_from_db()
    assert not ward.deidentified
    assert rows(AuditEvent.Action.MARK_DEIDENTIFIED).count() == 2


def test_a_researcher_sees_no_mark_and_cannot_post_one(client, ward, researcher):
    client.force_login(researcher)
    html = client.get(reverse("corpus:detail", args=[ward.pk])).content.decode()
    assert reverse("deid:corpus_mark", args=[ward.pk]) not in html
    response = client.post(
        reverse("deid:corpus_mark", args=[ward.pk]), {"deidentified": "1", "confirm": "1"}, follow=True
    )
    assert "Only an admin of the project may mark corpus ward" in response.content.decode()
    ward.refresh_from_db()
    assert not ward.deidentified


def test_another_projects_member_cannot_mark(client, ward, django_user_model):
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere")
    outsider = make_member(django_user_model.objects.create_user(username="out"), "admin", elsewhere)
    client.force_login(outsider)
    response = client.post(reverse("deid:corpus_mark", args=[ward.pk]), {"deidentified": "1", "confirm": "1"})
    assert response.status_code == 404
