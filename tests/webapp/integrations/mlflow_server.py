"""A real `mlflow server` for the tests that talk to one (plain, or with its basic-auth app). The
server needs the full `mlflow` package, whose pins clash with ours (pyarrow, gunicorn): it is found
as MLFLOW_SERVER_BIN, else `mlflow` on the PATH, else the test is skipped saying so (failed where
DSM_REQUIRE_MLFLOW is set: .ci/run installs one)."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_mlflow_server(folder: Path, *extra_args: str, env: dict | None = None):
    """Start a server storing into `folder` (SQLite backend, local artifacts), wait for its
    /health, yield its URL, stop its whole process group."""
    binary = os.environ.get("MLFLOW_SERVER_BIN") or shutil.which("mlflow")
    if not binary:
        message = "no `mlflow` executable (set MLFLOW_SERVER_BIN to a full mlflow install's `mlflow`)"
        if os.environ.get("DSM_REQUIRE_MLFLOW"):
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    command = [binary, "server", *extra_args, "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    command += [
        "--backend-store-uri",
        f"sqlite:///{folder}/mlflow.db",
        "--default-artifact-root",
        str(folder / "artifacts"),
    ]
    log = folder / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: its server workers end with it
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(url + "/health", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail(f"mlflow server did not start: {log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.5)
    try:
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
