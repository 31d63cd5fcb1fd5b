"""A launch by API launches what it was asked for, or nothing (issue 38, item 2): a field the body
does not know (the page's `limit` where the API says `note_filter.limit`) is a 400 naming it, a
limit below 1 or not a whole number (1e30) a 400, and a launch the pages would ask to confirm
(webapp.lifecycle.estimates) a 409 stating the estimate until it carries "confirm": true."""

import pytest

from webapp.datasets.models import DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import RelevanceJob
from webapp.training.models import TrainingRun


def _post(client, url, body, secret, bearer):
    return client.post(url, body, content_type="application/json", headers=bearer(secret))


def _job(own, **changes):
    body = {"corpus": own["corpus"].pk, "model_version": own["model"].pk, "task_selection": "list"}
    return {**body, "tasks": ["heart-rate"], **changes}


@pytest.mark.parametrize("limit", [30, -5, 1e30])
def test_the_pages_field_name_is_refused_by_name_and_nothing_is_launched(
    client, researcher, own, make_token, bearer, limit
):
    _, secret = make_token(researcher, [own["project"]])
    answer = _post(client, "/api/jobs", _job(own, limit=limit), secret, bearer)
    assert answer.status_code == 400
    assert answer.json()["detail"] == "Unknown field limit."
    assert not RelevanceJob.objects.exists()


@pytest.mark.parametrize(
    ("limit", "said"),
    [(-5, "note_filter.limit: Input should be greater than or equal to 1."), (0, "greater than or equal to 1")]
    + [(1e30, "note_filter.limit: Input should be a valid integer."), ("3", "valid integer")],
)
def test_a_note_limit_below_one_or_not_a_whole_number_is_refused(
    client, researcher, own, make_token, bearer, limit, said
):
    _, secret = make_token(researcher, [own["project"]])
    answer = _post(client, "/api/jobs", _job(own, note_filter={"limit": limit}), secret, bearer)
    assert answer.status_code == 400 and said in answer.json()["detail"]
    assert not RelevanceJob.objects.exists()


