"""The Celery app: defined beside the settings (all under the CELERY_ namespace), so the web app
can send tasks by name without importing `workers/`. Workers load it through `workers`."""

import os
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")

app = Celery("decselfmask")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Task modules are listed in settings (CELERY_IMPORTS) so each queue's worker loads the same set.


def _ensure_filesystem_broker_folders() -> None:
    """The embedded broker keeps messages in folders that must exist before use."""
    options = app.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        if options.get(key):
            Path(options[key]).mkdir(parents=True, exist_ok=True)


app.on_after_configure.connect(lambda sender, **kwargs: _ensure_filesystem_broker_folders(), weak=False)
