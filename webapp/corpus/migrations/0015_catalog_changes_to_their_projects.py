"""What a project's member did to a catalog task before it could only be done for their project
(issue 37) becomes their project's: a guideline version of a catalog task written by a user who is
no site admin and a member of exactly one project is that project's (its reviewers alone read it);
a catalog task whose last retirement was by such a user is retired in that project only. A change
by a site admin, by someone of several projects or of none stays the catalog's. The catalog task's
own text (Task.guideline) is then its latest catalog version's."""

from django.db import migrations


def _only_project(Membership, user_id, superusers):
    if user_id is None or user_id in superusers:
        return None
    projects = set(Membership.objects.filter(user_id=user_id).values_list("project_id", flat=True))
    return projects.pop() if len(projects) == 1 else None


def to_projects(apps, schema_editor):
    Task = apps.get_model("corpus", "Task")
    TaskGuideline = apps.get_model("corpus", "TaskGuideline")
    ProjectTaskState = apps.get_model("corpus", "ProjectTaskState")
    Membership = apps.get_model("projects", "Membership")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    superusers = set(apps.get_model("auth", "User").objects.filter(is_superuser=True).values_list("pk", flat=True))
    for task in Task.objects.filter(project__isnull=True).order_by("pk"):
        moved = False
        for version in TaskGuideline.objects.filter(task=task, project__isnull=True).order_by("version"):
            project_id = _only_project(Membership, version.author_id, superusers)
            if project_id is not None:
                TaskGuideline.objects.filter(pk=version.pk).update(project_id=project_id)
                moved = True
        if moved:
            latest = TaskGuideline.objects.filter(task=task, project__isnull=True).order_by("-version").first()
            Task.objects.filter(pk=task.pk).update(guideline=latest.text if latest else "")
        if task.retired:
            last = (
                AuditEvent.objects.filter(
                    action__in=("retire_task", "restore_task"), object_type="corpus.Task", object_id=str(task.pk)
                )
                .order_by("-pk")
                .first()
            )
            project_id = _only_project(Membership, last.actor_id, superusers) if last else None
            if project_id is not None:
                ProjectTaskState.objects.update_or_create(project_id=project_id, task=task, defaults={"retired": True})
                Task.objects.filter(pk=task.pk).update(retired=False)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0014_catalog_tasks_per_project"),
        ("audit", "0001_initial"),
    ]

    operations = [migrations.RunPython(to_projects, migrations.RunPython.noop)]
