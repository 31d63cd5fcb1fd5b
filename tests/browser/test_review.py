"""A clinician reviews peaks in real headless Chromium: sliders, keyboard decisions, validation,
comparison; and cannot reach researcher-only pages."""

import pytest

from tests.projects import default_project
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.review.models import PeakDecision, ValidationSet

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ward(db):
    from tests.webapp.review.fabricate import TEXT, add_map, word_span
    from webapp.corpus.models import Annotation, Corpus, Note, Task

    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    other = Note.objects.create(corpus=corpus, external_id="n2", text=TEXT)
    heart = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    pacemaker = Task.objects.create(
        slug="presence-of-pacemaker", description="presence of pacemaker", options=["y", "n"]
    )
    base = ModelVersion.objects.create(name="base-model", family="llama", path="base-model")
    dsm = ModelVersion.objects.create(name="dsm-model", family="llama", path="dsm-model", parent=base)
    sharp = PeakProfile.objects.create(name="sharp", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    for n in (note, other):
        add_map(n, heart, base, {"130": 0.9, "tachycardic": 0.6, "Pacemaker": 0.45})
        add_map(n, heart, dsm, {"130": 1.0, "tachycardic": 0.9})
        add_map(n, pacemaker, base, {"Pacemaker": 1.0})
    Annotation.objects.create(
        note=note, task=heart, label="y", annotator_name="gold", evidence=[list(word_span(TEXT, "130"))]
    )
    url = (
        f"/review/{corpus.pk}/notes/{note.pk}/?task={heart.pk}&model={base.pk}&method=attnlrp&template=en"
        f"&profile={sharp.pk}"
    )
    return {
        "corpus": corpus,
        "note": note,
        "other": other,
        "heart": heart,
        "pacemaker": pacemaker,
        "base": base,
        "dsm": dsm,
        "sharp": sharp,
        "url": url,
    }


def peak_count(page) -> int:
    return page.locator("#note-text mark.peak").count()


def set_slider(page, selector, value):
    page.eval_on_selector(
        selector, "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", str(value)
    )


def test_moving_a_threshold_slider_rehighlights_the_peaks(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    assert peak_count(page) == 3
    assert page.locator("#note-text").inner_text() == ward["note"].text
    page.evaluate("window.__same_page = true")
    set_slider(page, "#id_upper", "0.85")
    page.wait_for_function("() => document.querySelectorAll('#note-text mark.peak').length === 1")
    assert page.locator("#note-text mark.peak").inner_text().endswith("130")
    assert page.locator("#id_upper + output, output[data-for=id_upper]").first.inner_text() == "0.85"
    assert "upper=0.85" in page.url and page.evaluate("window.__same_page") is True
    page.wait_for_function("() => document.querySelector('#preview-share') !== null")
    set_slider(page, "#id_upper", "0.4")
    page.wait_for_function("() => document.querySelectorAll('#note-text mark.peak').length === 3")


def test_switching_the_task_swaps_only_the_panel_and_pushes_the_url(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.evaluate("window.__same_page = true")
    page.select_option("#id_task", str(ward["pacemaker"].pk))
    page.wait_for_function(
        "() => document.querySelector('#note-panel .what strong').textContent === 'presence of pacemaker'"
    )
    assert peak_count(page) == 1
    assert f"task={ward['pacemaker'].pk}" in page.url and page.evaluate("window.__same_page") is True
    page.go_back()
    page.wait_for_function("() => document.querySelector('#note-panel .what strong').textContent === 'heart rate'")


def test_a_clinician_accepts_and_rejects_with_the_keyboard_and_it_persists(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    page.evaluate("document.getElementById('note-panel').dataset.kept = 'yes'")  # gone if the panel is swapped
    page.keyboard.press("a")  # accept peak 1, move on to peak 2
    page.wait_for_selector("#peak-0.mine-accept")
    page.wait_for_selector("#peak-1.current")
    page.keyboard.press("x")  # reject peak 2
    page.wait_for_selector("#peak-1.mine-reject")
    # a decision swapped in its row only; the notice and the counter came with it
    assert page.locator("#note-panel").get_attribute("data-kept") == "yes"
    assert page.locator("#decided-count").text_content() == "2 decided by you"
    assert page.locator("#panel-notice").text_content().startswith("You rejected the peak")
    assert page.locator("#peak-item-1.mine-reject").count() == 1
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.wait_for_selector("#peak-0.current")
    # keys do nothing while typing in a text field
    page.locator("#peak-item-2 summary").click()
    page.locator("#peak-item-2 textarea").type("ax")
    page.keyboard.press("Escape")
    page.reload()
    page.wait_for_selector("#peak-0.mine-accept")
    assert page.locator("#peak-1").get_attribute("class").startswith("peak mine-reject")
    assert "undecided" in page.locator("#peak-2").get_attribute("class")
    rows = dict(PeakDecision.objects.values_list("start", "decision"))
    assert sorted(rows.values()) == ["accept", "reject"]
    page.keyboard.press("u")  # undo the last decision (the reject)
    page.wait_for_function("() => !document.querySelector('#peak-1').classList.contains('mine-reject')")
    assert PeakDecision.objects.get().decision == "accept"


def test_shift_arrows_move_a_peak_boundary_and_enter_saves_it(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#peak-0.current")
    page.keyboard.press("Alt+Shift+ArrowLeft")  # start one word left: "HR 130"
    page.keyboard.press("Shift+ArrowRight")  # end one word right: "HR 130 bpm"
    page.keyboard.press("Enter")
    page.wait_for_selector("#peak-0.mine-adjust")
    row = PeakDecision.objects.get()
    assert ward["note"].text[row.adjusted_start : row.adjusted_end] == "HR 130 bpm"


def test_the_help_overlay_opens_with_question_mark_and_closes_with_escape(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("a")  # no decision while the help is open
    page.keyboard.press("Escape")
    assert not page.locator("#help").is_visible()
    assert not PeakDecision.objects.exists()


def test_n_and_p_go_to_the_next_and_previous_note(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.keyboard.press("n")
    page.wait_for_url(f"**/notes/{ward['other'].pk}/**")
    page.wait_for_selector("#note-text mark.peak")
    page.keyboard.press("p")
    page.wait_for_url(f"**/notes/{ward['note'].pk}/**")


def test_a_clinician_completes_a_validation_round_and_gets_a_recommendation(login, clinician, ward):
    grid = [
        {"kernel_size": 1, "sigma": 1.0, "lower": 0.2, "upper": 0.4},
        {"kernel_size": 1, "sigma": 1.0, "lower": 0.5, "upper": 0.95},
    ]
    vset = ValidationSet.objects.create(
        corpus=ward["corpus"],
        model_version=ward["base"],
        method="attnlrp",
        template="en",
        name="round",
        grid=grid,
        items=[[ward["note"].pk, ward["heart"].pk], [ward["other"].pk, ward["heart"].pk]],
    )
    page = login(clinician)
    page.goto(f"/review/validation/{vset.pk}/")
    for answer in ["y", "n", "y", "n"]:
        page.wait_for_selector("#validation-round")
        page.wait_for_load_state("load")  # review.js (deferred) is listening for the keys
        # each answer posts its form: wait for the next page, so no key lands on the one leaving
        with page.expect_navigation():
            page.keyboard.press(answer)
    page.wait_for_url(f"**/validation/{vset.pk}/results/")
    assert "setting 1" in page.locator("#recommendation").inner_text()
    page.click("#adopt-button")
    page.wait_for_selector(".messages")
    assert PeakProfile.objects.filter(name=f"validated-{vset.pk}", upper=0.4).exists()


def test_the_comparison_view_shows_both_maps_the_difference_and_the_summary(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.click("text=Compare model versions")
    page.wait_for_selector("#diff-text")
    assert page.locator("#first-map h2").inner_text() == "base-model"
    assert page.locator("#second-map h2").inner_text() == "dsm-model"
    assert page.locator("#diff-text").inner_text() == ward["note"].text
    page.wait_for_selector("#mean-change")
    assert page.locator("#mean-change").inner_text().endswith("%")


def test_the_comparison_with_one_model_says_what_to_do_next(login, researcher, ward):
    """Only the base model has maps: the page names the DSM model that lacks them and links to the
    launch form, instead of '... vs ?', an empty panel and a heading ending in 'minus'."""
    from webapp.pipeline.models import RelevanceMap

    RelevanceMap.objects.filter(model_version=ward["dsm"]).delete()
    page = login(researcher)
    page.goto(ward["url"])
    page.click("text=Compare model versions")
    page.wait_for_selector("#one-model")
    body = page.locator("main").inner_text()
    assert "vs ?" not in body and "No map of this model version" not in body and " minus " not in body
    assert "nothing to compare with yet" in page.locator("h1").inner_text()
    notice = page.locator("#one-model").inner_text()
    assert "Only base-model has relevance maps for this note" in notice
    assert "dsm-model (trained from base-model) has none yet" in notice
    assert page.locator("#second-map").count() == 0 and page.locator("#difference").count() == 0
    page.locator("#one-model").get_by_text("Launch a relevance job").click()
    page.wait_for_url("**/jobs/new/**")


def test_a_clinician_cannot_reach_researcher_only_pages(login, clinician, ward):
    page = login(clinician)
    assert page.goto("/jobs/new/").status == 403
    assert page.goto("/datasets/new/").status == 403


def test_a_researcher_reads_the_note_but_has_no_decision_keys(login, researcher, ward):
    page = login(researcher)
    page.goto(ward["url"])
    assert peak_count(page) == 3
    assert page.locator("button[value=accept]").count() == 0
    page.keyboard.press("a")
    assert not PeakDecision.objects.exists()


def test_a_decision_from_a_stale_page_is_refused_on_the_page(login, clinician, ward):
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#peak-0.current")
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    PeakDecision.objects.update(version=5)  # changed meanwhile in another tab
    page.keyboard.press("k")
    page.wait_for_selector("#peak-0.current")
    page.keyboard.press("x")
    page.wait_for_selector("#note-panel .notice[role=alert]:has-text('out of date')")
    assert "mine-accept" in page.locator("#peak-0").get_attribute("class")
    assert PeakDecision.objects.get().decision == "accept"


HEAT_JS = """() => {
  // the colour level of every character of the note text, as drawn (null: no colour)
  const out = [];
  const walk = document.createTreeWalker(document.querySelector('#note-text'), NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const node = walk.currentNode;
    const coloured = node.parentElement.closest('[class*="r"]');
    const m = coloured && coloured.closest('#note-text') ? /\\br(\\d)\\b/.exec(coloured.className) : null;
    for (const _ of node.textContent) out.push(m ? Number(m[1]) : null);
  }
  return out;
}"""


def test_heat_colours_whole_words_and_never_punctuation(login, clinician, db):
    import re

    import numpy as np

    from tests.webapp.review.fabricate import add_map
    from webapp.corpus.models import Corpus, Note, Task

    text = "Given allopurinol 300 mg, HR: 130. Stable."
    # "allopurinol" in three tokens with different scores; the punctuation tokens are hot too
    pieces = ["Given", " all", "opur", "inol", " 300", " mg", ",", " HR", ":", " 130", ".", " Stable", "."]
    scores = [0.05, 0.3, 0.95, 0.5, 0.2, 0.1, 0.9, 0.7, 0.9, 0.6, 0.9, 0.0, 0.9]
    offsets, position = [], 0
    for piece in pieces:
        offsets.append((position, position + len(piece)))
        position += len(piece)
    assert "".join(pieces) == text
    corpus = Corpus.objects.create(project=default_project(), name="heat", language="en")
    note = Note.objects.create(corpus=corpus, external_id="h1", text=text)
    task = Task.objects.create(slug="gout-treatment", description="gout treatment", options=["y", "n"])
    model = ModelVersion.objects.create(name="heat-model", family="llama", path="heat-model")
    add_map(note, task, model, {}, offsets=np.array(offsets, np.int32), scores=np.array(scores, np.float32))
    page = login(clinician)
    page.goto(f"/review/{corpus.pk}/notes/{note.pk}/?task={task.pk}&model={model.pk}&method=attnlrp&template=en")
    page.wait_for_selector("#note-text")
    assert page.locator("#note-text").inner_text() == text
    levels = page.evaluate(HEAT_JS)
    assert len(levels) == len(text)
    for word in re.finditer(r"\w+", text):
        drawn = set(levels[word.start() : word.end()])
        assert len(drawn) == 1 and None not in drawn, (word.group(), drawn)
    assert levels[text.index("allopurinol")] == 7  # the hottest of its three tokens (0.95)
    for i, char in enumerate(text):
        if not char.isalnum():
            assert levels[i] is None, (i, char)


def test_the_review_position_belongs_to_the_user_and_logout_forgets_it(login, clinician, ward, django_user_model):
    from tests.conftest import _make_user

    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#peak-item-0.current")
    page.keyboard.press("j")
    page.wait_for_selector("#peak-item-1.current")
    key = f"dsm-peak-{clinician.pk}-{ward['note'].pk}"
    assert page.evaluate("k => sessionStorage.getItem(k)", key) == "1"
    page.reload()
    page.wait_for_selector("#peak-item-1.current")  # the same user comes back to where they were

    page.click("form[data-logout] button[type=submit]")
    page.wait_for_url("**/login/**")
    assert page.evaluate("() => Object.keys(sessionStorage).filter(k => k.startsWith('dsm-peak-'))") == []

    # Even a position left behind (no logout click: the session expired) is not the next user's.
    page.evaluate("k => sessionStorage.setItem(k, '2')", key)
    second = _make_user(django_user_model, "cleo", "clinician")
    login(second)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak")
    page.wait_for_selector("#peak-item-0.current")
    assert page.locator("#peak-item-2.current").count() == 0
