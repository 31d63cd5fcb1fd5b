"""Importing a benchmark changes nothing in the importing process's environment.

Tests import benchmarks' helpers (benchmarks.review_pages.insert_inputs, benchmarks.peaks, ...).
A module that set an environment variable at import changed it for every later test of that
pytest process and for every server those tests start: review_pages once set ALLOWED_HOSTS to
"testserver,localhost", and the demo started by a later test then answered 400 to 127.0.0.1.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.__main__ import BENCHMARKS

REPO = Path(__file__).resolve().parents[2]
# A fresh interpreter: in this process most modules are imported already, and importing them
# again would run nothing. The variables the settings read are unset, as on a clean shell.
PROBE = """
import importlib, json, os, sys
modules = json.loads(sys.argv[1])
before = dict(os.environ)
changed = {}
for module in modules:
    importlib.import_module(module)
    now = dict(os.environ)
    diff = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
    if diff:
        changed[module] = diff
    before = now
print(json.dumps(changed))
"""


def test_no_benchmark_changes_the_environment_when_imported():
    modules = sorted({module for module, _ in BENCHMARKS.values()} | {"benchmarks.peaks", "benchmarks.projects"})
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "ALLOWED_HOSTS", "DATABASE_URL")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(modules)],
        cwd=REPO,
        env=dict(env, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
