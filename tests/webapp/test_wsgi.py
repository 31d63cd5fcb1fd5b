"""A web worker settles once started (gunicorn.conf.py's post_worker_init, webapp.wsgi): every
view imported and what the start made frozen out of the collector's full passes, so a full
collection during requests walks only what requests made."""

import gc
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gunicorns_worker_start_imports_the_views_and_freezes_the_heap():
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    try:
        conf["post_worker_init"](None)
        frozen = gc.get_freeze_count()
        assert "webapp.review.views" in sys.modules  # the URLconf, and so every view, loaded
        assert frozen > 10_000  # Django and the app's modules, classes and functions
        tracked_before = len(gc.get_objects())
        garbage = [[i] for i in range(5_000)]  # what a request makes is still collected as usual
        assert len(gc.get_objects()) >= tracked_before + 5_000
        del garbage
        gc.collect()
        assert len(gc.get_objects()) < tracked_before + 5_000
    finally:
        gc.unfreeze()
