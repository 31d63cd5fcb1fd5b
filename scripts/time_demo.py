"""Time `make demo` from nothing to its first relevance job done; prints one JSON object.

    python3 scripts/time_demo.py                 # about 5-15 minutes; run it on an otherwise idle machine
    python3 scripts/time_demo.py --no-pip-cache  # a first-ever install: pip downloads every wheel

What "nothing" means: a `git clone` of this checkout's HEAD (committed work only) into a temporary
folder, so no `.venv`, no converted model and no `var/` (database, broker, corpus files). In the
clone it runs the demo's own steps as `make demo` chains them, each timed on its own:
`make install` (the venv and the pinned packages), `make model` (the GGUF model converted into
var/models), then `make demo PORT=<a free port>`, which finds both done and runs `manage.py
rundemo`. pip keeps its wheel cache (~/.cache/pip) unless --no-pip-cache, and the JSON says which:
with the cache, the install measures unpacking and linking, not downloading. The environment is
the caller's less the variables that would point the demo elsewhere (DATA_DIR, DATABASE_URL, ...).

The demo's own output is watched, line by line as it is written (PYTHONUNBUFFERED):
* seeding: from `make demo`'s start to rundemo's "is running at" line (migrations, task catalog,
  the synthetic corpus, demo users, the first job planned and queued, then the processes started);
* first job: from there to rundemo's "First relevance job done in N s" line, which rundemo prints
  when it sees the job end in its database (worker start, model load, the 30 prompts);
* the workers' "ready." lines and the relevance worker's "loaded model" line, as milestones.
Then the demo is stopped (SIGTERM to its process group, as Ctrl+C stops it) and the clone removed
(--keep leaves it, with make-*.log). Output keys: install_s, model_conversion_s, seeding_s,
first_job_s, total_s (the four added up: what a user waits after cloning), clone_s, milestones_s
(seconds after `make demo` started), load_average_start / _end (1, 5, 15 min), cpus, pip_cache,
commit, port, first_job_status, ok. Exit status 1 when a step failed or the job did not end well
in --timeout seconds (the JSON then has "error" and the log's path).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVING = "DecSelfMask Studio is running at"
FIRST_JOB = re.compile(r"^First relevance job (\w+) in (\d+) s")
WORKER_READY = re.compile(r"\b(\w+)@\S+ ready\.")
MODEL_LOADED = re.compile(r"\bloaded model \S+ on ")

# Variables that would point the demo at another database, broker, folder or venv, or change its
# threads: the timing is of the embedded default, as a new user gets it.
SCRUBBED = (
    "DATA_DIR",
    "MODEL_DIR",
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "DJANGO_SETTINGS_MODULE",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "OMP_NUM_THREADS",
    "WORKER_TORCH_THREADS",
    "DEBUG",
    "PORT",
    "DEMO_NOTES",
    "VENV",
    "PYTHON_BIN",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKELEVEL",
)


@dataclass
class Timeline:
    """What the demo's output said, and when (seconds after `make demo` started)."""

    serving: float | None = None
    first_job: float | None = None
    first_job_status: str | None = None
    milestones: dict[str, float] = field(default_factory=dict)

    def see(self, seconds: float, line: str) -> None:
        line = line.strip()
        if self.serving is None and SERVING in line:
            self.serving = seconds
        match = FIRST_JOB.match(line)
        if match and self.first_job is None:
            self.first_job, self.first_job_status = seconds, match.group(1)
        ready = WORKER_READY.search(line)
        if ready:
            self.milestones.setdefault(f"{ready.group(1)}_worker_ready", seconds)
        if MODEL_LOADED.search(line):
            self.milestones.setdefault("model_loaded", seconds)

    @property
    def ended(self) -> bool:
        return self.first_job is not None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(*, pip_cache: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED}
    env["PYTHONUNBUFFERED"] = "1"
    if not pip_cache:
        env["PIP_NO_CACHE_DIR"] = "1"
    return env


