"""Training runs and relevance evaluations logged to an MLflow tracking server, when
settings.MLFLOW_TRACKING_URI is set (unset: nothing is sent). When a run's or an evaluation's task
ends (the workers' task_postrun, webapp.integrations.events: `log_unit`), it becomes one MLflow run in its
project's own experiment (`Project.mlflow_experiment`: MLFLOW_EXPERIMENT_PREFIX + slug, default
`decselfmask-<project slug>`), status FINISHED, FAILED or KILLED, but only when the project's admin
turned tracking on (`Project.mlflow_tracking`, off by default; `tracks`). With authentication on
the server (MLflow's basic-auth app), the workers log as MLFLOW_TRACKING_USERNAME; each project's
group is given access to its experiment and registered models with MLflow's own permissions:

* a training run: its configuration as params (flattened `section.key`, plus kind, seed and
  model_version), its per-step metrics (RunMetric rows: `<phase>/loss`, `<phase>/lr`,
  `<phase>/tokens_per_s`), its final results (numeric leaves of `results` under `result/`, at its
  last step) and tags (dsm.run_id, dsm.kind, dsm.project, `mlflow.source.git.commit` = its code
  version);
* a relevance evaluation: its configuration as params (methods, explains, templates, configs,
  profile, max_pairs, seed, pairs_from, faithfulness, corpus, model_version), the numeric leaves of
  its `result` as metrics under `result/` (each configuration's group under its config key:
  `result/groups/<config key>/auc`, `result/baselines/random/auc`, ...) and tags
  (dsm.evaluation_id, dsm.kind, dsm.project, `mlflow.source.git.commit` = the worker's code).

A training run that ends done with a trained model (`produced_model`) also registers it in
MLflow's model registry: registered model `decselfmask-<project slug>-<run kind>` (characters
other than letters, digits, `_` and `-` become `-`), one new version per run, linked to the
MLflow run, tagged with the app's run id, model version id and name and storage location
(dsm.path), and the alias `run-<app run id>` (`models:/decselfmask-ward-dsm@run-12`; MLflow's own
`models:/<name>/latest` is the newest version, which is why `latest` is no alias MLflow allows).
The version's source is the model's storage URI when it is object storage (s3://...); a local
folder or file:// URI, which MLflow refuses as a source outside the run's artifacts, becomes
`runs:/<mlflow run>/model` and stays readable in dsm.path.

Where it went is kept for the pages' links (`run_url`, `model_url`): a run's
provenance["mlflow"], an evaluation's result["mlflow"] ({experiment, experiment_id, run_id, and
for a registered model registered_model: {name, version, alias}}); a run's log says it too.
No note text: configurations, numbers and ids only. A tracking server that is away or refuses is
a warning (on the run's log; for an evaluation in the workers' log), never a failure.

A training run whose corpora are not all de-identified is logged (and its model registered) only
when a project admin confirmed its launch (webapp.deid.gate: the run's RELEASE_IDENTIFIABLE row);
otherwise nothing is sent, and its log says why. That check is the training app's
(webapp.training.runs.mlflow_refusal), registered here when the app starts (`hold_back_when`):
this module imports no app above it."""

from __future__ import annotations

import logging
import math
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext_noop

from webapp.lib import storage
from webapp.lib.code_version import code_version
from webapp.lib.mlflow_rest import Client, MlflowError

log = logging.getLogger(__name__)

STATUS = {"done": "FINISHED", "failed": "FAILED", "cancelled": "KILLED"}
_KEY = re.compile(r"[^\w\-. /]")  # the characters MLflow accepts in a key
_NAME = re.compile(r"[^\w\-]")  # safe in a registered model's name and in an alias
MAX_NAME = 250

# What a training run's log says of MLflow, stored in English and shown in the reader's language
# (webapp.training.log_text lists these templates; the writers below format them)
NOT_LOGGED = gettext_noop("Not logged to MLflow: %(reason)s")
LOGGED = gettext_noop("Logged to MLflow (%(experiment)s): run %(run)s")
REGISTERED = gettext_noop("Registered in MLflow as %(name)s version %(version)s (alias %(alias)s)")
NOT_REGISTERED = gettext_noop("Not registered in MLflow's model registry: %(reason)s")


@dataclass(frozen=True)
class Logged:
    experiment: str
    experiment_id: str
    run_id: str

    def record(self) -> dict:
        return {"experiment": self.experiment, "experiment_id": self.experiment_id, "run_id": self.run_id}


