"""Training runs (and their trained models, registered with an alias) and relevance evaluations
logged to a real `mlflow server` (SQLite backend store, local artifact folder; `mlflow_server` in
tests/conftest.py, one for the whole run), and the pages' links to them. The server needs the full
`mlflow` package, whose pins clash with ours (pyarrow, gunicorn): it is found as MLFLOW_SERVER_BIN,
else `mlflow` on the PATH, else the test is skipped saying so (the app itself only speaks MLflow's
REST API: webapp.lib.mlflow_rest)."""

from types import SimpleNamespace

import pytest
from django.urls import reverse

from webapp.evaluation.models import RelevanceEvaluation
from webapp.integrations import events, mlflow_log
from webapp.lib.mlflow_rest import Client, MlflowError
from webapp.pipeline.models import ModelVersion, PeakProfile
from webapp.projects.models import Project
from webapp.training.models import LabeledSplit, RunLog, RunMetric, TrainingRun


@pytest.fixture(autouse=True)
def tracking_on(own):
    """The project's admin turned tracking on (off by default: see the tests that say so)."""
    Project.objects.filter(pk=own["project"].pk).update(mlflow_tracking=True)


@pytest.fixture
def ended_run(own):
    split = LabeledSplit.objects.create(corpus=own["corpus"], seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(
        name="sft small",
        kind="sft",
        model_version=own["model"],
        split=split,
        status="done",
        step=3,
        config={"optim": {"lr": 0.0002, "epochs": 1}, "lora": {"r": 8}},
        results={
            "macro_f1": {"estimate": 0.5, "low": 0.25, "high": 0.75},
            "per_task": {"heart-rate": 0.75},
            "held_out": {"macro_f1": None, "tasks": []},
            "n_test": 40,
            "note": "text is not a metric",
        },
        code_version="abc123",
    )
    for step, loss in ((1, 2.0), (2, 1.5), (3, 1.25)):
        RunMetric.objects.create(run=run, phase="train", step=step, loss=loss, lr=0.0002)
    return run


def test_a_run_is_not_logged_when_mlflow_is_off(ended_run, settings):
    settings.MLFLOW_TRACKING_URI = ""
    assert mlflow_log.log_run(ended_run) is None
    assert not RunLog.objects.filter(run=ended_run).exists()


def test_a_tracking_server_away_is_a_warning_on_the_run(ended_run, settings):
    settings.MLFLOW_TRACKING_URI = "http://127.0.0.1:9"
    assert mlflow_log.log_run(ended_run) is None
    assert RunLog.objects.get(run=ended_run).level == "warning"


def test_nothing_is_sent_until_the_projects_admin_turns_tracking_on(mlflow_server, ended_run, own, settings):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    Project.objects.filter(pk=own["project"].pk).update(mlflow_tracking=False)
    assert mlflow_log.log_run(ended_run) is None
    assert not RunLog.objects.filter(run=ended_run).exists()
    with pytest.raises(MlflowError, match="RESOURCE_DOES_NOT_EXIST"):  # not even its experiment was made
        Client(mlflow_server)._call(
            "GET", "experiments/get-by-name", {"experiment_name": own["project"].mlflow_experiment}
        )


def test_params_metrics_per_step_and_results_reach_mlflow(mlflow_server, ended_run, own, settings):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    run_id = mlflow_log.log_run(ended_run)
    client = Client(mlflow_server)
    logged = client.get_run(run_id)
    experiment = client._call("GET", "experiments/get", {"experiment_id": logged["info"]["experiment_id"]})
    assert experiment["experiment"]["name"] == f"decselfmask-{own['project'].slug}"  # the project's own
    params = {p["key"]: p["value"] for p in logged["data"]["params"]}
    assert params["optim.lr"] == "0.0002" and params["lora.r"] == "8" and params["kind"] == "sft"
    history = client.metric_history(run_id, "train/loss")
    assert [(m["step"], m["value"]) for m in sorted(history, key=lambda m: m["step"])] == [
        (1, 2.0),
        (2, 1.5),
        (3, 1.25),
    ]
    metrics = {m["key"]: m["value"] for m in logged["data"]["metrics"]}
    assert metrics["result/macro_f1/estimate"] == 0.5 and metrics["result/per_task/heart-rate"] == 0.75
    tags = {t["key"]: t["value"] for t in logged["data"]["tags"]}
    assert tags["dsm.run_id"] == str(ended_run.pk) and tags["mlflow.source.git.commit"] == "abc123"
    assert logged["info"]["status"] == "FINISHED"
    assert run_id in RunLog.objects.get(run=ended_run).message


@pytest.fixture
def trained_run(ended_run):
    ended_run.produced_model = ModelVersion.objects.create(
        name=f"base+sft-run{ended_run.pk}", family="llama", path="/srv/models/run-sft", parent=ended_run.model_version
    )
    ended_run.save(update_fields=["produced_model"])
    return ended_run


@pytest.mark.parametrize(
    ("path", "source"),
    [("/srv/models/run-sft", "runs:/{run_id}/model"), ("s3://models/run-sft", "s3://models/run-sft")],
    ids=["local folder", "object storage"],
)
def test_a_trained_model_is_registered_with_the_alias_of_its_run(
    mlflow_server, own, trained_run, settings, path, source
):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    ModelVersion.objects.filter(pk=trained_run.produced_model_id).update(path=path)
    trained_run.refresh_from_db()
    run_id = mlflow_log.log_run(trained_run)
    name = f"decselfmask-{own['project'].slug}-sft"
    client = Client(mlflow_server)
    version = client.model_version_by_alias(name, f"run-{trained_run.pk}")
    assert version["run_id"] == run_id and version["source"] == source.format(run_id=run_id)
    tags = {t["key"]: t["value"] for t in version["tags"]}
    assert tags["dsm.run_id"] == str(trained_run.pk) and tags["dsm.path"] == path
    assert tags["dsm.model_name"] == trained_run.produced_model.name
    aliases = {a["alias"]: a["version"] for a in client.registered_model(name)["aliases"]}
    assert aliases[f"run-{trained_run.pk}"] == version["version"]
    trained_run.refresh_from_db()
    assert trained_run.provenance["mlflow"]["registered_model"] == {
        "name": name,
        "version": version["version"],
        "alias": f"run-{trained_run.pk}",
    }
    assert [line.level for line in RunLog.objects.filter(run=trained_run)] == ["info", "info"]


def test_a_registry_that_refuses_is_a_warning_and_the_run_stays_logged(
    mlflow_server, trained_run, settings, monkeypatch
):
    settings.MLFLOW_TRACKING_URI = mlflow_server

    def refuse(*args, **kwargs):
        raise MlflowError("MLflow answered 403 to model-versions/create: PERMISSION_DENIED")

    monkeypatch.setattr(Client, "create_model_version", refuse)
    run_id = mlflow_log.log_run(trained_run)
    assert run_id and Client(mlflow_server).get_run(run_id)["info"]["status"] == "FINISHED"
    assert [line.level for line in RunLog.objects.filter(run=trained_run)] == ["info", "warning"]
    trained_run.refresh_from_db()
    assert trained_run.provenance["mlflow"]["run_id"] == run_id
    assert "registered_model" not in trained_run.provenance["mlflow"]


def test_the_run_page_links_to_its_mlflow_run_and_model(mlflow_server, trained_run, settings, client, researcher):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    url = reverse("training:run_detail", args=[trained_run.pk])
    client.force_login(researcher)
    assert "MLflow run" not in client.get(url).content.decode()
    run_id = mlflow_log.log_run(trained_run)
    trained_run.refresh_from_db()
    logged = trained_run.provenance["mlflow"]
    html = client.get(url).content.decode()
    assert f'href="{mlflow_server}/#/experiments/{logged["experiment_id"]}/runs/{run_id}"' in html
    assert ">MLflow run</a>" in html
    model = logged["registered_model"]
    assert f'href="{mlflow_server}/#/models/{model["name"]}/versions/{model["version"]}"' in html
    settings.MLFLOW_UI_URL = "https://mlflow.example.org/"  # browsers reach MLflow elsewhere
    assert f'href="https://mlflow.example.org/#/experiments/{logged["experiment_id"]}/runs/{run_id}"' in (
        client.get(url).content.decode()
    )


@pytest.fixture
def ended_evaluation(own):
    configs = [
        {"method": "attnlrp", "explain": "next", "template": "en", "key": "attnlrp-next-aaaaaaaaaa"},
        {"method": "ig", "explain": "contrastive", "template": "en", "key": "ig-contrastive-bbbbbbbbbb"},
    ]
    groups = [
        {
            "method": "attnlrp",
            "explain": "next",
            "config_key": "attnlrp-next-aaaaaaaaaa",
            "auc": 0.8,
            "auc_ci": [0.7, 0.9],
        },
        {
            "method": "ig",
            "explain": "contrastive",
            "config_key": "ig-contrastive-bbbbbbbbbb",
            "auc": 0.6,
            "auc_vs_next": {"diff": -0.2},
        },
    ]
    return RelevanceEvaluation.objects.create(
        corpus=own["corpus"],
        model_version=own["model"],
        profile=PeakProfile.objects.create(name="mlflow-profile"),
        configs=configs,
        max_pairs=50,
        seed=7,
        faithfulness=True,
        status="done",
        result={
            "groups": groups,
            "baselines": {"uniform": {"auc": 0.5}, "random": {"auc": 0.5, "n_pairs": 2}},
            "recommended": {"choice": {"method": "attnlrp"}, "reason": "highest AUC"},
            "pairs_without_gold": 0,
            "problems": [],
        },
    )


def test_an_ended_evaluation_is_logged_by_the_workers_hook(
    mlflow_server, ended_evaluation, settings, client, researcher
):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    events._after_task(sender=SimpleNamespace(name="workers.evaluation.run_evaluation"), args=[ended_evaluation.pk])
    ended_evaluation.refresh_from_db()
    logged = ended_evaluation.result["mlflow"]
    run = Client(mlflow_server).get_run(logged["run_id"])
    params = {p["key"]: p["value"] for p in run["data"]["params"]}
    assert params["methods"] == "attnlrp,ig" and params["explains"] == "next,contrastive"
    assert params["templates"] == "en" and params["profile"] == "mlflow-profile v1"
    assert (params["max_pairs"], params["seed"], params["pairs_from"], params["faithfulness"]) == (
        "50",
        "7",
        "evidence",
        "True",
    )
    assert params["corpus"] == str(ended_evaluation.corpus_id)
    assert params["model_version"] == str(ended_evaluation.model_version_id)
    metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
    assert metrics == {
        "result/groups/attnlrp-next-aaaaaaaaaa/auc": 0.8,
        "result/groups/ig-contrastive-bbbbbbbbbb/auc": 0.6,
        "result/groups/ig-contrastive-bbbbbbbbbb/auc_vs_next/diff": -0.2,
        "result/baselines/uniform/auc": 0.5,
        "result/baselines/random/auc": 0.5,
        "result/baselines/random/n_pairs": 2,
        "result/pairs_without_gold": 0,
    }
    tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
    assert tags["dsm.evaluation_id"] == str(ended_evaluation.pk) and tags["dsm.kind"] == "evaluation"
    assert run["info"]["status"] == "FINISHED"
    client.force_login(researcher)
    html = client.get(reverse("evaluation:detail", args=[ended_evaluation.pk])).content.decode()
    assert f'href="{mlflow_server}/#/experiments/{logged["experiment_id"]}/runs/{logged["run_id"]}"' in html


def test_an_evaluation_the_tracking_server_misses_is_a_warning_in_the_log(ended_evaluation, settings, caplog):
    settings.MLFLOW_TRACKING_URI = "http://127.0.0.1:9"
    assert mlflow_log.log_evaluation(ended_evaluation) is None
    assert any(r.levelname == "WARNING" and "Not logged to MLflow" in r.getMessage() for r in caplog.records)
    ended_evaluation.refresh_from_db()
    assert "mlflow" not in ended_evaluation.result
