"""In real headless Chromium: the review page says beside the heat when a task's peaks are those of
every other task of the note, and a 20,000-character note shown by line fits the map of all its
lines in one screen; choosing a line shows its words' heat, swapped in by htmx (no page load, no
inline script or style: the Content-Security-Policy would refuse them)."""

import pytest

from tests.projects import default_project

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ward(db):
    from tests.webapp.review.fabricate import TEXT, add_map, every_nth_token, long_text, tokens
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    short = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    long = Note.objects.create(corpus=corpus, external_id="long", text=long_text(20_000))
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    pacemaker = Task.objects.create(slug="presence-of-pacemaker", description="presence of pacemaker", options=["y"])
    model = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    add_map(short, heart, model, {"Pacemaker": 0.9})  # the same peak for both tasks
    add_map(short, pacemaker, model, {"Pacemaker": 1.0})
    offsets = tokens(long.text)
    add_map(long, heart, model, {}, offsets=offsets, scores=every_nth_token(offsets, 97))
    query = f"?task={heart.pk}&model={model.pk}&method=attnlrp&template=en&profile={sharp.pk}"
    return {
        "short": f"/review/{corpus.pk}/notes/{short.pk}/{query}",
        "long": f"/review/{corpus.pk}/notes/{long.pk}/{query}",
        "lines": long.text.count("\n") + 1,
    }


def test_the_same_peaks_for_every_task_are_said_beside_the_heat(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["short"])
    note = page.locator("#specificity-note")
    assert note.is_visible()
    assert "same for every task of this note" in note.inner_text() and "heart rate" in note.inner_text()
    below = page.locator("#note-text").bounding_box()
    assert note.bounding_box()["y"] < below["y"]  # above the note's heat, in the same panel


def test_a_long_note_by_line_fits_one_screen_and_a_chosen_line_shows_its_words(login, clinician, ward):
    violations = []
    page = login(clinician)
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text else None)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(ward["long"])
    page.evaluate("window.__same_page = true")
    page.click(".view-switch >> text=lines")
    page.wait_for_selector("#sentence-view[data-by=line]")
    assert page.locator("#sentence-view").get_attribute("data-count") == str(ward["lines"])
    box = page.locator("svg.sentence-map").bounding_box()
    assert box["height"] <= 900  # every line of 20,000 characters in one screen
    page.locator("svg.sentence-map a[data-sentence='10']").first.click()
    page.wait_for_selector("#sentence-10.chosen")
    assert page.locator("#sentence-10").inner_text().startswith("Day 10: HR 110 bpm")
    assert page.locator("#sentence-10 span[class^=r]").count() > 0  # word heat inside the line
    assert page.evaluate("window.__same_page") is True  # htmx swapped the panel
    assert "view=sentences" in page.url and "sentence=10" in page.url
    assert violations == []