def pip_cache_note(pip_cache: bool) -> str:
    if not pip_cache:
        return "off (PIP_NO_CACHE_DIR=1): every wheel downloaded"
    folder = os.environ.get("PIP_CACHE_DIR") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pip"
    )
    return (
        f"on ({folder}): wheels installed before on this machine are reused, not downloaded; "
        "a first-ever install takes longer"
    )


def run_step(target: str, repo: Path, env: dict, log: Path) -> float:
    """`make TARGET` in the clone, its output into log; seconds. Raises StepFailed."""
    started = time.monotonic()
    with log.open("wb") as out:
        done = subprocess.run(["make", target], cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise StepFailed(f"make {target} exited {done.returncode}", log)
    return time.monotonic() - started


class StepFailed(Exception):
    def __init__(self, message: str, log: Path):
        super().__init__(message)
        self.log = log


def watch_demo(repo: Path, env: dict, port: int, log: Path, timeout: float) -> Timeline:
    """Run `make demo` until its first job ends (or timeout), then stop it; the Timeline."""
    timeline = Timeline()
    started = time.monotonic()
    process = subprocess.Popen(
        ["make", "demo", f"PORT={port}"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lines: queue.Queue = queue.Queue()

    def read():
        for raw in process.stdout:
            lines.put((time.monotonic() - started, raw.decode(errors="replace")))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        with log.open("w") as out:
            while not timeline.ended and time.monotonic() - started < timeout:
                try:
                    item = lines.get(timeout=1)
                except queue.Empty:
                    continue
                if item is None:  # the demo exited by itself
                    break
                seconds, line = item
                out.write(f"{seconds:8.1f} {line}")
                timeline.see(seconds, line)
    finally:
        stop(process)
    return timeline


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to the demo's process group (make, rundemo, the workers, the web server)."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    except ProcessLookupError:
        pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(ROOT), help="the repository to clone (its HEAD)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds `make demo` may take to its first job")
    parser.add_argument("--no-pip-cache", action="store_true", help="install without pip's wheel cache")
    parser.add_argument("--keep", action="store_true", help="keep the clone and its logs")
    args = parser.parse_args(argv)

    result = {
        "cpus": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "pip_cache": pip_cache_note(not args.no_pip_cache),
        "ok": False,
    }
    work = Path(tempfile.mkdtemp(prefix="dsm-time-demo-"))
    repo = work / "repo"
    env = clean_env(pip_cache=not args.no_pip_cache)
    try:
        started = time.monotonic()
        subprocess.run(["git", "clone", "--quiet", args.source, str(repo)], check=True)
        result["clone_s"] = round(time.monotonic() - started, 1)
        result["commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
        ).stdout.strip()
        if (repo / "var").exists():
            raise StepFailed("the clone has a var/ folder: not a fresh start", repo / "var")
        result["install_s"] = round(run_step("install", repo, env, work / "make-install.log"), 1)
        result["model_conversion_s"] = round(run_step("model", repo, env, work / "make-model.log"), 1)
        result["port"] = free_port()
        demo_log = work / "make-demo.log"
        timeline = watch_demo(repo, env, result["port"], demo_log, args.timeout)
        result["first_job_status"] = timeline.first_job_status
        result["milestones_s"] = {k: round(v, 1) for k, v in sorted(timeline.milestones.items(), key=lambda kv: kv[1])}
        if timeline.serving is None or timeline.first_job is None:
            raise StepFailed(f"the demo's first job did not end within {args.timeout:.0f} s", demo_log)
        result["seeding_s"] = round(timeline.serving, 1)
        result["first_job_s"] = round(timeline.first_job - timeline.serving, 1)
        result["total_s"] = round(result["install_s"] + result["model_conversion_s"] + timeline.first_job, 1)
        if timeline.first_job_status != "done":
            raise StepFailed(f"the demo's first job ended {timeline.first_job_status}", demo_log)
        result["ok"] = True
    except (StepFailed, subprocess.CalledProcessError) as exc:
        result["error"] = str(exc)
        if isinstance(exc, StepFailed):
            result["log"] = str(exc.log)
            args.keep = True  # keep what the log points at
    finally:
        result["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        if args.keep:
            result["kept"] = str(work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
