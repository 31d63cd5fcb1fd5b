"""Projects migration 0002 with rows in place: today's corpora, imports, app tasks and the audit
rows about them move into one project, and every user with a global role becomes its member
with that role; sign-in rows and catalog tasks stay site-wide; nothing is lost."""

import pytest

from tests.webapp.migrating import migrate, migrate_to_latest
from webapp.corpus.models import text_hash

# migrating the schema back and forth takes tens of seconds (61-64 s): slow, like the other migration tests
pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BEFORE_PROJECTS = [("projects", None)]


def test_existing_rows_move_into_one_project_and_users_keep_their_roles():
    old = migrate(BEFORE_PROJECTS)
    try:
        Group, User = old.get_model("auth", "Group"), old.get_model("auth", "User")
        Corpus, Note, Task = (old.get_model("corpus", n) for n in ("Corpus", "Note", "Task"))
        ImportJob, AuditEvent = old.get_model("corpus", "ImportJob"), old.get_model("audit", "AuditEvent")
        groups = {name: Group.objects.get_or_create(name=name)[0] for name in ("clinician", "researcher", "admin")}
        clara, rita, ada, nobody = (User.objects.create(username=n) for n in ("clara", "rita", "ada", "nobody"))
        clara.groups.add(groups["clinician"])
        rita.groups.add(groups["researcher"], groups["clinician"])
        ada.groups.add(groups["admin"])
        wards = [Corpus.objects.create(name=f"ward-{i}", language="en") for i in range(2)]
        Note.objects.create(corpus=wards[0], external_id="n1", text="HR 90.", content_hash=text_hash("HR 90."))
        catalog = Task.objects.create(slug="hr", description="heart rate", options=["y", "n"], origin="catalog")
        made = Task.objects.create(slug="fever", description="fever", options=["y", "n"], origin="app")
        job = ImportJob.objects.create(kind="notes", corpus_name="ward-0", file_name="n.jsonl")
        about_corpus = AuditEvent.objects.create(
            actor_name="rita", action="import_notes", object_type="corpus.Corpus", object_id=str(wards[0].pk)
        )
        sign_in = AuditEvent.objects.create(
            actor_name="clara", action="login", object_type="auth.User", object_id=str(clara.pk)
        )
        anonymous = AuditEvent.objects.create(actor_name="(unknown username)", action="login_failed")
    finally:
        migrate_to_latest()

    from django.contrib.auth.models import User

    from webapp.audit.models import AuditEvent
    from webapp.corpus.models import Corpus, ImportJob, Note, Task
    from webapp.projects.models import Membership, Project

    project = Project.objects.get(slug="default")
    assert Project.objects.exclude(slug="test-project").count() == 1
    assert set(Corpus.objects.values_list("name", "project_id")) == {("ward-0", project.pk), ("ward-1", project.pk)}
    assert Note.objects.get(external_id="n1").corpus.name == "ward-0"
    assert ImportJob.objects.get(pk=job.pk).project_id == project.pk
    assert Task.objects.get(pk=made.pk).project_id == project.pk
    assert Task.objects.get(pk=catalog.pk).project_id is None  # the catalog stays shared
    memberships = set(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert memberships == {("clara", "clinician"), ("rita", "researcher"), ("rita", "clinician"), ("ada", "admin")}
    assert User.objects.filter(username="nobody").exists()
    assert AuditEvent.objects.get(pk=about_corpus.pk).project_id == project.pk
    assert AuditEvent.objects.get(pk=sign_in.pk).project_id is None
    assert AuditEvent.objects.get(pk=anonymous.pk).project_id is None


def test_an_empty_database_gets_no_project():
    migrate(BEFORE_PROJECTS)
    migrate_to_latest()
    from webapp.projects.models import Project

    assert not Project.objects.exclude(slug="test-project").exists()
