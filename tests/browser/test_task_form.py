"""A researcher creates a task in Chromium through the Tasks page's form, then sees a refusal."""

import pytest

from webapp.corpus.models import Task

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_researcher_creates_a_task_through_the_form(page, login, researcher):
    errors = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    login(researcher).goto("/corpora/tasks/")
    page.click("text=New task")
    page.fill("#id_description", "frequenza respiratoria")
    page.fill("#id_options", "bradipnoico\n eupnoico \ntachipnoico\n")
    page.check("#id_held_out")
    page.fill("#id_guideline", "Il numero di atti.\n<b>non grassetto</b>")
    page.click("button:has-text('Create task')")
    page.wait_for_url("**/corpora/tasks/")
    assert "Task frequenza-respiratoria created." in page.content()
    task = Task.objects.get(slug="frequenza-respiratoria")
    assert task.options == ["bradipnoico", "eupnoico", "tachipnoico"] and task.held_out and task.origin == "app"
    page.click("summary:has-text('Evidence guideline')")
    shown = page.locator("details .guideline-text")  # Markdown, sanitised: a tag outside the set is dropped
    assert shown.inner_text() == "Il numero di atti.\nnon grassetto" and shown.locator("b").count() == 0

    page.click("text=New task")
    page.fill("#id_description", "Frequenza respiratoria")
    page.fill("#id_options", "sì")
    page.click("button:has-text('Create task')")
    assert page.locator(".error").all_inner_texts() == [
        "A task already has the description 'Frequenza respiratoria'.",
        "Give at least 2 label options, one per line.",
    ]
    assert Task.objects.count() == 1
    assert not [e for e in errors if "Content Security Policy" in e], errors
