"""Training runs logged to an MLflow tracking server, when settings.MLFLOW_TRACKING_URI is set
(unset: nothing is sent, nothing is imported). When a training run's task ends (the workers'
task_postrun, webapp.api.events), the run's configuration (params, flattened `section.key`), its
per-step metrics (RunMetric rows: `<phase>/loss`, `<phase>/lr`, `<phase>/tokens_per_s`), its final
results (numeric leaves of `results`, flattened under `result/`) and tags (the app's run id, kind,
project, code version as `mlflow.source.git.commit`) go to one MLflow run in the experiment
MLFLOW_EXPERIMENT_NAME (default `decselfmask-<project slug>`). The MLflow run id is written to the
run's log (the run page). No note text: configurations, numbers and ids only. A tracking server
that is away is logged as a warning on the run; it never fails the run."""

from __future__ import annotations

import logging
import math
import re

from django.conf import settings

from webapp.lib.mlflow_rest import Client, MlflowError

log = logging.getLogger(__name__)

STATUS = {"done": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
_KEY = re.compile(r"[^\w\-. /]")  # the characters MLflow accepts in a key


def tracking_uri() -> str:
    return getattr(settings, "MLFLOW_TRACKING_URI", "") or ""


def _flat(value, prefix: str = "", sep: str = "."):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flat(inner, f"{prefix}{sep}{key}" if prefix else str(key), sep)
    else:
        yield prefix, value


def _key(text: str) -> str:
    return _KEY.sub("_", text)[:250]


def log_run(run) -> str | None:
    """Log an ended training run; returns the MLflow run id (None when MLflow is off or refused)."""
    uri = tracking_uri()
    if not uri or run.status not in STATUS:
        return None
    from webapp.projects.models import Project
    from webapp.projects.scoping import project_id_of
    from webapp.training.models import RunLog

    project = Project.objects.filter(pk=project_id_of(run)).first()
    experiment = getattr(settings, "MLFLOW_EXPERIMENT_NAME", "") or f"decselfmask-{project.slug if project else 'none'}"
    params = {_key(k): v for k, v in _flat(run.config) if not isinstance(v, (dict, list)) or v}
    params.update({"kind": run.kind, "seed": run.seed, "model_version": run.model_version_id})
    metrics = []
    for phase, step, loss, lr, speed in run.metrics.order_by("step", "pk").values_list(
        "phase", "step", "loss", "lr", "tokens_per_s"
    ):
        for name, value in (("loss", loss), ("lr", lr), ("tokens_per_s", speed)):
            if value is not None and math.isfinite(value):
                metrics.append((_key(f"{phase}/{name}"), value, step))
    final = [
        (_key(f"result/{k}"), v, run.step)
        for k, v in _flat(run.results, sep="/")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]
    tags = {
        "dsm.run_id": run.pk,
        "dsm.kind": run.kind,
        "dsm.project": project.slug if project else "",
        "mlflow.source.git.commit": run.code_version or "",
    }
    client = Client(uri)
    try:
        mlflow_run = client.create_run(client.experiment_id(experiment), run.name or f"run {run.pk}", tags)
        client.log(mlflow_run, params=params, metrics=[*metrics, *final])
        client.end_run(mlflow_run, STATUS[run.status])
    except MlflowError as exc:
        log.warning("run %s: not logged to MLflow (%s)", run.pk, exc)
        RunLog.objects.create(run=run, level="warning", message=f"Not logged to MLflow: {exc}"[:500])
        return None
    RunLog.objects.create(run=run, level="info", message=f"Logged to MLflow ({experiment}): run {mlflow_run}")
    return mlflow_run
