"""Test settings: production settings, with plain HTTP for the test client and live server,
static files served from the source folders, and a fast password hasher."""

import os

os.environ.setdefault("SECURE_SSL_REDIRECT", "0")


def _redis_database_of_this_worker() -> None:
    """make test runs the suite in TEST_WORKERS processes (pytest-xdist). Worker gwK uses Redis
    database TEST_RUN-K (mod 16) for its queues, unacked messages and cache, as two runs with
    different TEST_RUN stay apart; pytest-django names its test database after the worker too
    (test_decselfmask_15_gw1). Set in the environment, so the workers and servers a test starts
    inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    url = os.environ.get("REDIS_URL", "")
    run_url = os.environ.setdefault("DSM_TEST_RUN_REDIS_URL", url)
    # A process a test starts inherits both variables and may read these settings again: its
    # REDIS_URL is then this worker's already (or one the test chose), and stays.
    if not (worker.startswith("gw") and url) or url != run_url:
        return
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = int(parts.path.strip("/") or 0)
    os.environ["REDIS_URL"] = urlunsplit(parts._replace(path=f"/{(base - int(worker[2:])) % 16}"))


_redis_database_of_this_worker()

from webapp.settings import *  # noqa: E402,F403
from webapp.settings import STORAGES  # noqa: E402

STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# In-process tests hold their rows in an open transaction that a heartbeat thread's own
# connection cannot see: beat rarely here. Worker processes started by tests set the WORK_*
# variables (tests/workers/conftest.py).
from webapp.env import env_float  # noqa: E402

WORK_HEARTBEAT_SECONDS = env_float("WORK_HEARTBEAT_SECONDS", 3600.0)

# A toy kind of long work (tests/toykind): one module and this one registry entry, run through the
# one runner by real workers (tests/workers/test_toy_kind.py). Celery's routes derive from KINDS.
from webapp.lifecycle import kinds as lifecycle_kinds  # noqa: E402

INSTALLED_APPS = [*INSTALLED_APPS, "tests.toykind"]  # noqa: F405
lifecycle_kinds.register(lifecycle_kinds.Kind("toy", "toykind.ToyUnit", "tests.toykind.models:work", "default"))
CELERY_TASK_ROUTES = lifecycle_kinds.task_routes()
