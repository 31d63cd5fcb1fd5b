"""The guideline on the review page (the `g` key) and the active time a keyboard decision sends,
in headless Chromium."""

import pytest

from tests.browser.test_review import ward  # noqa: F401  (the fixture)
from webapp.review.models import PeakDecision

pytestmark = pytest.mark.django_db(transaction=True)


def test_g_opens_the_guideline_and_a_keyboard_decision_stores_its_time_and_version(
    login,
    clinician,
    researcher,
    ward,  # noqa: F811
):
    from webapp.corpus.tasks import edit_task

    edit_task(ward["heart"], {"guideline": "Count the rate."}, actor=researcher)
    edit_task(ward["heart"], {"guideline": "Only the **current** rate, not the history."}, actor=researcher)
    page = login(clinician)
    page.goto(ward["url"])
    page.wait_for_selector("#note-text mark.peak.current")
    guideline = page.locator("#guideline .guideline-text")
    assert not guideline.is_visible()  # hidden until asked for
    page.keyboard.press("g")
    assert guideline.is_visible()
    assert page.locator("#guideline strong", has_text="current").is_visible()
    assert "version 2" in page.locator("#guideline summary").inner_text()
    page.wait_for_timeout(400)  # reading the peak
    page.mouse.move(200, 200)
    page.keyboard.press("a")
    page.wait_for_selector("#peak-0.mine-accept")
    assert page.locator("#guideline .guideline-text").is_visible()  # stays open across the panel's swap
    page.keyboard.press("g")
    assert not page.locator("#guideline .guideline-text").is_visible()
    row = PeakDecision.objects.get()
    assert row.guideline_version == 2
    assert 300 <= row.active_ms < 60_000


def test_the_help_lists_the_guideline_key(login, clinician, ward):  # noqa: F811
    page = login(clinician)
    page.goto(ward["url"])
    page.keyboard.press("?")
    assert page.locator("#help", has_text="open / close the task's guideline").is_visible()
