"""The relevance job form says how much work it is and asks before a large launch."""

import pytest

from webapp.pipeline.models import RelevanceJob

URL = "/jobs/new/"


@pytest.fixture
def form_data(corpus, tasks, model_version):  # 6 notes x 2 sampled tasks = 12 prompts
    return {
        "corpus": corpus.pk,
        "task_selection": "sample",
        "sample_k": 2,
        "seed": 0,
        "model_version": model_version.pk,
        "method": "attnlrp",
        "template_choice": "en",
        "chunk_size": 8,
    }


@pytest.fixture
def small_threshold(settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 10
    settings.LAUNCH_CONFIRM_SECONDS = 600


def test_below_the_threshold_it_launches_at_once(client, researcher, form_data, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 12
    client.force_login(researcher)
    response = client.post(URL, form_data)
    assert response.status_code == 302 and RelevanceJob.objects.count() == 1


def test_above_the_threshold_the_first_submit_asks_and_creates_nothing(client, researcher, form_data, small_threshold):
    client.force_login(researcher)
    response = client.post(URL, form_data)
    html = response.content.decode()
    assert response.status_code == 200 and not RelevanceJob.objects.exists()
    assert response.context["ask"] and response.context["estimate"].amount == 12
    assert "This is 12 prompts, and no time can be estimated yet" in html
    assert "no measured rate yet for jobs of this model on the <code>relevance</code> queue" in html
    assert '<button type="submit" class="primary" name="confirmed" value="12">Yes, launch 12 prompts</button>' in html


def test_the_confirmed_submit_launches_and_lands_on_the_job(client, researcher, form_data, small_threshold):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "confirmed": "12"})
    job = RelevanceJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"


def test_a_form_grown_after_its_confirmation_asks_again(client, researcher, form_data, small_threshold):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "sample_k": 3, "confirmed": "12"})  # now 18 prompts
    assert response.status_code == 200 and not RelevanceJob.objects.exists()
    assert "This is 18 prompts" in response.content.decode()


def test_a_measured_rate_asks_above_the_seconds_threshold(
    client, researcher, form_data, corpus, tasks, model_version, settings
):
    from tests.webapp.pipeline.factories import spec
    from webapp.pipeline import jobs

    earlier = jobs.launch(spec(corpus, model_version, tasks), enqueue=False)
    RelevanceJob.objects.filter(pk=earlier.pk).update(status="done", total=10, done=10, seconds_done=100.0)  # 10 s each
    settings.LAUNCH_CONFIRM_AMOUNT, settings.LAUNCH_CONFIRM_SECONDS = 1_000_000, 60
    client.force_login(researcher)
    response = client.post(URL, form_data)
    assert RelevanceJob.objects.count() == 1  # only the earlier one
    html = response.content.decode()
    assert "This is 12 prompts, about 2 min on one worker of the <code>relevance</code> queue. Launch it?" in html
    assert "measured on 1 earlier job of this model on the <code>relevance</code> queue" in html


def test_the_live_estimate_fragment_never_launches(client, researcher, form_data, small_threshold):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "confirmed": "12"}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and not RelevanceJob.objects.exists()
    assert html.lstrip().startswith('<div id="launch-estimate"') and "<strong>12 prompts</strong>" in html
    assert "<form" not in html


def test_the_form_page_waits_for_a_complete_form_before_estimating(client, researcher, form_data):
    client.force_login(researcher)
    assert "once the form is complete" in client.get(URL).content.decode()
    fragment = client.post(URL, {**form_data, "sample_k": ""}, headers={"HX-Request": "true"})
    assert "once the form is complete" in fragment.content.decode()
