"""Need-to-know in MLflow, against a real `mlflow server` with authentication on (its basic-auth
app, default permission NO_PERMISSIONS): the workers log each project to an experiment of its own
as a service account, and README's recipe (a user per project group, READ on that project's
experiment and registered models, granted with MLflow's own permissions API) lets cardiology read
its runs and model while oncology's answer 403. Skipped (failed in CI) without the server, as in
test_mlflow.py."""

import base64
import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.webapp.integrations.mlflow_server import running_mlflow_server
from webapp.corpus.models import Corpus
from webapp.integrations import mlflow_log
from webapp.lib.mlflow_rest import Client
from webapp.pipeline.models import ModelVersion
from webapp.projects.models import Project
from webapp.training.models import LabeledSplit, TrainingRun

ADMIN = ("mlflow-admin", "admin-password-of-some-length")
WORKERS = ("dsm-workers", "workers-password-of-some-length")
CARDIOLOGY = ("cardiology-group", "cardiology-password-of-length")
GRANT = "3.0/mlflow/users/permissions/grant"  # MLflow 3's per-user grant (README's recipe)


@pytest.fixture(scope="module")
def secured_mlflow(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow-auth")
    config = folder / "basic_auth.ini"
    config.write_text(
        "[mlflow]\n"
        "default_permission = NO_PERMISSIONS\n"
        f"database_uri = sqlite:///{folder}/auth.db\n"
        f"admin_username = {ADMIN[0]}\n"
        f"admin_password = {ADMIN[1]}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    # the auth app's CSRF key must be set, and the same for every server process
    env = {"MLFLOW_AUTH_CONFIG_PATH": str(config), "MLFLOW_FLASK_SERVER_SECRET_KEY": "test-only-key"}
    with running_mlflow_server(folder, "--app-name", "basic-auth", env=env) as url:
        for username, password in (WORKERS, CARDIOLOGY):
            _as(url, ADMIN, "POST", "users/create", {"username": username, "password": password})
        yield url


def _as(url: str, account: tuple[str, str], method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """(status, JSON) of one REST call as `account`; a refusal is a status, not an exception."""
    token = base64.b64encode(f"{account[0]}:{account[1]}".encode()).decode()
    target = f"{url}/api/{path if path.startswith('3.0/') else '2.0/mlflow/' + path}"
    data = None
    if method == "GET" and body:
        target += "?" + urllib.parse.urlencode(body)
    elif body is not None:
        data = json.dumps(body).encode()
    request = urllib.request.Request(
        target,
        data=data,
        method=method,
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read()[:300].decode(errors="replace")}


def _trained_run(corpus) -> TrainingRun:
    base = ModelVersion.objects.create(name=f"base of {corpus.pk}", family="llama", path="/nowhere")
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(
        name="sft", kind="sft", model_version=base, split=split, status="done", step=1, config={}
    )
    run.produced_model = ModelVersion.objects.create(
        name=f"sft-run{run.pk}", family="llama", path=f"/srv/models/run-{run.pk}", parent=base
    )
    run.save(update_fields=["produced_model"])
    return run


def test_each_project_group_reads_its_own_experiment_and_models_only(secured_mlflow, own, other, settings):
    settings.MLFLOW_TRACKING_URI = secured_mlflow
    settings.MLFLOW_TRACKING_USERNAME, settings.MLFLOW_TRACKING_PASSWORD = WORKERS
    Project.objects.filter(pk__in=[own["project"].pk, other["project"].pk]).update(mlflow_tracking=True)
    cardiology_run = mlflow_log.log_run(_trained_run(own["corpus"]))
    oncology_run = mlflow_log.log_run(_trained_run(Corpus.objects.get(pk=other["corpus_id"])))
    assert cardiology_run and oncology_run  # the service account logged both

    # README's recipe, as the MLflow admin: READ on cardiology's experiment and registered model
    experiment = Client(secured_mlflow, *WORKERS).get_run(cardiology_run)["info"]["experiment_id"]
    model = f"decselfmask-{own['project'].slug}-sft"
    for resource_type, resource_id in (("experiment", experiment), ("registered_model", model)):
        grant = {"username": CARDIOLOGY[0], "resource_type": resource_type, "resource_id": resource_id}
        answer = _as(secured_mlflow, ADMIN, "POST", GRANT, {**grant, "permission": "READ"})
        assert answer[0] == 200, answer

    assert _as(secured_mlflow, CARDIOLOGY, "GET", "runs/get", {"run_id": cardiology_run})[0] == 200
    assert _as(secured_mlflow, CARDIOLOGY, "GET", "registered-models/get", {"name": model})[0] == 200
    assert _as(secured_mlflow, CARDIOLOGY, "GET", "runs/get", {"run_id": oncology_run})[0] == 403
    oncology_model = f"decselfmask-{other['project'].slug}-sft"
    assert _as(secured_mlflow, CARDIOLOGY, "GET", "registered-models/get", {"name": oncology_model})[0] == 403
    # and READ is read: cardiology's group cannot change what the workers logged
    tag = {"run_id": cardiology_run, "key": "edited", "value": "yes"}
    assert _as(secured_mlflow, CARDIOLOGY, "POST", "runs/set-tag", tag)[0] == 403


def test_without_credentials_the_secured_server_refuses_and_the_run_says_so(secured_mlflow, own, settings):
    from webapp.training.models import RunLog

    settings.MLFLOW_TRACKING_URI = secured_mlflow
    settings.MLFLOW_TRACKING_USERNAME = settings.MLFLOW_TRACKING_PASSWORD = ""
    Project.objects.filter(pk=own["project"].pk).update(mlflow_tracking=True)
    run = _trained_run(own["corpus"])
    assert mlflow_log.log_run(run) is None
    assert "401" in RunLog.objects.get(run=run, level="warning").message
