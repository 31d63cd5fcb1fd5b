"""What a new user of `make demo` sees once the first relevance job is done, in real Chromium.

The database is seeded by the demo's own code (webapp.home.demo.seed, as `manage.py rundemo`
calls it: task catalog, synthetic corpus, demo users with printed passwords, the first job planned
and queued), on a fresh install's rows (the migrations' default model version and peak profile).
Only the default model version's path differs: the tiny random Llama of the worker tests instead
of SmolLM2, so the job's 30 prompts take seconds. A real relevance worker process computes the
job through Redis, as the demo's worker does through its broker. Then the demo clinician logs in
with the password the seeding printed.
"""

import importlib
import re
from io import StringIO

import pytest
from django.apps import apps

from tests.workers.conftest import start_worker, tiny_model_dir, wait_for, worker_env  # noqa: F401 - fixtures
from webapp.corpus.models import Note
from webapp.home import demo
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import ModelVersion, RelevanceMap

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

NOTES = 8  # the job takes the first 6 (demo.DEMO_JOB_NOTES): 2 notes stay without maps


def fresh_install_rows():
    """The rows a fresh database gets from its migrations (a transactional test before this one
    may have flushed them)."""
    importlib.import_module("webapp.pipeline.migrations.0002_defaults").create_defaults(apps, None)


@pytest.fixture
def demo_done(start_worker, tiny_model_dir, settings, tmp_path):  # noqa: F811 - pytest fixtures
    """The demo seeded and its first job computed by a real worker; returns what the seeding printed."""
    settings.DATA_DIR = tmp_path  # the synthetic corpus files load_demo_corpus writes
    fresh_install_rows()
    ModelVersion.objects.filter(is_default=True).update(path=str(tiny_model_dir))
    out = StringIO()
    job = demo.seed(notes=NOTES, stdout=out)
    assert job is not None and job.status == JobStatus.QUEUED and job.total == 30
    worker = start_worker("relevance")

    def ended():
        job.refresh_from_db()
        return job.is_ended

    try:
        wait_for(ended, timeout=180, message="the demo's first relevance job to end")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{worker.log()}") from None
    assert job.status == JobStatus.DONE, f"{job.status}: {job.error}\n{worker.log()}"
    return out.getvalue()


def demo_password(printed: str, username: str) -> str:
    match = re.search(rf"^  {username}\s+(\S+)\s+\(", printed, re.MULTILINE)
    assert match, f"no password printed for {username}"
    return match.group(1)


def log_in(page, username, password):
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)


def test_after_the_demos_first_job_a_clinician_reviews_notes_with_highlighted_peaks(page, demo_done):
    notes = list(Note.objects.filter(corpus__name=demo.DEMO_CORPUS).order_by("pk"))
    mapped = set(RelevanceMap.objects.values_list("note_id", flat=True))
    assert len(notes) == NOTES and mapped == {n.pk for n in notes[: demo.DEMO_JOB_NOTES]}
    corpus_id = notes[0].corpus_id

    log_in(page, "clinician", demo_password(demo_done, "clinician"))
    # The clinician's home leads into the queue: every note with maps waits for review.
    assert page.locator("#review-next").inner_text().count(f"{demo.DEMO_JOB_NOTES} notes with maps wait") == 1
    page.click("#review-next a.button.primary")
    page.wait_for_url(re.compile(rf"/review/{corpus_id}/notes/\d+/\?"))
    assert page.locator("#note-text mark.peak").count() >= 1  # highlighted peaks
    assert page.locator("#note-text mark.peak").first.is_visible()
    assert page.locator("#no-map").count() == 0

    # The note list: the job's notes have their 5 maps, the others say so.
    page.goto(f"/review/{corpus_id}/")
    for note in notes:
        row = page.locator("#note-rows tr", has=page.get_by_role("link", name=note.external_id, exact=True))
        cells = row.locator("td")
        if note.pk in mapped:
            assert cells.nth(2).inner_text() == str(len(demo.DEMO_TASKS))
            assert cells.nth(5).inner_text() != "not computed yet"
        else:
            assert cells.nth(2).inner_text() == "0"
            assert cells.nth(5).inner_text().strip() == "not computed yet"

    # A note the job did not reach: shown as written, its relevance "not computed yet".
    unmapped = notes[-1]
    page.goto(f"/review/{corpus_id}/notes/{unmapped.pk}/")
    assert "Relevance not computed yet" in page.locator("#no-map").inner_text()
    assert page.locator("#note-text mark.peak").count() == 0
    assert page.locator("#peak-count").inner_text() == "peaks not computed yet"
