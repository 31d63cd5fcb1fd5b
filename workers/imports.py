"""Imports from the Import page, on the "default" queue (webapp.corpus.import_jobs).

Thin: claim the job (webapp.lifecycle.units), run it under a heartbeat that carries its phase and
records done, remove the stored upload once the job has ended. With ARTIFACT_STORAGE_URL the
upload is fetched from that storage into this machine's DATA_DIR first, and removed from both
(webapp.corpus.uploads): this worker need not share DATA_DIR with the web app. A worker killed mid-import leaves
its write transaction uncommitted; the sweeper queues the job again and the next worker imports
again from the stored upload (atomic and idempotent: nothing lost, nothing twice). A temporary
database problem puts the job back in the queue and retries the task.

Logs carry ids and counts, never note text nor problem lines; an unexpected error is logged by
its type and stack frames only (a database error's message can quote the failing row).
"""

import logging
import traceback

from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)

TIME_LIMIT = 24 * 3600  # a file of millions of notes; a lost worker is caught by its heartbeat, not this


@app.task(
    bind=True,
    **retrying.options("workers.imports.run_import"),
    soft_time_limit=TIME_LIMIT,
    time_limit=TIME_LIMIT + 600,
)
def run_import(self, job_id: int) -> str:
    from webapp.corpus import import_jobs
    from webapp.corpus.models import ImportJob
    from webapp.lifecycle import units
    from webapp.lifecycle.heartbeat import Heartbeat

    try:
        job = units.claim(
            ImportJob,
            job_id,
            worker=worker_name(self),
            select_related=("created_by",),
            phase=ImportJob.Phase.VALIDATING,
            records_done=0,
            records_total=None,
        )
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if job is None:
        log.info("import %s: not queued (taken, finished or cancelled); nothing to do", job_id)
        return "nothing to do"
    log.info("import %s: %s, %s bytes, attempt %s", job.pk, job.kind, job.file_size, job.attempts)
    try:
        with Heartbeat(job) as heart:
            status = import_jobs.run(job, heart)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, job)
        status = _failed(job, exc)
    except Exception as exc:  # noqa: BLE001 - recorded in plain words; the transaction was rolled back
        status = _failed(job, exc)
    if status is None:
        log.warning("import %s: %s; this attempt wrote nothing", job.pk, units.fate(job))
        return "lost"
    import_jobs.discard_upload(job)
    job.refresh_from_db()
    log.info(
        "import %s: %s (%s created, %s updated, %s unchanged, %s problems)",
        job.pk,
        status,
        job.created_count,
        job.updated_count,
        job.unchanged_count,
        job.problem_count,
    )
    return status


def _failed(job, exc: BaseException) -> str | None:
    from webapp.corpus import import_jobs

    frames = "".join(traceback.format_tb(exc.__traceback__))
    log.error("import %s failed (%s)\n%s", job.pk, type(exc).__name__, frames)
    return "failed" if import_jobs.fail_unexpectedly(job, exc) else None
