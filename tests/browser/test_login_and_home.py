"""A person logs in with the real form in Chromium and lands on the home page."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Corpus, ImportJob, Note
from workers.imports import run_import

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_anonymous_visitor_is_sent_to_the_login_page(page):
    page.goto("/corpora/")
    assert "/login/" in page.url
    assert page.locator("h1").inner_text() == "Log in"


def test_a_clinician_logs_in_and_sees_the_corpora_but_no_import(login, clinician):
    corpus = Corpus.objects.create(project=default_project(), name="ed-demo", language="it")
    Note.objects.create(corpus=corpus, external_id="n1", text="FC 130 bpm")
    page = login(clinician)
    assert page.locator("h1").inner_text() == "Welcome, clara"
    assert page.locator("a", has_text="ed-demo").count() == 1
    assert page.locator("nav a", has_text="Import").count() == 0
    page.click("text=ed-demo")
    page.click("text=n1")
    assert page.locator("#note-text").inner_text() == "FC 130 bpm"
    response = page.goto("/corpora/import/")
    assert response.status == 403


def test_a_wrong_password_is_refused_with_a_clear_message(page, clinician):
    page.goto("/login/")
    page.fill("#id_username", clinician.username)
    page.fill("#id_password", "wrong-password")
    page.click("button[type=submit]")
    assert "didn't match" in page.locator("[role=alert]").inner_text()


def test_a_researcher_imports_a_file_from_the_browser(login, researcher, tmp_path, settings):
    settings.DATA_DIR = tmp_path
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"id": "a", "text": "SatO2 88%"}\n{"id": "b", "text": "GCS 15"}\n')
    page = login(researcher)
    page.click("nav >> text=Import")
    page.select_option("#id_kind", "notes")
    page.fill("#id_corpus", "uploaded")
    page.select_option("#id_language", "it")
    page.set_input_files("#id_file", str(notes))
    page.click("button:has-text('Validate and import')")
    page.wait_for_url("**/corpora/imports/*/")  # the request answers at once: the import is queued
    assert "queued" in page.locator(".messages").inner_text()
    run_import(ImportJob.objects.get(corpus_name="uploaded").pk)  # what a worker of the default queue does
    page.locator("#import-progress", has_text="2 created").wait_for()  # the page's poll shows the result
    assert Note.objects.filter(corpus__name="uploaded").count() == 2
