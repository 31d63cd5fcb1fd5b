"""Migration 0015: a catalog task's guideline version written by a member of exactly one project
(no site admin) becomes that project's, and the catalog's text its latest own version; a catalog
task last retired by such a member is retired in their project only. A site admin's change stays
the catalog's."""

import pytest

from tests.webapp.migrating import migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds


@pytest.mark.django_db(transaction=True)
def test_project_members_changes_to_the_catalog_become_their_projects():
    old = migrate([("corpus", "0014_catalog_tasks_per_project")])
    get = old.get_model
    cardio = get("projects", "Project").objects.create(name="Cardiology", slug="cardio")
    User = get("auth", "User")
    rita = User.objects.create(username="rita")
    sam = User.objects.create(username="sam", is_superuser=True)
    get("projects", "Membership").objects.create(project=cardio, user=rita, role="researcher")
    Task, Guideline = get("corpus", "Task"), get("corpus", "TaskGuideline")
    stool = Task.objects.create(slug="stool", description="blood in the stool", options=["y", "n"], retired=True)
    stool.guideline = "Cardiology team note"
    stool.save()
    Guideline.objects.create(task=stool, version=1, text="Catalog rule", author=sam)
    Guideline.objects.create(task=stool, version=2, text="Cardiology team note", author=rita)
    get("audit", "AuditEvent").objects.create(
        actor=rita, actor_name="rita", action="retire_task", object_type="corpus.Task", object_id=str(stool.pk)
    )

    migrate_to_latest()

    from webapp.corpus.models import ProjectTaskState, Task, TaskGuideline
    from webapp.corpus.tasks import current_guideline

    stool = Task.objects.get(slug="stool")
    assert (stool.retired, stool.guideline) == (False, "Catalog rule")
    assert TaskGuideline.objects.get(task=stool, version=2).project_id == cardio.pk
    assert current_guideline(stool).text == "Catalog rule"
    assert current_guideline(stool, cardio.pk).text == "Cardiology team note"
    assert ProjectTaskState.objects.get(task=stool).project_id == cardio.pk
