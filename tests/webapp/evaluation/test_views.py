"""Evaluation pages: list, launch form, detail (progress, result, recommendation), cancel, resume."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.projects import default_project
from tests.webapp.evaluation.factories import annotated_pairs_count, finished, group, spec
from webapp.audit.models import AuditEvent
from webapp.evaluation import evaluations
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus, PeakProfile


@pytest.fixture
def form_data(annotated, model_version):
    corpus, _ = annotated
    return {
        "corpus": corpus.pk,
        "model_version": model_version.pk,
        "methods": ["attention", "attnlrp"],
        "explains": ["next", "span"],
        "template": "auto",
        "profile": PeakProfile.objects.get(is_default=True).pk,
        "max_pairs": 5,
        "seed": 3,
    }


def test_the_urls_are_stable():
    assert reverse("evaluation:list") == "/evaluations/"
    assert reverse("evaluation:new") == "/evaluations/new/"
    assert reverse("evaluation:detail", args=[3]) == "/evaluations/3/"


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_a_researcher_or_admin_launches_an_evaluation_and_lands_on_its_page(
    client, request, form_data, role, no_queue, django_capture_on_commit_callbacks
):
    user = request.getfixturevalue(role)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/evaluations/new/", form_data)
    evaluation = RelevanceEvaluation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/evaluations/{evaluation.pk}/"
    assert [(c["method"], c["explain"]) for c in evaluation.configs] == [
        ("attention", "next"),
        ("attention", "span"),
        ("attnlrp", "next"),
        ("attnlrp", "span"),
    ]
    assert (evaluation.n_pairs, evaluation.total, evaluation.seed, evaluation.created_by) == (5, 20, 3, user)
    assert no_queue == [evaluation.pk]
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.LAUNCH_JOB, actor=user, object_id=str(evaluation.pk)
    ).exists()
    page = client.get(response["Location"]).content.decode()
    assert "Queued" in page and "AttnLRP / Every token of s_T, summed / template en" in page and "0 of 20" in page


@pytest.mark.parametrize("user_fixture", ["clinician", "norole_user"])
def test_others_may_not_launch(client, request, form_data, user_fixture):
    client.force_login(request.getfixturevalue(user_fixture))
    assert client.get("/evaluations/new/").status_code == 403
    assert client.post("/evaluations/new/", form_data).status_code == 403
    assert not RelevanceEvaluation.objects.exists()


def test_the_form_shows_problems_in_plain_words(client, researcher, form_data, db):
    from webapp.corpus.models import Corpus

    empty = Corpus.objects.create(project=default_project(), name="empty", language="en")
    client.force_login(researcher)
    response = client.post("/evaluations/new/", {**form_data, "corpus": empty.pk, "methods": []})
    assert response.status_code == 200 and not RelevanceEvaluation.objects.exists()
    errors = response.context["form"].errors
    assert "methods" in errors
    response = client.post("/evaluations/new/", {**form_data, "corpus": empty.pk})
    assert "no annotation with evidence spans" in response.context["form"].errors["corpus"][0]
    response = client.post(
        "/evaluations/new/", {**form_data, "explains": ["contrastive"], "template": "auto", "max_pairs": 0}
    )
    assert "max_pairs" in response.context["form"].errors


@pytest.mark.parametrize("seed", ["-1", str(10**30)])
def test_a_seed_outside_what_is_stored_is_refused(client, researcher, form_data, seed):
    client.force_login(researcher)
    response = client.post("/evaluations/new/", {**form_data, "seed": seed})
    assert response.status_code == 200 and not RelevanceEvaluation.objects.exists()
    assert response.context["form"].errors["seed"]


def test_the_list_shows_each_evaluation_with_its_recommendation(client, clinician, annotated, model_version):
    corpus, _ = annotated
    winner = group("attnlrp", "span", 0.71, 0.66, 0.76)
    finished(
        corpus, model_version, [winner], choice={k: winner[k] for k in ("method", "explain", "template", "config_key")}
    )
    finished(corpus, model_version, [group("attention", "next", 0.52, 0.48, 0.56)])
    client.force_login(clinician)
    page = client.get("/evaluations/").content.decode()
    assert "AttnLRP / Every token of s_T, summed" in page and "none beats chance" in page
    assert "attnlrp / span" not in page  # the choices' labels, not their codes
    assert "New evaluation" not in page  # clinicians may look, not launch
    italian = client.get("/evaluations/", HTTP_ACCEPT_LANGUAGE="it").content.decode()
    assert "AttnLRP / Ogni token di s_T, sommato" in italian


def test_the_result_page_shows_the_table_the_charts_and_the_recommendation(
    client, researcher, annotated, model_version
):
    corpus, _ = annotated
    winner = group("attnlrp", "span", 0.71, 0.66, 0.76)
    evaluation = finished(
        corpus,
        model_version,
        [group("attention", "next", 0.58, 0.54, 0.62), winner],
        choice={k: winner[k] for k in ("method", "explain", "template", "config_key")},
        reason="attnlrp / span / en localises the evidence best.",
    )
    client.force_login(researcher)
    response = client.get(f"/evaluations/{evaluation.pk}/")
    page = response.content.decode()
    assert "Use AttnLRP with the “Every token of s_T, summed” variant" in page and "localises the evidence best" in page
    assert '0.710 <span class="ci">(0.660–0.760)</span>' in page
    assert "uniform baseline" in page and "random baseline" in page
    assert page.count('class="intervals"') == 3 and 'class="band"' in page
    rows = response.context["rows"]
    assert [(r.label, r.recommended, r.beats_chance) for r in rows] == [
        ("Mean attention / Next token after the middle of s_T (reference code) / en", False, True),
        ("AttnLRP / Every token of s_T, summed / en", True, True),
        ("uniform baseline", False, False),
        ("random baseline", False, False),
    ]
    launch = f"/jobs/new/?corpus={corpus.pk}&amp;model_version={model_version.pk}"
    assert launch in page


def test_the_result_page_says_honestly_when_nothing_beats_chance(client, clinician, annotated, model_version):
    corpus, _ = annotated
    evaluation = finished(
        corpus,
        model_version,
        [group("attention", "next", 0.52, 0.48, 0.56)],
        reason="No configuration beats chance on these pairs: ...",
    )
    client.force_login(clinician)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "No configuration beats chance on this corpus." in page
    assert "New relevance job with this configuration" not in page


def test_the_live_fragment_polls_until_the_end(client, researcher, annotated, model_version):
    corpus, _ = annotated
    evaluation = evaluations.launch(spec(corpus, model_version), enqueue=False)
    client.force_login(researcher)
    running = client.get(f"/evaluations/{evaluation.pk}/", HTTP_HX_REQUEST="true")
    assert running.status_code == 200 and 'hx-trigger="every 2s"' in running.content.decode()
    assert "<html" not in running.content.decode()
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(status=JobStatus.FAILED, error="Stopped.")
    ended = client.get(f"/evaluations/{evaluation.pk}/", HTTP_HX_REQUEST="true")
    assert ended.status_code == 286 and ended["HX-Refresh"] == "true"


def test_cancel_and_resume_from_the_page(client, researcher, annotated, model_version, no_queue):
    corpus, _ = annotated
    evaluation = evaluations.launch(spec(corpus, model_version), enqueue=False)
    client.force_login(researcher)
    assert client.post(f"/evaluations/{evaluation.pk}/cancel/").status_code == 302
    evaluation.refresh_from_db()
    assert evaluation.status == JobStatus.CANCELLED
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "Resume (maps already stored are kept)" in page
    client.post(f"/evaluations/{evaluation.pk}/resume/")
    evaluation.refresh_from_db()
    assert evaluation.status == JobStatus.QUEUED
    response = client.post(f"/evaluations/{evaluation.pk}/resume/", follow=True)
    assert "its worker is alive" in response.content.decode()


def test_an_evaluation_whose_worker_was_lost_says_stalled_without_an_eta_and_offers_resume(
    client, researcher, annotated, model_version, settings
):
    corpus, _ = annotated
    evaluation = evaluations.launch(spec(corpus, model_version), enqueue=False)
    evaluations.claim(evaluation.pk, worker="w1")
    lost = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 5)
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(heartbeat=lost, done=1, seconds_per_prompt=2.0)
    client.force_login(researcher)
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert f"stalled: worker lost at {timezone.localtime(lost):%H:%M}" in page and "Its worker stopped beating" in page
    assert "Resume (maps already stored are kept)" in page and "Cancel evaluation" in page
    assert "about 0:" not in page  # no live ETA for a lost worker
    listed = client.get("/evaluations/").content.decode()
    assert f"stalled: worker lost at {timezone.localtime(lost):%H:%M}" in listed


@pytest.mark.parametrize("user_fixture, status", [("clinician", 403), ("norole_user", 404)])
def test_others_may_not_cancel_or_resume(client, request, annotated, model_version, user_fixture, status):
    """A clinician of the evaluation's project may not act on it (403); a non-member does not find it (404)."""
    corpus, _ = annotated
    evaluation = evaluations.launch(spec(corpus, model_version), enqueue=False)
    client.force_login(request.getfixturevalue(user_fixture))
    assert client.post(f"/evaluations/{evaluation.pk}/cancel/").status_code == status
    assert client.post(f"/evaluations/{evaluation.pk}/resume/").status_code == status
    evaluation.refresh_from_db()
    assert evaluation.status == JobStatus.QUEUED


def test_an_unknown_evaluation_is_not_found(client, clinician):
    client.force_login(clinician)
    assert client.get("/evaluations/999/").status_code == 404


def test_the_default_form_proposes_the_default_model_and_profile(client, researcher, annotated, model_version):
    client.force_login(researcher)
    form = client.get("/evaluations/new/").context["form"]
    assert form["profile"].initial == PeakProfile.objects.get(is_default=True).pk
    assert form["methods"].initial == ["attnlrp"] and form["explains"].initial == ["next"]
    assert annotated_pairs_count(annotated[0]) > 0
