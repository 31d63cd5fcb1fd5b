"""Guideline versions: a new version each time a task's guideline text changes, none otherwise."""

import pytest
from django.urls import reverse

from tests.projects import default_project
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Task, TaskGuideline
from webapp.corpus.tasks import create_task, current_guideline, edit_task

pytestmark = pytest.mark.django_db


def versions(task):
    return list(TaskGuideline.objects.filter(task=task).order_by("version").values_list("version", "text"))


def test_a_task_created_with_a_guideline_has_version_one(researcher):
    task = create_task(
        project=default_project(),
        slug="hr",
        description="heart rate",
        options=["y", "n"],
        guideline="Count **beats**.",
        actor=researcher,
    )
    assert versions(task) == [(1, "Count **beats**.")]
    assert current_guideline(task).author == researcher


def test_a_task_without_a_guideline_has_no_version():
    task = create_task(project=default_project(), slug="hr", description="heart rate", options=["y", "n"])
    assert versions(task) == [] and current_guideline(task) is None


def test_the_version_increments_only_when_the_text_changes(researcher):
    task = create_task(
        project=default_project(), slug="hr", description="heart rate", options=["y", "n"], guideline="v1"
    )
    edit_task(task, {"guideline": "v1"}, actor=researcher)  # same text: nothing
    edit_task(task, {"description": "heart rate (bpm)"}, actor=researcher)  # another field: nothing
    assert versions(task) == [(1, "v1")]
    edit_task(task, {"guideline": "v2"}, actor=researcher)
    assert versions(task) == [(1, "v1"), (2, "v2")]
    assert (
        AuditEvent.objects.filter(action=AuditEvent.Action.EDIT_TASK).order_by("pk").last().details["guideline_version"]
        == 2
    )
    edit_task(task, {"guideline": ""}, actor=researcher)  # cleared: a version, shown as none
    assert versions(task)[-1] == (3, "")
    assert current_guideline(task) is None
    edit_task(task, {"guideline": "v4"}, actor=researcher)
    assert current_guideline(task).version == 4


def test_the_task_form_records_a_version_when_the_guideline_is_edited(client, researcher):
    client.force_login(researcher)
    task = create_task(
        project=default_project(), slug="hr", description="heart rate", options=["y", "n"], guideline="old"
    )
    data = {"description": task.description, "options": "y\nn", "group": "", "guideline": "new"}
    client.post(reverse("corpus:task_edit", args=[task.pk]), data)
    client.post(reverse("corpus:task_edit", args=[task.pk]), data)  # saved again unchanged
    assert versions(Task.objects.get(pk=task.pk)) == [(1, "old"), (2, "new")]
