import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()


def settle_worker() -> None:
    """Once a web worker has loaded the app (gunicorn.conf.py's post_worker_init): import every
    view now (the URLconf), then move what the start made into the collector's permanent
    generation. Python's full collection walks every tracked object; with the start's quarter of a
    million among them it took about 150 ms every few hundred requests of the review loop, some
    0.35 ms a request (issue 41). Frozen, it walks only what requests made."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (imports every app's views)
    gc.collect()  # the start's garbage is freed now, not kept for good
    gc.freeze()
