"""The task pages: researchers create, edit and retire tasks; clinicians only read them."""

import pytest
from django.urls import reverse

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Note, Task
from webapp.pipeline.forms import LaunchForm

pytestmark = pytest.mark.django_db

NEW = {
    "description": "frequenza cardiaca",
    "slug": "",
    "options": "bradicardico\nnormocardico\ntachicardico",
    "group": "parametri vitali",
    "held_out": "on",
    "guideline": "Look for the number.\nIgnore the history.",
}


def post_new(client, **changes):
    return client.post(reverse("corpus:task_new"), {**NEW, **changes})


def errors(response, field):
    return response.context["form"].errors.get(field, [])


def edit(client, task, **values):
    data = {
        "description": task.description,
        "options": "\n".join(task.options),
        "group": task.group,
        "guideline": task.guideline,
        **({"held_out": "on"} if task.held_out else {}),
        **values,
    }
    return client.post(reverse("corpus:task_edit", args=[task.pk]), data)


@pytest.fixture
def app_task(db):
    """A task of the test project (a task made in the app belongs to a project)."""
    return Task.objects.create(
        project=default_project(),
        slug="fever",
        description="fever",
        options=["yes", "no"],
        origin=Task.Origin.APP,
        guideline="old",
    )


@pytest.fixture
def labelled(app_task, corpus):
    """Three annotations use 'yes', one uses 'no'."""
    for i in range(4):
        note = Note.objects.create(corpus=corpus, external_id=f"n{i}", text=f"note {i}")
        Annotation.objects.create(note=note, task=app_task, label="yes" if i < 3 else "no", annotator_name="gold")
    return app_task


def test_a_researcher_creates_a_task_through_the_form(client_for, researcher):
    response = post_new(client_for(researcher))
    assert response.status_code == 302 and response["Location"] == reverse("corpus:tasks")
    task = Task.objects.get(slug="frequenza-cardiaca")
    assert task.options == ["bradicardico", "normocardico", "tachicardico"]
    assert (task.origin, task.held_out, task.group, task.retired) == ("app", True, "parametri vitali", False)
    assert task.guideline == "Look for the number.\nIgnore the history."
    event = AuditEvent.objects.get(action=AuditEvent.Action.CREATE_TASK)
    assert event.actor == researcher and event.object_id == str(task.pk)
    assert event.details["slug"] == "frequenza-cardiaca"


@pytest.mark.parametrize("role", ["clinician", "norole"])
def test_only_task_managers_may_create_edit_or_retire(client, clinician, norole_user, app_task, role):
    client.force_login({"clinician": clinician, "norole": norole_user}[role])
    assert client.get(reverse("corpus:task_new")).status_code == 403
    assert post_new(client).status_code == 403
    # A user of no project does not learn that the project's task exists.
    hidden = 403 if role == "clinician" else 404
    assert edit(client, app_task, description="changed").status_code == hidden
    assert client.post(reverse("corpus:task_retire", args=[app_task.pk]), {"retired": "1"}).status_code == hidden
    app_task.refresh_from_db()
    assert (app_task.description, app_task.retired) == ("fever", False)
    assert not Task.objects.filter(slug="frequenza-cardiaca").exists()


def test_the_tasks_page_offers_managing_to_researchers_only(client_for, researcher, clinician, app_task):
    assert reverse("corpus:task_new") in client_for(researcher).get(reverse("corpus:tasks")).content.decode()
    assert reverse("corpus:task_new") not in client_for(clinician).get(reverse("corpus:tasks")).content.decode()


def test_options_are_trimmed_normalised_and_blank_lines_dropped(client_for, researcher):
    post_new(client_for(researcher), options="  cafe\u0301 \n\n  tea  \n")
    assert Task.objects.get(slug="frequenza-cardiaca").options == ["caf\u00e9", "tea"]


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"description": "   "}, "description", "This field is required."),
        ({"options": "only one"}, "options", "at least 2 label options"),
        ({"options": "yes\nno\nYes"}, "options", "'Yes' is listed twice"),
        ({"options": "cafe\u0301\ncaf\u00e9"}, "options", "is listed twice"),
        ({"options": "yes\nn\u202eo"}, "options", "U+202E"),
        ({"description": "heart\u200b rate"}, "description", "U+200B"),
        ({"slug": "Heart Rate"}, "slug", "lower-case letters"),
        ({"description": "HEART RATE"}, "description", "already has the description"),
        ({"description": "pulse", "slug": "heart-rate"}, "slug", "already has the slug 'heart-rate'"),
    ],
)
def test_it_refuses_bad_input_with_a_clear_message(client_for, researcher, tasks, changes, field, message):
    response = post_new(client_for(researcher), **changes)
    assert response.status_code == 200
    assert any(message in error for error in errors(response, field)), errors(response, field)
    assert Task.objects.count() == 2 and not AuditEvent.objects.filter(action="create_task").exists()


