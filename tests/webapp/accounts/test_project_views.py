"""The project pages: members see their projects; a project's admins manage its members; site
admins make projects. Every change audited with its project."""

from django.urls import reverse

from tests.projects import DEFAULT_SLUG, default_project
from webapp.audit.models import AuditEvent
from webapp.projects.models import Membership, Project


def test_a_member_sees_their_projects_and_roles_only(client_for, researcher):
    Project.objects.create(name="Oncology study", slug="onco")
    page = client_for(researcher).get(reverse("projects:list")).content.decode()
    assert "Test project" in page and "researcher" in page
    assert "Oncology study" not in page
    assert client_for(researcher).get(reverse("projects:detail", args=["onco"])).status_code == 404


def test_a_site_admin_makes_a_project_and_nobody_else_may(client_for, site_admin, admin_user):
    assert client_for(admin_user).post(reverse("projects:new"), {"name": "ICU"}).status_code == 403
    response = client_for(site_admin).post(reverse("projects:new"), {"name": "ICU sepsis", "description": "IRB 12"})
    project = Project.objects.get(slug="icu-sepsis")
    assert response.url == reverse("projects:detail", args=[project.slug])
    assert AuditEvent.objects.get(action="create_project").project_id == project.pk
    again = client_for(site_admin).post(reverse("projects:new"), {"name": "ICU sepsis"})
    assert again.status_code == 400 and "already exists" in again.content.decode()


def test_a_project_admin_adds_and_removes_members_and_a_clinician_may_not(
    client_for, admin_user, clinician, django_user_model
):
    newcomer = django_user_model.objects.create_user("nora")
    add = reverse("projects:member_add", args=[DEFAULT_SLUG])
    assert client_for(clinician).post(add, {"username": "nora", "role": "curator"}).status_code == 403
    assert client_for(admin_user).post(add, {"username": "nora", "role": "curator"}).status_code == 302
    membership = Membership.objects.get(user=newcomer, project=default_project())
    assert membership.role == "curator"
    unknown = client_for(admin_user).post(add, {"username": "ghost", "role": "curator"})
    assert unknown.status_code == 400 and "No active account" in unknown.content.decode()
    remove = reverse("projects:member_remove", args=[DEFAULT_SLUG, membership.pk])
    assert client_for(admin_user).post(remove).status_code == 302
    assert not Membership.objects.filter(user=newcomer).exists()
    rows = AuditEvent.objects.filter(action__in=["add_member", "remove_member"]).order_by("id")
    assert [(r.action, r.details["user"], r.details["role"], r.project_id) for r in rows] == [
        ("add_member", "nora", "curator", default_project().pk),
        ("remove_member", "nora", "curator", default_project().pk),
    ]


def test_an_admin_of_another_project_cannot_touch_this_ones_members(client_for, django_user_model, clinician):
    other = Project.objects.create(name="Other", slug="other")
    outsider = django_user_model.objects.create_user("otto")
    Membership.objects.create(project=other, user=outsider, role="admin")
    membership = Membership.objects.get(user=clinician)
    client = client_for(outsider)
    assert client.post(reverse("projects:member_remove", args=[DEFAULT_SLUG, membership.pk])).status_code == 404
    assert (
        client.post(
            reverse("projects:member_add", args=[DEFAULT_SLUG]), {"username": "otto", "role": "admin"}
        ).status_code
        == 404
    )
    assert Membership.objects.filter(user=clinician).exists()


def test_only_a_project_admin_turns_mlflow_tracking_on_and_it_is_audited(client_for, admin_user, researcher):
    url = reverse("projects:tracking", args=[DEFAULT_SLUG])
    assert not default_project().mlflow_tracking  # off until an admin decides
    assert client_for(researcher).post(url, {"on": "1"}).status_code == 403
    assert client_for(admin_user).post(url, {"on": "1"}).status_code == 302
    assert default_project().mlflow_tracking
    page = client_for(researcher).get(reverse("projects:detail", args=[DEFAULT_SLUG])).content.decode()
    assert f"decselfmask-{DEFAULT_SLUG}" in page and "Log to MLflow" not in page  # seen, not switched
    client_for(admin_user).post(url, {"on": "0"})
    assert not default_project().mlflow_tracking
    assert [e.details["mlflow_tracking"] for e in AuditEvent.objects.filter(action="edit_project").order_by("id")] == [
        True,
        False,
    ]
    other = Project.objects.create(name="Other", slug="other")
    assert client_for(admin_user).post(reverse("projects:tracking", args=["other"]), {"on": "1"}).status_code == 404
    other.refresh_from_db()
    assert not other.mlflow_tracking


def test_a_project_name_with_a_hidden_character_is_refused_as_task_and_corpus_names_are(client_for, site_admin):
    response = client_for(site_admin).post(reverse("projects:new"), {"name": "ICU\u202esepsis", "slug": "icu"})
    assert response.status_code == 400
    assert "invisible format character U+202E at offset 3" in response.content.decode()
    assert not Project.objects.filter(slug="icu").exists()
    for hidden in ("a\u200bb", "a\u2028b", "a\x07b", "\ufeffname"):
        assert client_for(site_admin).post(reverse("projects:new"), {"name": hidden, "slug": "x"}).status_code == 400
