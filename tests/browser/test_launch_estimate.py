"""A researcher fills the relevance job form in Chromium, sees the live estimate, is asked to
confirm a launch above the threshold, confirms, and lands on the job's page."""

import re

import pytest

from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks
from webapp.pipeline.models import RelevanceJob

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_large_job_is_launched_only_once_confirmed(login, researcher, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 10  # no measured rate yet: more than 10 prompts asks first
    corpus = make_corpus(6, name="estimate-ward")
    make_tasks()
    model = make_model_version(name="estimate-model")
    page = login(researcher)
    page.goto("/jobs/new/")
    page.select_option("#id_corpus", label=corpus.name)
    page.select_option("#id_model_version", label=str(model))
    page.fill("#id_sample_k", "2")
    page.locator("#id_sample_k").dispatch_event("change")
    # the live estimate (htmx) as the fields change: 6 notes x 2 tasks
    page.locator("#launch-estimate", has_text="12 prompts").wait_for()
    assert "no measured rate yet" in page.locator("#launch-estimate").inner_text()

    page.click("button:has-text('Plan and launch')")
    question = page.locator("[role=alert]", has_text="Launch it?")
    question.wait_for()
    assert "This is 12 prompts, and no time can be estimated yet" in question.inner_text()
    assert not RelevanceJob.objects.exists()  # the first submit launched nothing

    page.click("button:has-text('Yes, launch 12 prompts')")
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = RelevanceJob.objects.get()
    assert page.url.endswith(f"/jobs/{job.pk}/") and job.corpus == corpus and job.sample_k == 2
    assert "launched" in page.locator(".messages").inner_text()
