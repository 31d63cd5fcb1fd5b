"""A clinician marks a missed identifier on the review page in real headless Chromium: a click
puts the cursor in a word, `i` opens the chooser (type NAME by default), Enter replaces it in the
note and the patient's other notes, and the panel shows the new text and says its maps are being
recomputed; Esc cancels without a change."""

import pytest

from tests.projects import default_project
from tests.webapp.review.fabricate import add_map
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.deid.models import DeidPolicy
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob

pytestmark = pytest.mark.django_db(transaction=True)

TEXT = "Pt Rossi seen today.\nHR 130 bpm, tachycardic; Rossi reports chest pain."
LATER = "Follow-up for Rossi: stable."


@pytest.fixture
def ward(db):
    project = default_project()
    DeidPolicy.objects.create(project=project, mode=DeidPolicy.Mode.TAGS, patient_field="patient")
    corpus = Corpus.objects.create(project=project, name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT, metadata={"patient": "P1"})
    later = Note.objects.create(corpus=corpus, external_id="n2", text=LATER, metadata={"patient": "P1"})
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.6})
    add_map(later, heart, base, {"stable": 0.9})
    url = (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={heart.pk}&model={base.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}"
    )
    return {"note": note, "later": later, "url": url}


def click_word(page, word, nth=0, *, double=False):
    """Click the middle of the nth occurrence of `word` in the note's text: the caret goes there
    (`double`: a double click, which selects the word)."""
    box = page.evaluate(
        """([word, nth]) => {
            const root = document.getElementById('note-text');
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            let seen = 0;
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                let at = node.data.indexOf(word);
                while (at >= 0) {
                    if (seen === nth) {
                        const range = document.createRange();
                        range.setStart(node, at);
                        range.setEnd(node, at + word.length);
                        const r = range.getBoundingClientRect();
                        return {x: r.x + r.width / 2, y: r.y + r.height / 2};
                    }
                    seen += 1;
                    at = node.data.indexOf(word, at + 1);
                }
            }
            return null;
        }""",
        [word, nth],
    )
    assert box is not None, f"{word!r} is not in the note's text"
    (page.mouse.dblclick if double else page.mouse.click)(box["x"], box["y"])


def test_a_clinician_marks_the_word_at_the_cursor_and_sees_it_replaced(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    click_word(page, "Rossi", 1)
    page.keyboard.press("i")
    page.wait_for_selector("#missed-dialog[open]")
    assert page.locator("#missed-value").inner_text() == "Rossi"
    assert page.locator("#missed-type").input_value() == "NAME"
    page.keyboard.press("Enter")
    page.wait_for_selector("#maps-recomputing")
    text = page.locator("#note-text").inner_text()
    assert text == TEXT.replace("Rossi", "[NAME]")
    assert "being recomputed" in page.locator("#maps-recomputing").inner_text()
    assert "replaced 3 times in 2 notes" in page.locator("#panel-notice").inner_text()
    assert page.locator("#missed-dialog[open]").count() == 0
    ward["later"].refresh_from_db()
    assert ward["later"].text == "Follow-up for [NAME]: stable."
    assert RelevanceJob.objects.filter(note_filter__ids=sorted([ward["note"].pk, ward["later"].pk])).exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.MISSED_IDENTIFIER).count() == 1
    page.goto("about:blank")  # the panel polls while the maps are recomputed: no request outlives the test


def test_escape_cancels_and_nothing_changes(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    click_word(page, "Rossi")
    page.keyboard.press("i")
    page.wait_for_selector("#missed-dialog[open]")
    page.keyboard.press("ArrowDown")  # the type chooser answers the keyboard too
    page.keyboard.press("Escape")
    page.wait_for_selector("#missed-dialog:not([open])", state="attached")
    ward["note"].refresh_from_db()
    assert ward["note"].text == TEXT
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.MISSED_IDENTIFIER).exists()
    page.keyboard.press("j")  # the page's keys work again
    page.wait_for_selector("#peak-1.current")


def test_in_a_later_part_of_a_long_note_the_word_selected_is_the_word_replaced(login, clinician, ward):
    from tests.webapp.review.fabricate import long_text

    head = long_text(30_000)
    text = head + "Seen by Zanfrini, then Zanfrini again.\n" + long_text(5_000)
    note = Note.objects.create(corpus=ward["note"].corpus, external_id="long", text=text, metadata={})
    page = login(clinician)
    page.goto(f"/review/{note.corpus_id}/notes/{note.pk}/?window=1")
    page.wait_for_selector("#window-nav")
    assert page.locator("#note-panel").get_attribute("data-window-start") != "0"
    click_word(page, "Zanfrini", 1, double=True)  # a selection this time
    assert page.evaluate("window.getSelection().toString()").strip() == "Zanfrini"
    page.keyboard.press("i")
    page.wait_for_selector("#missed-dialog[open]")
    assert page.locator("#missed-value").inner_text() == "Zanfrini"
    page.locator("#missed-type").select_option("RECORD_NUMBER")
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelector('#panel-notice').textContent.includes('replaced 2 times')")
    note.refresh_from_db()
    assert note.text == head + "Seen by [RECORD_NUMBER], then [RECORD_NUMBER] again.\n" + long_text(5_000)
    assert "[RECORD_NUMBER], then" in page.locator("#note-text").inner_text()
