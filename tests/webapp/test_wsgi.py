"""A web worker settles once started (gunicorn.conf.py's post_worker_init, webapp.wsgi): every
view imported and what the start made frozen out of the collector's full passes, so a full
collection during requests walks only what requests made.

In a fresh interpreter, as a gunicorn worker starts: in this test process another test may have
imported the views already, and frozen objects would stay frozen for the tests after it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WORKER_START = """
import gc, json, runpy, sys
conf = runpy.run_path("gunicorn.conf.py")
import webapp.wsgi  # gunicorn loads the application before post_worker_init
views_before = "webapp.review.views" in sys.modules
conf["post_worker_init"](None)
frozen = gc.get_freeze_count()
tracked = len(gc.get_objects())
garbage = [[i] for i in range(5_000)]  # what a request makes is still collected as usual
with_garbage = len(gc.get_objects())
del garbage
gc.collect()
print(json.dumps({"views_before": views_before, "views_after": "webapp.review.views" in sys.modules,
                  "frozen": frozen, "tracked": tracked, "with_garbage": with_garbage,
                  "after_collect": len(gc.get_objects())}))
"""


def test_gunicorns_worker_start_imports_the_views_and_freezes_the_heap():
    run = subprocess.run(
        [sys.executable, "-c", WORKER_START],
        cwd=ROOT,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["views_before"] is False and seen["views_after"] is True  # the URLconf, so every view
    assert seen["frozen"] > 10_000  # Django and the app's modules, classes and functions
    assert seen["with_garbage"] >= seen["tracked"] + 5_000
    assert seen["after_collect"] < seen["tracked"] + 5_000
