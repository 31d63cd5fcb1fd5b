"""Test settings: production settings, with plain HTTP for the test client and live server,
static files served from the source folders, and a fast password hasher."""

import os

os.environ.setdefault("SECURE_SSL_REDIRECT", "0")

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
