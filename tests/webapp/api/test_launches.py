"""Launching new work by API: dataset builds, evaluations and training runs, validated by the
pages' own forms and domain checks (a problem is a 400 naming the field), another project's
inputs a 404, a clinician's token a 403; evaluations cancel and resume like the other kinds."""

from webapp.corpus.models import Task
from webapp.datasets.models import DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import PeakProfile
from webapp.training.models import TrainingRun


def _post(client, url, body, secret, bearer):
    return client.post(url, body, content_type="application/json", headers=bearer(secret))


def test_a_dataset_build_is_launched_with_the_pages_rules(client, researcher, mapped, make_token, bearer):
    _, secret = make_token(researcher, [mapped["project"]])
    body = {
        "name": "api-built",
        "corpus": mapped["corpus"].pk,
        "model_version": mapped["model"].pk,
        "profile": mapped["profile"].pk,
        "tasks": ["heart", "pacemaker"],
    }
    answer = _post(client, "/api/datasets", body, secret, bearer)
    assert answer.status_code == 202, answer.json()
    dataset = DatasetVersion.objects.get(pk=answer.json()["id"])
    assert (dataset.name, dataset.version, dataset.status, dataset.mode) == ("api-built", 1, "queued", "dsm")
    assert dataset.filters["tasks"] == sorted(mapped["tasks"][s].pk for s in ("heart", "pacemaker"))
    again = _post(client, "/api/datasets", body, secret, bearer)
    assert again.json()["version"] == 2  # the same name: its next version, as on the page

    Task.objects.filter(slug="heldout").update(held_out=True)
    held = _post(client, "/api/datasets", {**body, "tasks": ["heldout"]}, secret, bearer)
    assert held.status_code == 400 and held.json()["detail"].startswith("tasks: heldout is held out")
    unknown = _post(client, "/api/datasets", {**body, "tasks": ["nope"]}, secret, bearer)
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]
    no_maps = _post(client, "/api/datasets", {**body, "template": "it"}, secret, bearer)
    assert no_maps.status_code == 400 and "No relevance maps match" in no_maps.json()["detail"]
    assert DatasetVersion.objects.count() == 2


def test_another_projects_corpus_is_404_and_a_clinician_may_not_launch(
    client, researcher, clinician, mapped, other, make_token, bearer
):
    _, secret = make_token(researcher, [mapped["project"]])
    theirs = {"corpus": other["corpus_id"], "model_version": mapped["model"].pk}
    assert _post(client, "/api/datasets", {**theirs, "name": "x"}, secret, bearer).status_code == 404
    assert _post(client, "/api/evaluations", theirs, secret, bearer).status_code == 404
    run = {"preset": "sft", "model_version": mapped["model"].pk, "split_corpus": other["corpus_id"]}
    assert _post(client, "/api/training-runs", run, secret, bearer).status_code == 404
    _, reader = make_token(clinician, [mapped["project"]])
    ours = {"corpus": mapped["corpus"].pk, "model_version": mapped["model"].pk}
    assert _post(client, "/api/datasets", {**ours, "name": "x"}, reader, bearer).status_code == 403
    assert _post(client, "/api/evaluations", ours, reader, bearer).status_code == 403
    ours_run = {**run, "split_corpus": ours["corpus"]}
    assert _post(client, "/api/training-runs", ours_run, reader, bearer).status_code == 403
    assert not DatasetVersion.objects.filter(corpus_id=mapped["corpus"].pk).exists()
    assert RelevanceEvaluation.objects.filter(corpus_id=mapped["corpus"].pk).count() == 0
    assert TrainingRun.objects.filter(created_by__in=[researcher, clinician]).count() == 0


def test_an_evaluation_is_launched_cancelled_and_resumed(client, researcher, gold, make_token, bearer):
    default = PeakProfile.objects.get(is_default=True)  # made by a data migration
    _, secret = make_token(researcher, [gold["project"]])
    body = {"corpus": gold["corpus"].pk, "model_version": gold["model"].pk, "methods": ["attention", "attnlrp"]}
    answer = _post(client, "/api/evaluations", body, secret, bearer)
    assert answer.status_code == 202, answer.json()
    evaluation = RelevanceEvaluation.objects.get(pk=answer.json()["id"])
    assert [c["method"] for c in evaluation.configs] == ["attention", "attnlrp"]
    assert evaluation.n_pairs == 2 and evaluation.profile == default

    cancelled = client.post(f"/api/evaluations/{evaluation.pk}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.post(f"/api/evaluations/{evaluation.pk}/cancel", headers=bearer(secret)).status_code == 409
    resumed = client.post(f"/api/evaluations/{evaluation.pk}/resume", headers=bearer(secret))
    assert resumed.status_code == 200 and resumed.json()["status"] == "queued"

    bad = _post(client, "/api/evaluations", {**body, "methods": ["telepathy"]}, secret, bearer)
    assert bad.status_code == 400 and bad.json()["detail"].startswith("methods: ")
    no_tasks = _post(client, "/api/evaluations", {**body, "pairs_from": "notes"}, secret, bearer)
    assert no_tasks.status_code == 400 and "Choose the tasks" in no_tasks.json()["detail"]


def test_a_training_run_takes_the_presets_settings_and_the_bodys_overrides(
    client, researcher, gold, make_token, bearer
):
    _, secret = make_token(researcher, [gold["project"]])
    body = {
        "preset": "sft",
        "name": "api sft",
        "model_version": gold["model"].pk,
        "split_corpus": gold["corpus"].pk,
        "split_test_ratio": 0.5,
        "config": {"train": {"max_steps": 3}},
    }
    answer = _post(client, "/api/training-runs", body, secret, bearer)
    assert answer.status_code == 202, answer.json()
    run = TrainingRun.objects.get(pk=answer.json()["id"])
    assert (run.kind, run.preset, run.name, run.status) == ("sft", "sft", "api sft", "queued")
    assert run.config["train"]["max_steps"] == 3 and run.split.corpus_id == gold["corpus"].pk
    assert run.created_by == researcher

    unknown = _post(client, "/api/training-runs", {**body, "config": {"train": {"warp": 9}}}, secret, bearer)
    assert unknown.status_code == 400 and "warp" in unknown.json()["detail"]
    no_preset = _post(client, "/api/training-runs", {**body, "preset": "magic"}, secret, bearer)
    assert no_preset.status_code == 400 and "magic" in no_preset.json()["detail"]
    no_dataset = _post(client, "/api/training-runs", {**body, "preset": "dsm-full"}, secret, bearer)
    assert no_dataset.status_code == 400 and "dataset" in no_dataset.json()["detail"]
    assert TrainingRun.objects.count() == 1
