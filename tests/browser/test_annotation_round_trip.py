"""The everyday loop with an annotation tool, in Chromium: export a corpus's gold as XMI, import the
download back through the Import page (preview, then "Import now"): nothing is created, every
annotation is unchanged, and the gold keeps its one annotator."""

import pytest

from tests.projects import default_project
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from workers.imports import run_import

pytestmark = pytest.mark.django_db(transaction=True)

TEXTS = {"n1": "Pt 😀 reports fever. HR 120.", "n2": "No fever. HR 60."}


@pytest.fixture
def annotated():
    # de-identified, so its export may leave (the gate's own tests: tests/webapp/interchange/test_gate.py)
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en", deidentified=True)
    fever = Task.objects.create(slug="fever", description="fever", options=["present", "absent"])
    for external_id, text in TEXTS.items():
        note = Note.objects.create(corpus=corpus, external_id=external_id, text=text)
        start = text.index("fever") if external_id == "n1" else 0
        end = start + (5 if external_id == "n1" else 8)
        label = "present" if external_id == "n1" else "absent"
        Annotation.objects.create(note=note, task=fever, label=label, evidence=[[start, end]], annotator_name="ann")
    return corpus


def test_an_xmi_export_imported_back_changes_nothing(login, researcher, annotated, tmp_path, settings):
    settings.DATA_DIR = tmp_path
    page = login(researcher)
    page.goto(f"/corpora/{annotated.pk}/")
    page.click("text=Export for an annotation tool")
    with page.expect_download() as download:
        page.click("button[name=format][value=xmi]")
    exported = tmp_path / "ward-xmi.zip"
    download.value.save_as(exported)

    page.click("nav >> text=Import")
    page.select_option("#id_kind", "annotations")
    page.fill("#id_corpus", "ward")
    page.select_option("#id_format", "xmi")
    page.set_input_files("#id_file", str(exported))
    page.check("#id_preview")  # no mapping, no annotator: the file's labels and annotators stand
    page.click("button:has-text('Validate and import')")
    page.wait_for_url("**/corpora/imports/*/")
    run_import(ImportJob.objects.latest("pk").pk)  # what a worker of the default queue does
    preview = page.locator("#import-preview")
    preview.wait_for()  # the page's poll shows the preview
    assert "annotations: 0 to create, 2 unchanged, 0 to update" in preview.inner_text()
    assert "annotator(s) as written in the file, by gold spans: ann (2)" in preview.inner_text()

    preview_url = page.url
    page.click("button:has-text('Import now')")
    page.wait_for_url(lambda url: url != preview_url)
    run_import(ImportJob.objects.latest("pk").pk)
    page.locator("#import-progress", has_text="0 created, 0 updated, 2 unchanged").wait_for()
    assert sorted(Annotation.objects.values_list("note__external_id", "annotator_name")) == [
        ("n1", "ann"),
        ("n2", "ann"),
    ]
