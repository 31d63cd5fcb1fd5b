"""The build form says how many relevance maps it reads and asks before a large build."""

import pytest
from django.urls import reverse

from webapp.datasets.models import DatasetVersion
from webapp.lifecycle.status import JobStatus


@pytest.fixture
def no_queue(monkeypatch):
    monkeypatch.setattr("webapp.lifecycle.queue.send", lambda task, *ids: len(ids))


def selected(maps) -> int:
    """The maps a build reads by default: held-out tasks are left out."""
    return sum(1 for slug in maps if slug != "heldout")


def form_data(corpus, model, profile, **extra):
    return {
        "name": "first",
        "corpus": corpus.pk,
        "model_version": model.pk,
        "method": "attnlrp",
        "template": "en",
        "profile": profile.pk,
        "mode": "dsm",
        "seed": 0,
        "mask_token": "<mask>",
        **extra,
    }


def test_below_the_threshold_the_build_is_queued_at_once(
    client, researcher, corpus, model, sharp, maps, settings, no_queue
):
    settings.LAUNCH_CONFIRM_AMOUNT = selected(maps)
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp))
    assert response.status_code == 302 and DatasetVersion.objects.filter(name="first").exists()


def test_above_the_threshold_it_asks_first_and_builds_once_confirmed(
    client, researcher, corpus, model, sharp, maps, settings, no_queue
):
    settings.LAUNCH_CONFIRM_AMOUNT = 1
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp))
    html = response.content.decode()
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert f"This is {selected(maps)} maps, and no time can be estimated yet" in html
    assert f'name="confirmed" value="{selected(maps)}"' in html
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp, confirmed=selected(maps)))
    assert response.status_code == 302 and DatasetVersion.objects.get().name == "first"


def test_the_time_comes_from_earlier_builds_of_the_model(
    client, researcher, corpus, model, sharp, maps, settings, make_dataset
):
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    make_dataset(
        name="earlier", status=JobStatus.DONE, maps_total=1, started=now - timedelta(seconds=1000), finished=now
    )  # 1000 s a map
    settings.LAUNCH_CONFIRM_SECONDS = 600
    client.force_login(researcher)
    response = client.post(reverse("datasets:new"), form_data(corpus, model, sharp))
    assert not DatasetVersion.objects.filter(name="first").exists()
    assert "measured on 1 earlier build of this model on the <code>default</code> queue" in response.content.decode()


def test_the_live_estimate_fragment_never_builds(client, researcher, corpus, model, sharp, maps):
    client.force_login(researcher)
    response = client.post(
        reverse("datasets:new"), form_data(corpus, model, sharp, confirmed=99), headers={"HX-Request": "true"}
    )
    assert response.status_code == 200 and not DatasetVersion.objects.exists()
    assert f"<strong>{selected(maps)} maps</strong>" in response.content.decode()
