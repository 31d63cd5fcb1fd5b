"""Point 9 in Chromium: Cancel asks before it cancels (static/js/confirm.js), and `n` at the last
note says so instead of doing nothing (static/review/review.js)."""

import pytest

from tests.browser.test_review import ward  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def running_job(researcher):
    from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
    from webapp.pipeline import jobs, planning

    job = jobs.launch(spec(make_corpus(2), make_model_version(), tasks=make_tasks()), actor=researcher, enqueue=False)
    planning.plan_now(job)
    return job


def test_cancel_asks_and_a_declined_confirmation_cancels_nothing(login, researcher, running_job):
    page = login(researcher)
    page.goto(f"/jobs/{running_job.pk}/")
    questions = []

    def dismiss(dialog):
        questions.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.click("text=Cancel job")
    page.wait_for_timeout(300)
    assert questions == ["Cancel this job?"]
    running_job.refresh_from_db()
    assert running_job.status == "queued" and f"/jobs/{running_job.pk}/" in page.url


def test_n_at_the_last_note_says_it_is_the_last(login, clinician, ward):  # noqa: F811
    page = login(clinician)
    last = ward["url"].replace(f"/notes/{ward['note'].pk}/", f"/notes/{ward['other'].pk}/")
    page.goto(last)
    assert page.locator("a[rel=next]").count() == 0
    page.locator("h1").first.click()
    page.keyboard.press("n")
    page.wait_for_selector("#key-status")
    assert "This is the last note" in page.locator("#key-status").inner_text()
    assert page.url.endswith(last)
