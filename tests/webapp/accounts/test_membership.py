"""Memberships: given and taken in one audited place; the identity provider's groups re-evaluated
at each sign-in touch only the memberships they gave."""

from webapp.accounts.membership import add_member, create_project, remove_member, set_provider_memberships
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership
from webapp.projects.roles import Capability, has_capability


def test_a_membership_gives_a_role_in_its_project_only(django_user_model, site_admin):
    ward, study = create_project(name="Ward", actor=site_admin), create_project(name="Study", actor=site_admin)
    user = django_user_model.objects.create_user("nurse")
    assert add_member(ward, user, "clinician", actor=site_admin)
    assert not add_member(ward, user, "clinician", actor=site_admin)  # already: no second row, no audit
    assert has_capability(user, Capability.REVIEW, ward) and not has_capability(user, Capability.REVIEW, study)
    assert not has_capability(user, Capability.LAUNCH, ward)
    assert remove_member(ward, user, "clinician", actor=site_admin)
    assert not has_capability(user, Capability.REVIEW, ward)
    rows = AuditEvent.objects.filter(action__in=["create_project", "add_member", "remove_member"]).order_by("id")
    assert [(r.action, r.project_id) for r in rows] == [
        ("create_project", ward.pk),
        ("create_project", study.pk),
        ("add_member", ward.pk),
        ("remove_member", ward.pk),
    ]


def test_provider_groups_change_only_the_memberships_they_gave(django_user_model, site_admin):
    create_project(name="Ward", actor=site_admin)
    study = create_project(name="Study", actor=site_admin)
    user = django_user_model.objects.create_user("carla")
    add_member(study, user, "curator", actor=site_admin)  # given in the app by a project admin

    added, removed = set_provider_memberships(user, {("ward", "clinician"), ("no-such-project", "admin")})
    assert (added, removed) == (["ward:clinician"], [])
    added, removed = set_provider_memberships(user, {("ward", "researcher")})
    assert (added, removed) == (["ward:researcher"], ["ward:clinician"])
    added, removed = set_provider_memberships(user, set())
    assert (added, removed) == ([], ["ward:researcher"])
    assert set(Membership.objects.filter(user=user).values_list("project__slug", "role", "origin")) == {
        ("study", "curator", "app")
    }


def test_a_projects_slug_keeps_its_letters_without_their_accents(site_admin):
    assert create_project(name="Ünïcødé", actor=site_admin).slug == "unicode"  # was "unicde"
    assert create_project(name="Cardiología Niños", actor=site_admin).slug == "cardiologia-ninos"
