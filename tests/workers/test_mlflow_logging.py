"""A real worker logs the run it ended to a real MLflow tracking server: a "training" worker
process (tests/workers/conftest.py) trains a tiny random Llama (a 2-step LoRA SFT run, as in
tests/workers/test_training.py) and, in its Celery `task_postrun` (webapp.integrations.events ->
webapp.integrations.mlflow_log), logs it to the run's one `mlflow server` (`mlflow_server` in
tests/conftest.py, shared with tests/webapp/integrations/test_mlflow.py): the project's admin
turned tracking on and MLFLOW_TRACKING_URI is set in the worker's environment only (this test
process never sends anything). tests/webapp/integrations/test_mlflow.py drives the logging
in-process; this is the path the product takes. (The webhook counterpart, a real worker delivering
to a receiver, is tests/workers/test_webhook_outbox.py.) The server is found as MLFLOW_SERVER_BIN:
skipped without one, a failure in CI (DSM_REQUIRE_MLFLOW=1)."""

import pytest

from tests.webapp.training.factories import make_labeled_corpus, make_model_version
from tests.workers.conftest import wait_for
from webapp.lib.mlflow_rest import Client
from webapp.pipeline.models import JobStatus
from webapp.projects.models import Project
from webapp.training import runs
from webapp.training.models import RunKind, RunLog, RunMetric, TrainingRun

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SMALL = {"max_steps": 2, "effective_batch_size": 2, "micro_batch_size": 1, "max_length": 160, "checkpoint_every": 1}


def _logs(run) -> list[str]:
    return list(RunLog.objects.filter(run=run).values_list("message", flat=True))


def test_a_real_worker_logs_the_run_it_ended_to_mlflow(start_worker, mlflow_server, tiny_model_dir, settings, tmp_path):
    from workers.celery_app import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("training")
    settings.DATA_DIR = tmp_path / "data"
    settings.MLFLOW_TRACKING_URI = ""  # this process logs nothing: what reaches MLflow is the worker's
    corpus = make_labeled_corpus(16)
    Project.objects.filter(pk=corpus.project_id).update(mlflow_tracking=True)  # the project's admin's choice
    project = Project.objects.get(pk=corpus.project_id)
    spec = runs.RunSpec(
        kind=RunKind.SFT,
        preset="sft",
        name="worker sft",
        model_version=make_model_version(tiny_model_dir),
        split_corpus=corpus,
        config={"train": SMALL, "evaluation": {"n_resamples": 50}},
    )
    run = runs.launch(spec)
    worker = start_worker(
        "training", TRAINING_POLL_SECONDS=0.1, DATA_DIR=settings.DATA_DIR, MLFLOW_TRACKING_URI=mlflow_server
    )

    def logged():
        current = TrainingRun.objects.get(pk=run.pk)
        return current.status in (JobStatus.FAILED, JobStatus.CANCELLED) or "mlflow" in (current.provenance or {})

    try:
        wait_for(logged, timeout=150, message="the run ended and logged to MLflow")
    except AssertionError as exc:
        current = TrainingRun.objects.get(pk=run.pk)
        raise AssertionError(f"{exc}: run {current.status} {current.error}\n{_logs(run)}\n{worker.log()}") from None
    run = TrainingRun.objects.get(pk=run.pk)
    assert run.status == JobStatus.DONE and run.produced_model_id, f"{run.error}\n{_logs(run)}\n{worker.log()}"
    record = run.provenance["mlflow"]
    assert record["experiment"] == project.mlflow_experiment

    client = Client(mlflow_server)
    mlflow_run = client.get_run(record["run_id"])
    assert mlflow_run["info"]["status"] == "FINISHED" and mlflow_run["info"]["experiment_id"] == record["experiment_id"]
    tags = {t["key"]: t["value"] for t in mlflow_run["data"]["tags"]}
    assert tags["dsm.run_id"] == str(run.pk) and tags["dsm.kind"] == "sft" and tags["mlflow.source.git.commit"]
    params = {p["key"]: p["value"] for p in mlflow_run["data"]["params"]}
    assert params["kind"] == "sft" and params["train.max_steps"] == "2"
    history = client.metric_history(record["run_id"], "train/loss")
    steps = list(RunMetric.objects.filter(run=run, phase="train").values_list("step", "loss"))
    assert len(steps) == 2 and sorted(m["step"] for m in history) == [step for step, _ in steps]
    assert [m["value"] for m in sorted(history, key=lambda m: m["step"])] == pytest.approx([loss for _, loss in steps])
    metrics = {m["key"]: m["value"] for m in mlflow_run["data"]["metrics"]}
    assert metrics["result/macro_f1/estimate"] == pytest.approx(run.macro_f1)

    registered = record["registered_model"]  # the trained LoRA model, under the alias of its run
    assert registered["alias"] == f"run-{run.pk}"
    version = client.model_version_by_alias(registered["name"], registered["alias"])
    assert version["run_id"] == record["run_id"] and version["version"] == registered["version"]
    assert any(f"run {record['run_id']}" in line for line in _logs(run))
    assert not RunLog.objects.filter(run=run, level__in=("warning", "error")).exists(), _logs(run)
