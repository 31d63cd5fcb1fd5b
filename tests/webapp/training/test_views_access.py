"""Every training page x every role: viewers see, researchers and admins launch, cancel, resume.
A user with no membership is refused (403) on pages without an object and does not find (404) a
run of a project they are not in (webapp.projects.scoping)."""

import pytest
from django.urls import reverse

from webapp.training.models import TrainingRun

ROLES = ["anonymous", "norole", "clinician", "researcher", "admin"]
VIEWERS = {"clinician", "researcher", "admin"}
LAUNCHERS = {"researcher", "admin"}
OBJECT_PAGES = {"detail", "metrics", "predictions"}  # fetch one run: another project's is not found


def urls(run):
    return {
        "list": (reverse("training:run_list"), VIEWERS),
        "new": (reverse("training:run_new"), LAUNCHERS),
        "detail": (reverse("training:run_detail", args=[run.pk]), VIEWERS),
        "metrics": (reverse("training:run_metrics", args=[run.pk]), VIEWERS),
        "predictions": (reverse("training:run_predictions", args=[run.pk, "csv"]), VIEWERS),
        "compare": (reverse("training:compare") + f"?runs={run.pk}", VIEWERS),
        "diff": (reverse("training:diff") + f"?a={run.pk}&b={run.pk}", VIEWERS),
    }


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("view", ["list", "new", "detail", "metrics", "predictions", "compare", "diff"])
def test_each_page_answers_each_role(client, user_for, make_run, role, view):
    run = make_run()
    url, allowed = urls(run)[view]
    if role != "anonymous":
        client.force_login(user_for[role])
    response = client.get(url)
    if role == "anonymous":
        assert response.status_code == 302 and "login" in response["Location"]
    elif role == "norole" and view in OBJECT_PAGES:
        assert response.status_code == 404
    else:
        assert response.status_code == (200 if role in allowed else 403)


@pytest.mark.parametrize("role, status", [("clinician", 403), ("norole", 404)])
@pytest.mark.parametrize("action", ["run_cancel", "run_resume"])
def test_cancel_and_resume_are_refused_without_the_launch_role(client, user_for, make_run, role, status, action):
    """A clinician of the run's project may not act on it (403); a non-member does not find it (404)."""
    run = make_run()
    client.force_login(user_for[role])
    assert client.post(reverse(f"training:{action}", args=[run.pk])).status_code == status
    assert TrainingRun.objects.get(pk=run.pk).status == "queued"


@pytest.mark.parametrize("role", ["clinician", "norole"])
def test_a_launch_post_is_refused_without_the_role(client, user_for, dataset, model_version, role):
    client.force_login(user_for[role])
    response = client.post(
        reverse("training:run_new"), {"preset": "dsm-full", "model_version": model_version.pk, "dataset": dataset.pk}
    )
    assert response.status_code == 403 and not TrainingRun.objects.exists()


def test_a_missing_run_is_not_found(client, clinician, db):
    client.force_login(clinician)
    assert client.get(reverse("training:run_detail", args=[999])).status_code == 404
