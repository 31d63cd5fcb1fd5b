"""A catalog task adopted by a project is that project's to retire and to write a guideline for:
the state and the guideline versions are per project, and only a site admin changes the catalog
itself (issue 37: a cardiology researcher retired `blood-in-the-stool` for oncology, and wrote the
guideline the demo project's clinicians then read and their decisions recorded)."""

import pytest
from django.urls import reverse

from tests.conftest import _make_user
from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, ProjectTaskState, Task
from webapp.corpus.tasks import current_guideline
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role, forget_roles
from webapp.review import catalog

NOTE = "Cardiology team note: accept every highlight"


@pytest.fixture
def stool(db):
    return Task.objects.create(slug="blood-in-the-stool", description="blood in the stool", options=["y", "n"])


@pytest.fixture
def oncology(db, django_user_model):
    project = Project.objects.create(name="Oncology", slug="onco")
    clinician = django_user_model.objects.create_user(username="olga")
    Membership.objects.create(project=project, user=clinician, role=Role.CLINICIAN)
    corpus = Corpus.objects.create(project=project, name="onco-notes", language="en")
    Note.objects.create(corpus=corpus, external_id="o1", text="No blood in the stool.")
    return {"project": project, "clinician": clinician, "corpus": corpus}


def test_a_researcher_retires_a_catalog_task_for_their_project_only(client_for, researcher, stool, oncology):
    client = client_for(researcher)
    response = client.post(reverse("corpus:task_retire", args=[stool.pk]), {"retired": "1"}, follow=True)
    assert (
        "retired: hidden from new jobs and the review queue, its data kept in Test project" in response.content.decode()
    )
    stool.refresh_from_db()
    assert not stool.retired  # the catalog's own state is unchanged
    assert ProjectTaskState.objects.get(task=stool).project == default_project()
    assert stool not in catalog.active_tasks(default_project().pk)
    assert stool in catalog.active_tasks(oncology["project"].pk)  # oncology goes on using it
    page = client_for(oncology["clinician"]).get(reverse("corpus:tasks")).content.decode()
    assert "retired" not in page.split("blood in the stool", 1)[1].split("</tr>", 1)[0]
    event = AuditEvent.objects.get(action="retire_task")
    assert event.project_id == default_project().pk
    client = client_for(researcher)
    client.post(reverse("corpus:task_retire", args=[stool.pk]), {"retired": "0"})
    assert stool in catalog.active_tasks(default_project().pk)


def test_a_projects_guideline_of_a_catalog_task_is_read_by_its_reviewers_only(
    client_for, researcher, clinician, stool, oncology
):
    form = {"description": stool.description, "options": "y\nn", "group": "", "guideline": NOTE}
    response = client_for(researcher).post(reverse("corpus:task_edit", args=[stool.pk]), form, follow=True)
    assert "guideline for Test project saved" in response.content.decode()
    stool.refresh_from_db()
    assert stool.guideline == ""  # the catalog's text is unchanged
    ours = current_guideline(stool, default_project())
    assert ours.text == NOTE and ours.project == default_project()
    assert current_guideline(stool, oncology["project"]) is None
    assert current_guideline(stool) is None
    page = client_for(researcher).get(reverse("corpus:task_edit", args=[stool.pk])).content.decode()
    assert NOTE in page and "Test project" in page


def test_only_a_site_admin_changes_the_catalog_itself(client_for, site_admin, stool, oncology):
    client = client_for(site_admin)
    form = {"description": stool.description, "options": "y\nn", "group": "", "guideline": "Catalog rule."}
    client.post(reverse("corpus:task_edit", args=[stool.pk]), form)
    client.post(reverse("corpus:task_retire", args=[stool.pk]), {"retired": "1"})
    stool.refresh_from_db()
    assert stool.retired and current_guideline(stool, oncology["project"]).text == "Catalog rule."
    assert not ProjectTaskState.objects.exists()


def test_another_projects_id_is_unknown_and_a_member_of_two_projects_must_choose(
    client_for, django_user_model, researcher, stool, oncology
):
    url = reverse("corpus:task_retire", args=[stool.pk])
    assert client_for(researcher).post(url, {"retired": "1", "project": oncology["project"].pk}).status_code == 404
    both = _make_user(django_user_model, "bea", Role.RESEARCHER)
    Membership.objects.create(project=oncology["project"], user=both, role=Role.RESEARCHER)
    forget_roles(both)
    page = client_for(both).post(url, {"retired": "1"}, follow=True).content.decode()
    assert "Choose the project this change is for." in page and not ProjectTaskState.objects.exists()
    client_for(both).post(url, {"retired": "1", "project": oncology["project"].pk})
    assert ProjectTaskState.objects.get().project == oncology["project"]