def tracking_uri() -> str:
    return getattr(settings, "MLFLOW_TRACKING_URI", "") or ""


def client() -> Client:
    return Client(tracking_uri(), settings.MLFLOW_TRACKING_USERNAME, settings.MLFLOW_TRACKING_PASSWORD)


def tracks(project) -> bool:
    """Whether anything of `project` may be sent: a tracking server is set and the project's admin
    turned tracking on. A unit of no project is never sent."""
    return bool(tracking_uri()) and project is not None and project.mlflow_tracking


def log_unit(kind_name: str, unit) -> str | None:
    """Log an ended unit of long work of a kind MLflow records (webapp.lifecycle.kinds names);
    returns the MLflow run id, None for other kinds, unended units, MLflow off or refused."""
    logger = {"training run": log_run, "evaluation": log_evaluation}.get(kind_name)
    return logger(unit) if logger else None


def log_run(run) -> str | None:
    """Log an ended training run (and register its trained model); returns the MLflow run id."""
    if run.status not in STATUS:
        return None
    project = _project(run)
    if not tracks(project):
        return None

    def warn(message: str) -> None:
        run.logs.create(level="warning", message=message[:500])

    if refused := _held_back(run):
        _warn(run, refused, warn)
        return None

    params = _params(run.config)
    params.update({"kind": run.kind, "seed": run.seed, "model_version": run.model_version_id})
    metrics = []
    for phase, step, loss, lr, speed in run.metrics.order_by("step", "pk").values_list(
        "phase", "step", "loss", "lr", "tokens_per_s"
    ):
        for name, value in (("loss", loss), ("lr", lr), ("tokens_per_s", speed)):
            if value is not None and math.isfinite(value):
                metrics.append((_key(f"{phase}/{name}"), value, step))
    metrics += _results(run.results, run.step)
    tags = {"dsm.run_id": run.pk, "dsm.kind": run.kind, "mlflow.source.git.commit": run.code_version or ""}
    logged = _send(run, project, run.name or f"run {run.pk}", params, metrics, tags, warn)
    if logged is None:
        return None
    run.logs.create(level="info", message=(LOGGED % {"experiment": logged.experiment, "run": logged.run_id})[:500])
    record = logged.record()
    if run.status == "done" and run.produced_model_id:
        registered = _register(run, project, logged, warn)
        if registered:
            record["registered_model"] = registered
            run.logs.create(
                level="info",
                message=(REGISTERED % registered)[:500],
            )
    run.provenance = {**(run.provenance or {}), "mlflow": record}
    run.save(update_fields=["provenance"])
    return logged.run_id


def log_evaluation(evaluation) -> str | None:
    """Log an ended relevance evaluation; returns the MLflow run id."""
    if evaluation.status not in STATUS:
        return None
    project = _project(evaluation)
    if not tracks(project):
        return None
    configs = evaluation.configs or []

    def distinct(field: str) -> str:
        return ",".join(dict.fromkeys(str(c[field]) for c in configs if c.get(field) is not None))

    params = {
        "methods": distinct("method"),
        "explains": distinct("explain"),
        "templates": distinct("template"),
        "configs": len(configs),
        "profile": str(evaluation.profile),
        "max_pairs": evaluation.max_pairs if evaluation.max_pairs is not None else "all",
        "seed": evaluation.seed,
        "pairs_from": evaluation.pairs_from,
        "faithfulness": evaluation.faithfulness,
        "corpus": evaluation.corpus_id,
        "model_version": evaluation.model_version_id,
    }
    result = dict(evaluation.result or {})
    result.pop("mlflow", None)  # where an earlier attempt was logged: no metric
    # groups are a list: keyed by their configuration, a metric keeps its name across evaluations
    result["groups"] = {
        str(group.get("config_key") or index): group for index, group in enumerate(result.get("groups") or [])
    }
    version = code_version(settings.BASE_DIR, settings.CODE_VERSION)
    tags = {
        "dsm.evaluation_id": evaluation.pk,
        "dsm.kind": "evaluation",
        "mlflow.source.git.commit": "" if version == "unknown" else version,
    }
    logged = _send(evaluation, project, f"evaluation {evaluation.pk}", params, _results(result, 0), tags)
    if logged is None:
        return None
    evaluation.result = {**(evaluation.result or {}), "mlflow": logged.record()}
    evaluation.save(update_fields=["result"])
    return logged.run_id


