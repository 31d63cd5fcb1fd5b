"""Spans the model missed and accepting the rest, in real headless Chromium: a clinician adds a
span by mouse (a selection cut mid-word, saved snapped to words) and by keyboard (`m` at the cursor
word, arrows by whole words, `s` saves), edits and removes it; `Shift+A` asks how many peaks it
will accept, accepts them, and `u` takes them all back."""

import pytest

from tests.browser.test_review_missed_identifier import click_word
from tests.projects import default_project
from tests.webapp.review.fabricate import TEXT, add_map, word_span
from webapp.corpus.models import Corpus, Note, Task
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.review.models import AddedSpan, PeakDecision

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ward(db):
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    add_map(note, heart, base, {"130": 0.9, "tachycardic": 0.6, "Pacemaker": 0.45})
    url = (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={heart.pk}&model={base.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}"
    )
    return {"note": note, "heart": heart, "url": url}


def select_text(page, first, last):
    """Select from inside the word `first` (after its first character) to inside `last` (before
    its last character), as a mouse drag would: the selection cuts both words."""
    page.evaluate(
        """([first, last]) => {
            const root = document.getElementById('note-text');
            const text = root.textContent;
            const a = text.indexOf(first) + 1, b = text.indexOf(last) + last.length - 1;
            const point = (k) => {
                const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
                let seen = 0;
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    if (seen + node.data.length >= k) return [node, k - seen];
                    seen += node.data.length;
                }
            };
            const range = document.createRange();
            range.setStart(...point(a));
            range.setEnd(...point(b));
            const sel = window.getSelection();
            sel.removeAllRanges();
            sel.addRange(range);
            root.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
        }""",
        [first, last],
    )


def spans_of(note):
    return [TEXT[s.start : s.end] for s in AddedSpan.objects.filter(note=note).order_by("start")]


def test_a_span_added_by_mouse_is_snapped_edited_and_removed(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    select_text(page, "tachycardic", "febrile")
    assert page.locator("#span-preview").text_content() == "tachycardic; febrile"
    page.click("#add-span-button")
    page.wait_for_selector(".added-span.mine")
    assert spans_of(ward["note"]) == ["tachycardic; febrile"]
    row = AddedSpan.objects.get()
    assert row.reviewer == clinician and row.active_ms is not None
    assert "You added «tachycardic; febrile»" in page.locator("#panel-notice").inner_text()
    # edit: the selected words go into the span's form, saved snapped
    item = page.locator(f"#added-span-{row.pk}")
    item.locator("summary").click()
    select_text(page, "febrile", "C.")
    item.locator(".use-selection").click()
    item.locator(".save-span").click()
    page.wait_for_function("() => document.querySelector('#panel-notice').textContent.includes('now «febrile 38.5 C»')")
    assert spans_of(ward["note"]) == ["febrile 38.5 C"]
    # remove
    page.locator(f"#added-span-{row.pk} .remove-span").click()
    page.wait_for_selector("#no-added-span")
    assert spans_of(ward["note"]) == []


def test_a_span_added_by_keyboard_moves_by_whole_words(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    click_word(page, "bpm")
    page.keyboard.press("m")
    assert page.locator("#span-preview").text_content() == "bpm"
    page.keyboard.press("ArrowRight")  # the end one word right
    page.keyboard.press("ArrowRight")
    assert page.locator("#span-preview").text_content() == "bpm,  tachycardic; febrile"
    page.keyboard.press("ArrowLeft")  # and back one
    page.keyboard.press("Shift+ArrowLeft")  # the start one word left
    assert page.locator("#span-preview").text_content() == "130 bpm,  tachycardic"
    page.keyboard.press("s")
    page.wait_for_selector(".added-span.mine")
    assert spans_of(ward["note"]) == ["130 bpm,  tachycardic"]
    a, b = word_span(TEXT, "130")[0], word_span(TEXT, "tachycardic")[1]
    assert (AddedSpan.objects.get().start, AddedSpan.objects.get().end) == (a, b)
    # the page's own keys still work after the span: j selects the next peak, no decision was made
    page.keyboard.press("j")
    assert not PeakDecision.objects.exists()


def test_a_focused_slider_keeps_its_arrows_while_a_span_is_started(login, clinician, ward):
    """The older rule of review.js (arrows move a focused slider) holds with a span started."""
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    click_word(page, "bpm")
    page.keyboard.press("m")
    assert page.locator("#span-preview").text_content() == "bpm"
    before = page.locator("#id_upper").input_value()
    page.focus("#id_upper")
    page.keyboard.press("ArrowLeft")
    assert page.locator("#id_upper").input_value() != before


def test_accept_the_rest_asks_how_many_and_undo_takes_them_all_back(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    page.keyboard.press("x")  # reject the first peak: two are left
    page.wait_for_selector("#peak-item-0.mine-reject")
    page.wait_for_function("() => document.querySelector('#accept-rest-form') !== null")
    questions = []

    def answer(dialog):
        questions.append(dialog.message)
        dialog.accept() if len(questions) > 1 else dialog.dismiss()

    page.on("dialog", answer)
    # the first answer refuses: nothing happens
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.reload()  # the panel's count follows the decision
    page.wait_for_selector("#note-text mark.peak.current")
    page.keyboard.press("Shift+A")
    page.wait_for_function(
        "() => document.querySelector('#key-status') && "
        "document.querySelector('#key-status').textContent.includes('Nothing accepted')"
    )
    assert PeakDecision.objects.count() == 1
    page.keyboard.press("Shift+A")
    page.wait_for_selector("#peak-item-2.mine-accept")
    assert questions[0] == questions[1]
    assert "Accept the 2 undecided peaks of this note for heart rate?" in questions[0]
    assert sorted(PeakDecision.objects.values_list("decision", flat=True)) == ["accept", "accept", "reject"]
    assert "You accepted the 2 undecided peaks" in page.locator("#panel-notice").inner_text()
    page.keyboard.press("u")
    page.wait_for_function("() => document.querySelector('#panel-notice').textContent.includes('undecided again')")
    assert list(PeakDecision.objects.values_list("decision", flat=True)) == ["reject"]
    page.wait_for_function("() => document.querySelectorAll('#note-text mark.peak.mine-accept').length === 0")
    assert page.locator("#note-text mark.peak.undecided").count() == 2
