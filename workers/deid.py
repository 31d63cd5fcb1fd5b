"""De-identification jobs (queue "default"): webapp.deid does the work, this only orchestrates.

Claim the job (a queued one, or one whose worker was lost), hand it to its action's module
(deidentify: webapp.deid_ops.deidentifying, the corpus copied de-identified in batches, each its own
transaction; scan: webapp.deid_ops.scanning, a residual scan), each of which beats, reports progress
and ends the job itself ("done", "cancelled", "failed", or None when this attempt lost it), and
record a failure in plain words. A temporary problem puts the job back in the queue and retries
(workers.retrying); a worker killed mid-job loses its open batch only, and the next attempt goes
on after the last batch committed.

Logs carry ids, counts and stack frames, never note text nor an identifier: a database error's
message can quote a row, so an unexpected error is logged by its type and frames only.
"""

import logging
import traceback

from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)

TIME_LIMIT = 7 * 24 * 3600  # a corpus of millions of notes; a lost worker is caught by its heartbeat, not this


@app.task(
    bind=True,
    **retrying.options("workers.deid.run_job"),
    soft_time_limit=TIME_LIMIT,
    time_limit=TIME_LIMIT + 600,
)
def run_job(self, job_id: int) -> str:
    from webapp.deid_ops import jobs

    try:
        job = jobs.claim(job_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if job is None:
        log.info("deid job %s: nothing to do (held by a live worker, ended or cancelled)", job_id)
        return "nothing to do"
    log.info("deid job %s: %s, attempt %s", job.pk, job.action, job.attempts)
    try:
        status = _dispatch(job)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, job)
        status = _failed(job, exc)
    except Exception as exc:  # noqa: BLE001 - recorded in plain words; the open batch was rolled back
        status = _failed(job, exc)
    job.refresh_from_db()
    log.info("deid job %s: %s, %s of %s notes", job.pk, status or "lost", job.notes_done, job.notes_total)
    return status or "lost"


def _dispatch(job) -> str | None:
    from webapp.deid.models import DeidJob

    if job.action == DeidJob.Action.DEIDENTIFY:
        from webapp.deid_ops import deidentifying

        return deidentifying.run(job)
    if job.action == DeidJob.Action.SCAN:
        from webapp.deid_ops import scanning

        return scanning.run(job)
    raise ValueError(f"unknown action {job.action!r}")


def _failed(job, exc: BaseException) -> str | None:
    from webapp.deid_ops import jobs

    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("deid job %s failed (%s)\n%s", job.pk, type(exc).__name__, frames)
    return "failed" if jobs.fail_unexpectedly(job, exc) else None
