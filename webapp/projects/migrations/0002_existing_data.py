"""Today's data into one project: the corpora, import jobs and tasks made in the app so far go to a
project named "Default project" (slug `default`), and every user holding a global role (the auth
groups clinician, researcher, admin of the time before projects) becomes its member with that
role. Audit rows about these objects go with them; sign-in rows stay site-wide. Created only when
there is something to hold: a fresh database gets no project until a site admin (or the demo)
makes one. Catalog tasks stay shared (no project)."""

from django.db import migrations

ROLE_GROUPS = ("clinician", "researcher", "admin")
SITE_WIDE_TYPES = ("", "auth.user")


def forwards(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    Membership = apps.get_model("projects", "Membership")
    Corpus = apps.get_model("corpus", "Corpus")
    ImportJob = apps.get_model("corpus", "ImportJob")
    Task = apps.get_model("corpus", "Task")
    AuditEvent = apps.get_model("audit", "AuditEvent")
    User = apps.get_model("auth", "User")

    members = User.objects.filter(groups__name__in=ROLE_GROUPS).distinct()
    app_tasks = Task.objects.filter(origin="app")
    if not (Corpus.objects.exists() or ImportJob.objects.exists() or app_tasks.exists() or members.exists()):
        return
    project, _ = Project.objects.get_or_create(
        slug="default",
        defaults={"name": "Default project", "description": "Everything that existed before projects"},
    )
    Corpus.objects.filter(project__isnull=True).update(project=project)
    ImportJob.objects.filter(project__isnull=True).update(project=project)
    app_tasks.filter(project__isnull=True).update(project=project)
    AuditEvent.objects.filter(project__isnull=True).exclude(object_type__in=SITE_WIDE_TYPES).exclude(
        object_type__iexact="auth.user"
    ).update(project=project)
    for user in members:
        for role in user.groups.filter(name__in=ROLE_GROUPS).values_list("name", flat=True):
            Membership.objects.get_or_create(project=project, user=user, role=role)


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0001_initial"),
        ("corpus", "0011_project"),
        ("audit", "0006_project"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
