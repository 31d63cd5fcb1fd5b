"""Erasures (queue "default"): webapp.erasure.erasing does the work, this only orchestrates.

Claim the request (a queued one, or one whose worker was lost), run it (bounded batches, each
its own transaction: a worker killed mid-erasure loses one batch, the sweeper queues the request
again and the next worker goes on), record a failure in plain words. A temporary problem puts
the request back in the queue and retries (workers.retrying).

Logs carry ids, counts and stack frames, never note text nor a patient's value: a database
error's message can quote a row, so an unexpected error is logged by its type and frames only.
"""

import logging
import traceback

from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)


@app.task(bind=True, **retrying.options("workers.erasure.run_erasure"))
def run_erasure(self, erasure_id: int) -> str:
    from webapp.erasure import erasing

    try:
        erasure = erasing.claim(erasure_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if erasure is None:
        log.info("erasure %s: nothing to do (held by a live worker, ended or cancelled)", erasure_id)
        return "nothing to do"
    log.info("erasure %s: %s, attempt %s", erasure.pk, erasure.scope, erasure.attempts)
    try:
        status = erasing.run(erasure)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, erasure)
        status = _failed(erasure, exc)
    except Exception as exc:  # noqa: BLE001 - recorded in plain words; the open batch was rolled back
        status = _failed(erasure, exc)
    erasure.refresh_from_db()
    log.info("erasure %s: %s, %s rows deleted", erasure.pk, status or "lost", erasure.rows_erased)
    return status or "lost"


def _failed(erasure, exc: BaseException) -> str:
    from webapp.erasure import erasing

    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("erasure %s failed (%s)\n%s", erasure.pk, type(exc).__name__, frames)
    erasing.fail(erasure, exc)
    return "failed"