def test_a_note_limit_launches_that_many_notes(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    answer = _post(client, "/api/jobs", _job(own, note_filter={"limit": 1}), secret, bearer)
    assert answer.status_code == 202, answer.json()
    assert RelevanceJob.objects.get().note_filter == {"limit": 1}
    unknown = _post(client, "/api/jobs", _job(own, note_filter={"first": 1}), secret, bearer)
    assert unknown.status_code == 400 and unknown.json()["detail"] == "Unknown field note_filter.first."


@pytest.mark.parametrize("url", ["/api/jobs", "/api/datasets", "/api/evaluations", "/api/training-runs"])
def test_every_launch_refuses_a_field_it_does_not_know(client, researcher, own, make_token, bearer, url):
    _, secret = make_token(researcher, [own["project"]])
    body = {"corpus": own["corpus"].pk, "model_version": own["model"].pk, "name": "x", "preset": "sft"}
    body = {k: v for k, v in body.items() if url != "/api/training-runs" or k != "corpus"}
    answer = _post(client, url, {**body, "max_notes": 3, "colour": "red"}, secret, bearer)
    assert answer.status_code == 400
    assert "Unknown field max_notes." in answer.json()["detail"] and "Unknown field colour." in answer.json()["detail"]
    assert not RelevanceJob.objects.exists() and not DatasetVersion.objects.exists()
    assert not RelevanceEvaluation.objects.exists() and not TrainingRun.objects.exists()


def test_a_large_job_waits_for_confirm_true_and_the_409_states_the_estimate(
    client, researcher, own, make_token, bearer, settings
):
    settings.LAUNCH_CONFIRM_AMOUNT = 1  # no measured rate: more than 1 prompt asks first, as on the page
    _, secret = make_token(researcher, [own["project"]])
    asked = _post(client, "/api/jobs", _job(own), secret, bearer)
    assert asked.status_code == 409
    said = asked.json()
    assert said["detail"].startswith("This is 2 prompts, and no time can be estimated yet")
    assert '"confirm": true' in said["detail"]
    assert (said["estimate"]["amount"], said["estimate"]["unit"], said["estimate"]["seconds"]) == (2, "prompts", None)
    assert not RelevanceJob.objects.exists()
    confirmed = _post(client, "/api/jobs", _job(own, confirm=True), secret, bearer)
    assert confirmed.status_code == 202, confirmed.json()
    settings.LAUNCH_CONFIRM_AMOUNT = 2  # small: launched without asking
    assert _post(client, "/api/jobs", _job(own), secret, bearer).status_code == 202


def test_a_large_dataset_build_waits_for_confirm_true(client, researcher, mapped, make_token, bearer, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 1
    _, secret = make_token(researcher, [mapped["project"]])
    body = {"name": "big", "corpus": mapped["corpus"].pk, "model_version": mapped["model"].pk}
    body |= {"profile": mapped["profile"].pk}
    asked = _post(client, "/api/datasets", body, secret, bearer)
    assert asked.status_code == 409 and asked.json()["estimate"]["unit"] == "maps"
    assert asked.json()["detail"].startswith(f"This is {asked.json()['estimate']['amount']} maps")
    assert not DatasetVersion.objects.exists()
    assert _post(client, "/api/datasets", {**body, "confirm": True}, secret, bearer).status_code == 202


def test_a_large_evaluation_waits_for_confirm_true(client, researcher, gold, make_token, bearer, settings):
    settings.LAUNCH_CONFIRM_AMOUNT = 1
    _, secret = make_token(researcher, [gold["project"]])
    body = {"corpus": gold["corpus"].pk, "model_version": gold["model"].pk}
    asked = _post(client, "/api/evaluations", body, secret, bearer)
    assert asked.status_code == 409 and asked.json()["detail"].startswith("This is 2 prompts")
    assert not RelevanceEvaluation.objects.filter(corpus=gold["corpus"]).exists()
    assert _post(client, "/api/evaluations", {**body, "confirm": True}, secret, bearer).status_code == 202


def test_an_import_refuses_a_form_field_it_does_not_know(client, researcher, own, make_token, bearer):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from webapp.corpus.models import ImportJob

    _, secret = make_token(researcher, [own["project"]])
    upload = SimpleUploadedFile("n.jsonl", b'{"id": "x", "text": "HR 90."}\n')
    form = {"file": upload, "project": own["project"].slug, "kind": "notes", "corpus": "new", "limit": "1"}
    answer = client.post("/api/imports", form, headers=bearer(secret))
    assert answer.status_code == 400 and answer.json()["detail"] == "Unknown field limit."
    assert not ImportJob.objects.exists()


def test_a_query_parameter_of_the_wrong_type_is_a_400_naming_it(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    answer = client.get("/api/corpora?limit=many", headers=bearer(secret))
    assert answer.status_code == 400 and answer.json()["detail"].startswith("limit: ")


def test_a_large_training_run_waits_for_confirm_true(client, researcher, gold, make_token, bearer, settings):
    from webapp.training.models import LabeledSplit

    split = LabeledSplit.objects.create(corpus=gold["corpus"], tasks=["heart-rate"], train_count=4000, test_count=2)
    settings.LAUNCH_CONFIRM_AMOUNT = 1
    _, secret = make_token(researcher, [gold["project"]])
    body = {"preset": "sft", "model_version": gold["model"].pk, "split": split.pk}
    body |= {"config": {"train": {"max_steps": 3}}}
    asked = _post(client, "/api/training-runs", body, secret, bearer)
    assert asked.status_code == 409, asked.json()
    assert asked.json()["detail"].startswith("This is 3 steps") and asked.json()["estimate"]["unit"] == "steps"
    assert not TrainingRun.objects.filter(split=split).exists()
    confirmed = _post(client, "/api/training-runs", {**body, "confirm": True}, secret, bearer)
    assert confirmed.status_code == 202, confirmed.json()
