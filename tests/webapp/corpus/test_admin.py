"""The corpus admin: list pages show ids and lengths, never note text; the note page shows it."""

import pytest

from webapp.corpus.models import Annotation, Note

pytestmark = pytest.mark.urls("tests.webapp.corpus.admin_urls")

SECRET = "Anna Verdi, portatrice di pacemaker."


@pytest.fixture
def admin_client(client, django_user_model, settings):
    """A superuser (the shared `admin_user` fixture is a role user without model permissions)."""
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    client.force_login(django_user_model.objects.create_superuser("root", "root@example.org", "x" * 12))
    return client


@pytest.fixture
def note(corpus, tasks):
    note = Note.objects.create(corpus=corpus, external_id="n-42", text=SECRET, metadata={"ward": "A"})
    Annotation.objects.create(note=note, task=tasks["pacemaker"], label="y", evidence=[[0, 4]], annotator_name="a")
    return note


def test_note_list_shows_id_and_length_but_not_text(admin_client, note):
    response = admin_client.get("/admin/corpus/note/", secure=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "n-42" in page and f">{len(SECRET)}<" in page
    assert "Anna" not in page


def test_note_search_is_by_exact_external_id(admin_client, note):
    assert "n-42" in admin_client.get("/admin/corpus/note/?q=n-42", secure=True).content.decode()
    assert "n-42" not in admin_client.get("/admin/corpus/note/?q=n-4", secure=True).content.decode()


def test_note_page_shows_the_text_and_a_read_only_hash(admin_client, note):
    page = admin_client.get(f"/admin/corpus/note/{note.pk}/change/", secure=True).content.decode()
    assert SECRET in page
    assert note.content_hash in page
    assert 'name="content_hash"' not in page


@pytest.mark.parametrize("model", ["corpus", "task", "annotation"])
def test_other_lists_render_without_note_text(admin_client, note, model):
    response = admin_client.get(f"/admin/corpus/{model}/", secure=True)
    assert response.status_code == 200
    assert "Anna" not in response.content.decode()


def test_a_note_changed_in_the_admin_is_logged_by_its_row_id_not_its_external_id(admin_client, note):
    """Django's admin keeps every change in its log table (django_admin_log) under the object's
    name: a note's name is its row id and corpus, since a site's external ids may be record
    numbers, and no identifier goes into a log (webapp/logs.py)."""
    from django.contrib.admin.models import LogEntry

    form = {"corpus": note.corpus_id, "external_id": "n-42", "text": SECRET + " Rivista.", "metadata": '{"ward": "A"}'}
    response = admin_client.post(f"/admin/corpus/note/{note.pk}/change/", form, secure=True)

    assert response.status_code == 302, response.content.decode()[:2000]
    [entry] = LogEntry.objects.filter(object_id=str(note.pk))
    assert entry.object_repr == f"note {note.pk} of corpus {note.corpus_id}"
    assert "n-42" not in entry.object_repr + entry.change_message and "Anna" not in entry.change_message
    annotation = note.annotations.get()
    assert "n-42" not in str(annotation) and str(note.pk) in str(annotation)


def test_the_names_already_in_the_admin_log_lose_their_external_ids(note, admin_user):
    """Migration 0020 rewrites the names the admin logged before notes were named by row id."""
    from importlib import import_module

    from django.apps import apps
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.contenttypes.models import ContentType

    annotation = note.annotations.get()
    for obj in (note, annotation):
        LogEntry.objects.create(
            content_type=ContentType.objects.get_for_model(obj),
            object_id=str(obj.pk),
            object_repr=f"{note.corpus_id}/n-42 pacemaker=y",  # the names of before
            action_flag=CHANGE,
            user=admin_user,
        )
    other = LogEntry.objects.create(
        content_type=ContentType.objects.get_for_model(note.corpus),
        object_id="1",
        object_repr="ed",
        action_flag=CHANGE,
        user=admin_user,
    )

    import_module("webapp.corpus.migrations.0020_admin_log_without_external_ids").names_without_external_ids(apps, None)

    names = LogEntry.objects.exclude(pk=other.pk).values_list("object_repr", flat=True)
    assert sorted(names) == sorted([f"note {note.pk}", f"annotation {annotation.pk}"])
    other.refresh_from_db()
    assert other.object_repr == "ed"