def run_url(record: dict | None) -> str:
    """The MLflow UI page of a logged run ("" when it was not logged or MLflow is off)."""
    base = _ui_base()
    if not base or not (record or {}).get("run_id"):
        return ""
    return f"{base}/#/experiments/{record['experiment_id']}/runs/{record['run_id']}"


def model_url(record: dict | None) -> str:
    """The MLflow UI page of the registered model version of a logged run ("" when none)."""
    model = (record or {}).get("registered_model")
    base = _ui_base()
    if not base or not model:
        return ""
    return f"{base}/#/models/{urllib.parse.quote(model['name'])}/versions/{model['version']}"


def _ui_base() -> str:
    # MLFLOW_UI_URL: the address browsers reach when the workers' tracking URI is an inner one
    base = (getattr(settings, "MLFLOW_UI_URL", "") or tracking_uri()).rstrip("/")
    return base if base.startswith(("http://", "https://")) else ""


def _send(unit, project, name: str, params: dict, metrics: list, tags: dict, warn: Callable | None = None):
    """One MLflow run holding an ended unit; None (a warning) when the server is away or refuses."""
    experiment = project.mlflow_experiment
    server = client()
    try:
        experiment_id = server.experiment_id(experiment)
        run_id = server.create_run(experiment_id, name, {**tags, "dsm.project": project.slug})
        server.log(run_id, params=params, metrics=metrics)
        server.end_run(run_id, STATUS[unit.status])
    except MlflowError as exc:
        _warn(unit, NOT_LOGGED % {"reason": exc}, warn)
        return None
    return Logged(experiment, experiment_id, run_id)


def _register(run, project, logged: Logged, warn: Callable) -> dict | None:
    """The run's trained model as a new version of its registered model, under the alias run-<id>."""
    model = run.produced_model
    name = _NAME.sub("-", f"{project.mlflow_experiment}-{run.kind}")[:MAX_NAME]
    alias = f"run-{run.pk}"
    location = storage.safe(model.path)  # never a credential in MLflow
    # MLflow refuses a local path as a source outside the run's artifacts
    source = location if storage.scheme(model.path) not in ("", "file") else f"runs:/{logged.run_id}/model"
    tags = {"dsm.run_id": run.pk, "dsm.model_version_id": model.pk, "dsm.model_name": model.name, "dsm.path": location}
    server = client()
    try:
        server.ensure_registered_model(name)
        version = server.create_model_version(name, source, logged.run_id, tags)
        server.set_alias(name, alias, version)
    except MlflowError as exc:
        _warn(run, NOT_REGISTERED % {"reason": exc}, warn)
        return None
    return {"name": name, "version": str(version), "alias": alias}


# Checks `(run) -> reason` that keep an ended run (and its model) out of MLflow, registered by the
# apps above when they start (webapp.training.apps: the de-identification gate).
_HOLDS: list[Callable] = []


def hold_back_when(check: Callable) -> None:
    """Register a check: a run for which it gives a reason is not sent, and its log says why."""
    if check not in _HOLDS:
        _HOLDS.append(check)


def _held_back(run) -> str:
    """The first reason a registered check gives for keeping `run` out of MLflow; "" when it may go."""
    return next((reason for check in _HOLDS if (reason := check(run))), "")


def _warn(unit, message: str, warn: Callable | None) -> None:
    log.warning("%s: %s", unit, message)
    if warn is not None:
        warn(message)


def _params(config: dict) -> dict:
    return {_key(k): v for k, v in _flat(config) if not isinstance(v, (dict, list)) or v}


def _results(tree: dict, step: int) -> list[tuple]:
    """The numeric leaves of `tree` as final metrics `result/<path>` at `step`."""
    return [
        (_key(f"result/{k}"), v, step)
        for k, v in _flat(tree or {}, sep="/")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    ]


def _project(unit):
    from webapp.projects.models import Project
    from webapp.projects.scoping import project_id_of

    return Project.objects.filter(pk=project_id_of(unit)).first()


def _flat(value, prefix: str = "", sep: str = "."):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _flat(inner, f"{prefix}{sep}{key}" if prefix else str(key), sep)
    else:
        yield prefix, value


def _key(text: str) -> str:
    return _KEY.sub("_", text)[:250]
