"""A clinician reviews a note longer than one window in real headless Chromium: j and k go on
from the last peak of a window to the first of the next (and back), loading that window; a
decision on a window's last peak moves on to the next window. (No wait_for_function: its
string is evaluated in the page, which the Content-Security-Policy forbids.)"""

import pytest

from tests.projects import default_project
from webapp.lib import windows
from webapp.review.models import PeakDecision

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def long_note(db):
    from tests.webapp.review.fabricate import add_map, every_nth_token, long_text, tokens
    from webapp.corpus.models import Corpus, Note, Task
    from webapp.pipeline.models import ModelVersion, PeakProfile

    corpus = Corpus.objects.create(project=default_project(), name="long-ward", language="en")
    text = long_text(int(2.5 * windows.WINDOW_CHARS))
    note = Note.objects.create(corpus=corpus, external_id="long", text=text)
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    offsets = tokens(text)
    add_map(note, task, model, {}, offsets=offsets, scores=every_nth_token(offsets, 400))
    url = (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={task.pk}&model={model.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}"
    )
    return {"note": note, "url": url, "windows": windows.windows(text)}


def panel_state(page) -> dict:
    data = page.locator("#note-panel")
    return {
        "first": int(data.get_attribute("data-first-peak")),
        "end": int(data.get_attribute("data-end-peak")),
        "total": int(data.get_attribute("data-peaks")),
        "window": int(page.locator("input[name=window][form=view-form]").get_attribute("value")),
    }


def test_j_and_k_move_across_windows_of_a_long_note(login, clinician, long_note):
    page = login(clinician)
    page.goto(long_note["url"])
    page.wait_for_selector("#peak-0.current")
    state = panel_state(page)
    assert len(long_note["windows"]) == 3 and state["window"] == 0 and state["end"] < state["total"]
    last = state["end"] - 1  # the last peak of the first window
    for _ in range(last):
        page.keyboard.press("j")
    page.wait_for_selector(f"#peak-{last}.current")
    page.evaluate("window.__same_page = true")
    page.keyboard.press("j")  # on to the next window
    page.wait_for_selector(f"#peak-{last + 1}.current")
    assert panel_state(page)["window"] == 1
    assert "Part 2 of 3" in page.locator("#window-nav").inner_text()
    first_window_text = long_note["note"].text[: long_note["windows"][0].end]
    assert page.locator("#note-text").inner_text() != first_window_text
    assert page.locator(f"#peak-item-{last + 1}.current").count() == 1
    assert page.evaluate("window.__same_page") is True  # htmx swapped the panel, no page load
    page.keyboard.press("k")  # back to the first window's last peak
    page.wait_for_selector(f"#peak-{last}.current")
    assert panel_state(page)["window"] == 0
    page.keyboard.press("j")
    page.wait_for_selector(f"#peak-{last + 1}.current")
    page.keyboard.press("j")  # within the window
    page.wait_for_selector(f"#peak-{last + 2}.current")
    page.reload()  # the address kept the peak asked for
    page.wait_for_selector(f"#peak-{last + 1}.current, #peak-{last + 2}.current")
    assert panel_state(page)["window"] == 1


def test_accepting_the_last_peak_of_a_window_moves_on_to_the_next_window(login, clinician, long_note):
    page = login(clinician)
    page.goto(long_note["url"])
    page.wait_for_selector("#peak-0.current")
    last = panel_state(page)["end"] - 1
    page.fill("#window-nav input[name=peak]", str(last + 1))  # "Go to peak" (1-based)
    page.press("#window-nav input[name=peak]", "Enter")
    page.wait_for_selector(f"#peak-{last}.current")
    page.keyboard.press("a")
    page.wait_for_selector(f"#peak-{last + 1}.current")
    assert panel_state(page)["window"] == 1
    row = PeakDecision.objects.get()
    assert row.decision == "accept" and long_note["windows"][0].holds(row.start)


def test_the_next_part_link_and_the_map_stays_on_the_window_when_a_slider_moves(login, clinician, long_note):
    page = login(clinician)
    page.goto(long_note["url"])
    page.click("#window-nav >> text=Next part")
    page.wait_for_selector("#window-nav >> text=Part 2 of 3")
    assert "window=1" in page.url
    page.eval_on_selector(
        "#id_upper", "(el) => { el.value = '0.95'; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    )
    page.wait_for_selector("#note-panel .what:has-text('upper 0.95')")
    assert panel_state(page)["window"] == 1 and "Part 2 of 3" in page.locator("#window-nav").inner_text()
