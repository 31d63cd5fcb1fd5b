"""Sending work to the queue by task name (the web app never imports `workers/`), and asking the
broker how many messages wait in a queue."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

log = logging.getLogger(__name__)


class QueueUnavailable(Exception):
    """The broker could not be reached; the message says so in plain words."""


def queue_of(task_name: str) -> str:
    """The queue a task is routed to (settings.CELERY_TASK_ROUTES, patterns like 'workers.relevance.*')."""
    routes = settings.CELERY_TASK_ROUTES
    if task_name in routes:  # an exact name wins over patterns, as in Celery's own routing
        return routes[task_name]["queue"]
    for pattern, route in routes.items():
        if pattern.endswith("*") and task_name.startswith(pattern[:-1]):
            return route["queue"]
    return settings.CELERY_TASK_DEFAULT_QUEUE


def send(task_name: str, *ids: int) -> int:
    """Send one message per id (args=[id]) over one connection. Returns the count sent; raises
    QueueUnavailable when the broker cannot be reached (the ids sent before it are counted in
    the message)."""
    from webapp.taskqueue import app

    sent = 0
    try:
        with app.producer_or_acquire() as producer:
            for pk in ids:
                app.send_task(task_name, args=[pk], producer=producer)
                sent += 1
    except Exception as exc:  # kombu raises several connection error types
        log.error("%s: could not enqueue (%s) after %s of %s messages", task_name, type(exc).__name__, sent, len(ids))
        raise QueueUnavailable(
            f"The task queue could not be reached ({type(exc).__name__}); {sent} of {len(ids)} "
            "messages were sent. Work that was not sent is sent again automatically once "
            "the queue is back (or press Resume)."
        ) from None
    return sent


def send_on_commit(task_name: str, *ids: int, on_error=None) -> None:
    """Send after the current transaction commits (at once outside one). `on_error(message)`
    records a broker failure where the user sees it; the recovery sweeper sends it again later."""

    def _send():
        try:
            send(task_name, *ids)
        except QueueUnavailable as exc:
            if on_error is not None:
                on_error(str(exc))

    transaction.on_commit(_send)


def waiting_messages(queue: str) -> int | None:
    """Messages waiting in a queue (not those a worker holds), or None if the broker cannot say."""
    from webapp.taskqueue import app

    try:
        with app.connection_for_read() as conn:
            return conn.default_channel.queue_declare(queue=queue).message_count
    except Exception as exc:  # noqa: BLE001 - an unreachable broker: the sweeper tries again later
        log.warning("could not read the size of queue %s (%s)", queue, type(exc).__name__)
        return None
