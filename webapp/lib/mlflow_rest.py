"""A small client of MLflow's tracking and model registry REST API (/api/2.0/mlflow/...): enough
to make an experiment, a run, log params, metrics and tags in batches and end the run, and to
register a model version under an alias. No Django, and no `mlflow` package: the full package
pins versions that clash with ours (pyarrow, gunicorn), and these few calls are the whole of what
the app sends. Errors are MlflowError with the server's message."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable

# MLflow's limits for one log-batch request
MAX_METRICS = 1000
MAX_PARAMS = 100
MAX_ENTITIES = 1000
MAX_PARAM_VALUE = 6000
TIMEOUT_SECONDS = 30


class MlflowError(Exception):
    """The tracking server refused a call or could not be reached."""


class Client:
    def __init__(self, tracking_uri: str, username: str = "", password: str = ""):
        """`username`/`password`: an account of a server whose authentication is on (MLflow's
        basic-auth app); empty: no Authorization header."""
        self.base = tracking_uri.rstrip("/") + "/api/2.0/mlflow/"
        self.headers = {"Content-Type": "application/json"}
        if username:
            token = base64.b64encode(f"{username}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"

    def _call(self, method: str, path: str, body: dict | None = None) -> dict:
        url = self.base + path
        data = None
        if method == "GET" and body:
            url += "?" + urllib.parse.urlencode(body)
        elif body is not None:
            data = json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise MlflowError(f"MLflow answered {exc.code} to {path}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise MlflowError(f"MLflow at {self.base} could not be reached ({type(exc).__name__})") from None

    def experiment_id(self, name: str) -> str:
        """The id of the experiment `name`, made when it does not exist yet."""
        try:
            return self._call("GET", "experiments/get-by-name", {"experiment_name": name})["experiment"][
                "experiment_id"
            ]
        except MlflowError as exc:
            if "RESOURCE_DOES_NOT_EXIST" not in str(exc):
                raise
        return self._call("POST", "experiments/create", {"name": name})["experiment_id"]

    def create_run(self, experiment_id: str, name: str, tags: dict[str, str]) -> str:
        body = {
            "experiment_id": experiment_id,
            "run_name": name,
            "start_time": int(time.time() * 1000),
            "tags": [{"key": k, "value": str(v)} for k, v in tags.items()],
        }
        return self._call("POST", "runs/create", body)["run"]["info"]["run_id"]

    def log(self, run_id: str, *, params: dict[str, str] = None, metrics: Iterable[tuple] = ()) -> None:
        """params {key: value}; metrics (key, value, step) in order; sent in batches within MLflow's limits."""
        now = int(time.time() * 1000)
        param_rows = [{"key": k, "value": str(v)[:MAX_PARAM_VALUE]} for k, v in (params or {}).items()]
        for start in range(0, len(param_rows), MAX_PARAMS):
            self._call("POST", "runs/log-batch", {"run_id": run_id, "params": param_rows[start : start + MAX_PARAMS]})
        batch = []
        for key, value, step in metrics:
            batch.append({"key": key, "value": float(value), "timestamp": now, "step": int(step)})
            if len(batch) == MAX_METRICS:
                self._call("POST", "runs/log-batch", {"run_id": run_id, "metrics": batch})
                batch = []
        if batch:
            self._call("POST", "runs/log-batch", {"run_id": run_id, "metrics": batch})

    def end_run(self, run_id: str, status: str) -> None:
        """status: FINISHED, FAILED or KILLED."""
        self._call("POST", "runs/update", {"run_id": run_id, "status": status, "end_time": int(time.time() * 1000)})

    def delete_run(self, run_id: str) -> None:
        """Mark the run deleted (the server keeps it until `mlflow gc` removes it for good)."""
        self._call("POST", "runs/delete", {"run_id": run_id})

    def get_run(self, run_id: str) -> dict:
        return self._call("GET", "runs/get", {"run_id": run_id})["run"]

    def metric_history(self, run_id: str, key: str) -> list[dict]:
        return self._call("GET", "metrics/get-history", {"run_id": run_id, "metric_key": key}).get("metrics", [])

    def ensure_registered_model(self, name: str) -> None:
        """Create the registered model `name` unless it exists (two runs ending at once both may try)."""
        try:
            self._call("POST", "registered-models/create", {"name": name})
        except MlflowError as exc:
            if "RESOURCE_ALREADY_EXISTS" not in str(exc):
                raise

    def registered_model(self, name: str) -> dict:
        return self._call("GET", "registered-models/get", {"name": name})["registered_model"]

    def create_model_version(self, name: str, source: str, run_id: str, tags: dict[str, str]) -> str:
        """A new version of the registered model `name`; returns its number (MLflow counts from 1)."""
        body = {
            "name": name,
            "source": source,
            "run_id": run_id,
            "tags": [{"key": k, "value": str(v)} for k, v in tags.items()],
        }
        return self._call("POST", "model-versions/create", body)["model_version"]["version"]

    def set_alias(self, name: str, alias: str, version: str) -> None:
        """Point `alias` of the registered model `name` at `version` (moved there if it pointed elsewhere)."""
        self._call("POST", "registered-models/alias", {"name": name, "alias": alias, "version": str(version)})

    def model_version_by_alias(self, name: str, alias: str) -> dict:
        return self._call("GET", "registered-models/alias", {"name": name, "alias": alias})["model_version"]