def test_a_derived_slug_taken_by_another_task_is_refused(client_for, researcher, tasks):
    response = post_new(client_for(researcher), description="Heart-rate!")
    assert any("already has the slug 'heart-rate'" in e for e in errors(response, "slug"))


def test_an_option_stored_annotations_use_cannot_be_removed_and_says_how_many(client_for, researcher, labelled):
    response = edit(client_for(researcher), labelled, options="no\nmaybe")
    assert response.status_code == 200
    assert any("'yes' is used by 3 stored annotations" in e for e in errors(response, "options"))
    labelled.refresh_from_db()
    assert labelled.options == ["yes", "no"]
    assert not AuditEvent.objects.filter(action="edit_task").exists()


def test_renaming_a_used_option_is_refused_too(client_for, researcher, labelled):
    response = edit(client_for(researcher), labelled, options="Yes\nno")
    assert any("'yes' is used by 3 stored annotations" in e for e in errors(response, "options"))


def test_options_can_be_added_and_the_description_edited_with_the_old_one_audited(client_for, researcher, labelled):
    response = edit(client_for(researcher), labelled, description="febbre", options="yes\nno\nunknown", guideline="new")
    assert response.status_code == 302
    labelled.refresh_from_db()
    assert (labelled.description, labelled.options, labelled.guideline) == ("febbre", ["yes", "no", "unknown"], "new")
    assert labelled.slug == "fever"  # the slug never changes
    event = AuditEvent.objects.get(action=AuditEvent.Action.EDIT_TASK)
    assert event.details["description"] == {"old": "fever", "new": "febbre"}
    assert event.details["options_added"] == ["unknown"]
    assert set(event.details["changed"]) == {"description", "options", "guideline"}


def test_an_unused_option_can_be_removed(client_for, researcher, app_task):
    edit(client_for(researcher), app_task, options="yes\nunknown")
    app_task.refresh_from_db()
    assert app_task.options == ["yes", "unknown"]


def test_a_catalog_tasks_definition_stays_the_catalogs_but_its_guideline_changes(client_for, site_admin, tasks):
    heart = tasks["heart"]
    response = edit(client_for(site_admin), heart, description="pulse rate", options="a\nb", guideline="Count beats.")
    assert response.status_code == 302
    heart.refresh_from_db()
    assert (heart.description, heart.options[0], heart.guideline) == ("heart rate", "bradycardic", "Count beats.")


def test_the_guideline_is_shown_as_sanitised_markdown_with_its_line_breaks(client_for, clinician, app_task):
    app_task.guideline = "<script>alert(1)</script>\nfirst **line**\nsecond line"
    app_task.save()
    html = client_for(clinician).get(reverse("corpus:tasks")).content.decode()
    assert "first <strong>line</strong><br>\nsecond line" in html
    assert "<script>alert" not in html and "alert(1)" not in html


def test_a_retired_task_leaves_new_work_keeps_its_data_and_can_come_back(client_for, researcher, labelled):
    client = client_for(researcher)
    response = client.post(reverse("corpus:task_retire", args=[labelled.pk]), {"retired": "1"})
    assert response.status_code == 302
    labelled.refresh_from_db()
    assert labelled.retired and labelled.annotations.count() == 4
    assert labelled not in LaunchForm(user=researcher).fields["tasks"].queryset
    assert "retired" in client.get(reverse("corpus:tasks")).content.decode()
    client.post(reverse("corpus:task_retire", args=[labelled.pk]), {"retired": "0"})
    labelled.refresh_from_db()
    assert not labelled.retired and labelled in LaunchForm(user=researcher).fields["tasks"].queryset
    tasks_events = AuditEvent.objects.filter(object_type="corpus.Task").order_by("id")
    assert [e.action for e in tasks_events] == ["retire_task", "restore_task"]


def test_retiring_a_retired_task_records_nothing_more(client_for, researcher, app_task):
    client = client_for(researcher)
    client.post(reverse("corpus:task_retire", args=[app_task.pk]), {"retired": "1"})
    client.post(reverse("corpus:task_retire", args=[app_task.pk]), {"retired": "1"})
    assert AuditEvent.objects.filter(action="retire_task").count() == 1
