"""A researcher uploads maps computed elsewhere in Chromium: from the corpus page to the form, a
refused file's page lists each bad line and its reason (never the note's text), the fixed file's
page shows its progress, then the maps it imported."""

import json

import pytest
from django.utils import timezone

from tests.projects import default_project
from tests.webapp.pipeline.factories import make_corpus, make_tasks
from webapp.pipeline.models import MapImportJob, ModelVersion, RelevanceMap
from workers.mapimports import run_map_import

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama-browser-maps")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_a_researcher_uploads_maps_sees_the_refused_lines_then_the_progress_and_the_maps(
    login, researcher, tiny_model_dir, tmp_path, settings
):
    settings.DATA_DIR = tmp_path
    assert default_project()
    corpus = make_corpus(4, name="ward-maps")
    tasks = make_tasks(2)
    ModelVersion.objects.create(name="tiny", family="llama", path=str(tiny_model_dir))
    notes = list(corpus.notes.order_by("external_id"))
    good = [
        {"note": note.external_id, "task": task.slug, "spans": [[0, 7, 0.5], [8, 10, -1.0]]}
        for note in notes
        for task in tasks
    ]
    bad = [good[0], {**good[1], "note": "n999"}, {**good[2], "spans": [[0, 7, float("nan")]]}]
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(line) + "\n" for line in bad))
    (tmp_path / "maps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in good))

    page = login(researcher)
    page.goto(f"/corpora/{corpus.pk}/")
    page.click("#import-maps-link")
    page.wait_for_url("**/jobs/maps/import/?corpus=*")
    assert page.locator("#id_corpus").input_value() == str(corpus.pk)
    page.select_option("#id_model_version", label="tiny")
    page.set_input_files("#id_file", str(tmp_path / "bad.jsonl"))
    page.fill("#id_source", "captum IG")
    page.click("button:has-text('Check and import')")
    page.wait_for_url("**/jobs/maps/imports/*/")  # answers at once: the import is queued
    assert "queued" in page.locator("#map-import-progress").inner_text().lower()
    run_map_import(MapImportJob.objects.get(file_name="bad.jsonl").pk)  # what a worker of the default queue does
    problems = page.locator("#map-import-problems")
    problems.wait_for()  # the page's poll shows the refusal
    rows = problems.locator("tbody tr")
    assert rows.count() == 2
    assert rows.nth(0).locator("td").nth(0).inner_text() == "2"
    assert rows.nth(0).locator("td").nth(1).inner_text().startswith("unknown note")
    assert rows.nth(1).locator("td").nth(0).inner_text() == "3"
    assert "not finite" in rows.nth(1).locator("td").nth(1).inner_text()
    assert "Nothing was imported: 2 problems" in page.locator("#map-import-progress").inner_text()
    assert notes[0].text[:30] not in page.content()
    assert not RelevanceMap.objects.exists()

    page.click("text=Fix the file and upload it again")
    page.wait_for_url("**/jobs/maps/import/?corpus=*")
    assert page.locator("#id_model_version option:checked").inner_text() == "tiny"  # kept from the refused one
    page.set_input_files("#id_file", str(tmp_path / "maps.jsonl"))
    page.click("button:has-text('Check and import')")
    page.wait_for_url("**/jobs/maps/imports/*/")
    job = MapImportJob.objects.get(file_name="maps.jsonl")
    # the figures a worker's heartbeat writes while it checks the file (webapp.lifecycle.heartbeat)
    MapImportJob.objects.filter(pk=job.pk).update(
        status="running", phase="validating", lines_done=5, heartbeat=timezone.now(), started=timezone.now()
    )
    page.locator("#map-import-phase", has_text="checking every line").wait_for()
    assert page.locator("#map-import-lines").inner_text() == "5"
    MapImportJob.objects.filter(pk=job.pk).update(status="queued", phase="", lines_done=0)  # back to its worker
    run_map_import(job.pk)
    listed = page.locator("#map-import-map-list tbody tr")
    listed.first.wait_for()
    assert listed.count() == 8
    assert page.locator("#map-import-maps").inner_text() == "8"
    assert "Imported 8 maps of ward-maps into the maps of tiny" in page.locator("#map-import-progress").inner_text()
    assert RelevanceMap.objects.count() == 8
    page.click("text=All map imports")
    assert page.locator("table tbody tr").count() == 2
