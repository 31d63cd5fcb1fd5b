"""Retention (webapp.erasure.retention): a project's notes past their time are erased by erasure
requests of the one machinery (run here in process), its old exports lose their files; the dry run
says what a round would do; a second round asks nothing twice; the page sets the periods (its
admins only) and shows the dry run; the command prints it; beat sends the round."""

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.datasets import export as exports
from webapp.datasets.models import DatasetExport
from webapp.erasure import erasing, retention
from webapp.erasure.models import ErasureRequest
from webapp.lifecycle import kinds
from webapp.projects.models import Project

pytestmark = pytest.mark.django_db


def _age(queryset, days):
    queryset.update(created=timezone.now() - timedelta(days=days))


@pytest.fixture
def aged(world):
    """Notes n1, n2 (ward) and o1 (other, its only note) imported 40 days ago; n3 today; the
    export made 10 days ago. The project keeps notes 30 days and exports 7."""
    _age(Note.objects.filter(external_id__in=["n1", "n2", "o1"]), 40)
    _age(DatasetExport.objects.filter(pk=world.export.pk), 10)
    Project.objects.filter(pk=world.project.pk).update(retain_notes_days=30, retain_exports_days=7)
    world.project.refresh_from_db()
    return world


def test_the_dry_run_says_what_is_due_and_changes_nothing(aged):
    due = retention.report(aged.project)
    assert due.notes == {"other": 1, "ward": 2} and due.exports == 1
    assert Note.objects.count() == 4 and not ErasureRequest.objects.exists()


def test_a_round_erases_the_notes_past_their_time_and_asks_nothing_twice(aged, settings):
    retention.apply()
    requests = {r.corpus_name: r for r in ErasureRequest.objects.all()}
    assert requests["ward"].scope == "notes" and len(requests["ward"].target["note_ids"]) == 2
    assert requests["other"].scope == "corpus"  # every note of it was due: the corpus goes whole
    assert {r.requested_by_name for r in requests.values()} == {"retention"}
    retention.apply()  # the erasures have not run yet: nothing is asked again
    assert ErasureRequest.objects.count() == 2
    for erasure in requests.values():
        assert erasing.run(erasing.claim(erasure.pk, worker="test")) == "done"
    assert set(Note.objects.values_list("external_id", flat=True)) == {"n3"}
    assert not Corpus.objects.filter(name="other").exists()
    assert AuditEvent.objects.filter(action="erasure").count() == 2  # each with its receipt
    assert retention.report(aged.project).notes == {}


def test_old_exports_lose_their_files_and_say_why(aged, settings):
    folder = settings.DATA_DIR / DatasetExport.objects.get(pk=aged.export.pk).path
    Project.objects.filter(pk=aged.project.pk).update(retain_notes_days=None)
    assert folder.is_dir()
    retention.apply()
    export = DatasetExport.objects.get(pk=aged.export.pk)
    assert export.expired is not None and not folder.exists()
    assert AuditEvent.objects.get(action="export_expired").details["dataset"] == export.dataset_id
    with pytest.raises(exports.ExportError, match="removed on .* under the project's retention"):
        exports.stream_folder(export, None)
    retention.apply()
    assert AuditEvent.objects.filter(action="export_expired").count() == 1
    assert Note.objects.count() == 4  # notes are kept: no notes' retention


def test_a_project_without_retention_keeps_everything(world):
    _age(Note.objects.all(), 4000)
    assert retention.apply() == []  # no project has a retention
    assert not ErasureRequest.objects.exists() and Note.objects.count() == 4


def test_the_page_sets_the_periods_and_shows_the_dry_run(aged, client_for, admin_user, django_user_model):
    url = reverse("erasure:retention", args=[aged.project.slug])
    page = client_for(admin_user).get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert "2 notes of corpus <strong>ward</strong>" in html and "1 export made before" in html
    answer = client_for(admin_user).post(url, {"retain_notes_days": "90", "retain_exports_days": ""})
    assert answer.status_code == 302
    aged.project.refresh_from_db()
    assert (aged.project.retain_notes_days, aged.project.retain_exports_days) == (90, None)
    assert AuditEvent.objects.filter(action="edit_project", project=aged.project).exists()
    assert client_for(admin_user).post(url, {"retain_notes_days": "0"}).status_code == 400
    outsider = django_user_model.objects.create_user("olga")
    assert client_for(outsider).get(url).status_code == 404
    researcher = django_user_model.objects.create_user("rex")
    aged.project.memberships.create(user=researcher, role="researcher")
    assert client_for(researcher).get(url).status_code == 403


def test_the_command_prints_the_dry_run(aged):
    out = StringIO()
    call_command("retention", "--dry-run", "--project", aged.project.slug, stdout=out)
    (printed,) = json.loads(out.getvalue())
    assert printed["notes_due"] == {"other": 1, "ward": 2} and printed["exports_due"] == 1
    assert not ErasureRequest.objects.exists()


def test_beat_sends_the_retention_round_to_the_default_queue(settings):
    (periodic,) = kinds.PERIODIC
    assert settings.CELERY_BEAT_SCHEDULE["retention"] == {
        "task": periodic.task,
        "schedule": settings.RETENTION_INTERVAL_SECONDS,
    }
    assert settings.CELERY_TASK_ROUTES[periodic.task] == {"queue": "default"}
    assert kinds.beat_schedule({"RETENTION_INTERVAL_SECONDS": 0}) == {}
