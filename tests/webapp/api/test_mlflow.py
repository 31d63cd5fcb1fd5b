"""Training runs logged to a real `mlflow server` (SQLite backend store, local artifact folder)
started by the test. The server needs the full `mlflow` package, whose pins clash with ours
(pyarrow, gunicorn): it is found as MLFLOW_SERVER_BIN, else `mlflow` on the PATH, else the test
is skipped saying so (the app itself only speaks MLflow's REST API: webapp.lib.mlflow_rest)."""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest

from webapp.api import mlflow_log
from webapp.lib.mlflow_rest import Client
from webapp.training.models import LabeledSplit, RunLog, RunMetric, TrainingRun


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    binary = os.environ.get("MLFLOW_SERVER_BIN") or shutil.which("mlflow")
    if not binary:
        message = "no `mlflow` executable (set MLFLOW_SERVER_BIN to a full mlflow install's `mlflow`)"
        if os.environ.get("DSM_REQUIRE_MLFLOW"):  # .ci/run installs one: there, missing is a failure
            pytest.fail(message)
        pytest.skip(message)
    folder = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    server = subprocess.Popen(
        [
            binary,
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{folder}/mlflow.db",
            "--default-artifact-root",
            str(folder / "artifacts"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: its server workers end with it
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail("mlflow server did not start")
            time.sleep(0.5)
    yield url
    os.killpg(server.pid, signal.SIGTERM)
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=10)


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
        results={"macro_f1": 0.5, "per_task": {"heart-rate": {"f1": 0.75}}, "note": "text is not a metric"},
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


def test_params_metrics_per_step_and_results_reach_mlflow(mlflow_server, ended_run, settings):
    settings.MLFLOW_TRACKING_URI = mlflow_server
    settings.MLFLOW_EXPERIMENT_NAME = "api-test"
    run_id = mlflow_log.log_run(ended_run)
    client = Client(mlflow_server)
    logged = client.get_run(run_id)
    params = {p["key"]: p["value"] for p in logged["data"]["params"]}
    assert params["optim.lr"] == "0.0002" and params["lora.r"] == "8" and params["kind"] == "sft"
    history = client.metric_history(run_id, "train/loss")
    assert [(m["step"], m["value"]) for m in sorted(history, key=lambda m: m["step"])] == [
        (1, 2.0),
        (2, 1.5),
        (3, 1.25),
    ]
    metrics = {m["key"]: m["value"] for m in logged["data"]["metrics"]}
    assert metrics["result/macro_f1"] == 0.5 and metrics["result/per_task/heart-rate/f1"] == 0.75
    tags = {t["key"]: t["value"] for t in logged["data"]["tags"]}
    assert tags["dsm.run_id"] == str(ended_run.pk) and tags["mlflow.source.git.commit"] == "abc123"
    assert logged["info"]["status"] == "FINISHED"
    assert run_id in RunLog.objects.get(run=ended_run).message
