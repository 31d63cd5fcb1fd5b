"""The evaluation form says how many prompts it computes and asks before a large evaluation."""

import pytest

from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import PeakProfile

URL = "/evaluations/new/"


@pytest.fixture
def form_data(annotated, model_version):  # 5 pairs x 2 configurations = 10 prompts
    corpus, _ = annotated
    return {
        "corpus": corpus.pk,
        "model_version": model_version.pk,
        "methods": ["attention", "attnlrp"],
        "explains": ["next"],
        "template": "auto",
        "profile": PeakProfile.objects.get(is_default=True).pk,
        "max_pairs": 5,
        "seed": 3,
    }


def test_below_the_threshold_it_launches_at_once(client, researcher, form_data, settings, no_queue):
    settings.LAUNCH_CONFIRM_AMOUNT = 10
    client.force_login(researcher)
    assert client.post(URL, form_data).status_code == 302 and RelevanceEvaluation.objects.count() == 1


def test_above_the_threshold_it_asks_first_and_launches_once_confirmed(
    client, researcher, form_data, settings, no_queue
):
    settings.LAUNCH_CONFIRM_AMOUNT = 9
    client.force_login(researcher)
    response = client.post(URL, form_data)
    html = response.content.decode()
    assert response.status_code == 200 and not RelevanceEvaluation.objects.exists()
    assert "This is 10 prompts, and no time can be estimated yet" in html and 'name="confirmed" value="10"' in html
    response = client.post(URL, {**form_data, "confirmed": "10"})
    assert response.status_code == 302 and RelevanceEvaluation.objects.count() == 1


def test_the_live_estimate_fragment_never_launches(client, researcher, form_data, no_queue):
    client.force_login(researcher)
    response = client.post(URL, {**form_data, "confirmed": "10"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and not RelevanceEvaluation.objects.exists()
    assert "<strong>10 prompts</strong>" in response.content.decode()
