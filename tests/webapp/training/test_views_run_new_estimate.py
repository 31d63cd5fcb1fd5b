"""The training form says how many optimizer steps a run takes and asks before a long one."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.webapp.training.test_views_run_new import form_data
from webapp.lifecycle.status import JobStatus
from webapp.training.models import TrainingRun


@pytest.fixture
def three_steps(client, researcher, dataset, model_version):
    """The DSM form for 12 examples at a batch of 4: 3 optimizer steps."""
    client.force_login(researcher)
    data = form_data(client.get(reverse("training:run_new")))
    data.update(
        dataset=dataset.pk,
        model_version=model_version.pk,
        train__effective_batch_size=4,
        train__micro_batch_size=4,
        train__warmup_ratio=0.0,
        name="small",
    )
    return data


def test_below_the_threshold_the_run_is_queued_at_once(client, three_steps, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 3
    response = client.post(reverse("training:run_new"), three_steps)
    assert response.status_code == 302 and TrainingRun.objects.get().name == "small"


def test_above_the_threshold_it_asks_first_and_launches_once_confirmed(client, three_steps, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 2
    response = client.post(reverse("training:run_new"), three_steps)
    html = response.content.decode()
    assert response.status_code == 200 and not TrainingRun.objects.exists()
    assert "This is 3 steps, and no time can be estimated yet" in html and 'name="confirmed" value="3"' in html
    response = client.post(reverse("training:run_new"), {**three_steps, "confirmed": "3"})
    assert response.status_code == 302 and TrainingRun.objects.get().name == "small"


def test_the_time_comes_from_earlier_runs_of_the_same_kind_and_model(
    client, three_steps, settings, dataset, model_version
):
    now = timezone.now()
    TrainingRun.objects.create(
        kind="dsm",
        model_version=model_version,
        dataset=dataset,
        status=JobStatus.DONE,
        step=1,
        total_steps=1,
        started=now - timedelta(seconds=400),
        finished=now,
    )
    settings.LAUNCH_CONFIRM_SECONDS = 600  # 3 steps x 400 s
    response = client.post(reverse("training:run_new"), three_steps)
    assert TrainingRun.objects.count() == 1  # only the earlier one
    html = response.content.decode()
    assert "This is 3 steps, about 20 min on one worker of the <code>training</code> queue. Launch it?" in html
    assert "measured on 1 earlier dsm run of this model on the <code>training</code> queue" in html


def test_the_live_estimate_fragment_never_launches(client, three_steps):
    response = client.post(
        reverse("training:run_new"), {**three_steps, "confirmed": "3"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and not TrainingRun.objects.exists()
    assert "<strong>3 steps</strong>" in response.content.decode()


def test_a_kind_without_optimizer_steps_says_it_has_no_estimate(client, researcher, corpus):
    client.force_login(researcher)
    url = reverse("training:run_new") + "?preset=0-shot"
    data = {**form_data(client.get(url)), "split_corpus": corpus.pk}
    response = client.post(url, data, headers={"HX-Request": "true"})
    assert "has no estimate of its length" in response.content.decode() and not TrainingRun.objects.exists()
