"""One visibility timeout for every worker on a Redis broker.

kombu's Redis transport keeps the unacknowledged messages of ALL queues in one place and each
worker restores those older than ITS visibility timeout: one worker started with a shorter value
redelivers the other queues' messages while they still run. So the value is single: each worker
announces its value in Redis (a key that lives VISIBILITY_KEY_TTL seconds, renewed by the recovery
sweeper), and a worker whose value differs from the one live workers announced refuses to start.

With heartbeats and the sweeper (webapp.lifecycle.recovery) the timeout is only a backstop: keep
it longer than any task (default 6 h).
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger(__name__)

VISIBILITY_KEY = "decselfmask:visibility_timeout"
VISIBILITY_KEY_TTL = 120


class VisibilityTimeoutMismatch(SystemExit):
    pass


def configured() -> int | None:
    """This process's visibility timeout, None when the broker is not Redis."""
    if not settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        return None
    return int(settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"])


def _client():
    import redis

    return redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)


def check_or_refuse(app=None) -> None:
    """At worker start: claim the value, or refuse to start if live workers use another one."""
    mine = configured()
    if mine is None:
        return
    client = _client()
    client.set(VISIBILITY_KEY, mine, nx=True, ex=VISIBILITY_KEY_TTL)
    theirs = client.get(VISIBILITY_KEY)
    if theirs is not None and int(theirs) != mine:
        message = (
            f"REFUSING TO START: this worker's CELERY_VISIBILITY_TIMEOUT is {mine} s but the workers "
            f"already running on this broker use {int(theirs)} s. Workers share one Redis unacked store; "
            "a different value redelivers other workers' tasks while they run. Start every worker with "
            "the same value (docs/operations.md, Configuration)."
        )
        log.critical(message)
        raise VisibilityTimeoutMismatch(message)
    # The value agrees: renew it now rather than at the sweeper's first round, which starts only
    # once the worker is ready (a worker would otherwise join with the key about to expire).
    client.set(VISIBILITY_KEY, mine, ex=VISIBILITY_KEY_TTL)


def announce() -> None:
    """Renew this worker's value (called by the recovery sweeper every few seconds)."""
    mine = configured()
    if mine is not None:
        _client().set(VISIBILITY_KEY, mine, ex=VISIBILITY_KEY_TTL)
