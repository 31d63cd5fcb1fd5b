"""Dataset tasks (queue "default"): build a dataset version, write an export folder.

Thin: claim the unit (webapp.lifecycle: a queued one, or one whose worker was lost, whatever the
broker says about redelivery), let webapp.datasets run it inside its heartbeat and end it (done,
or cancelled at a batch boundary), and record a failure in plain words. A message that finds
its unit held by a live worker, ended or cancelled does nothing. A temporary problem (the
database briefly away) puts the unit back in the queue and retries, as for every kind of work
(workers.retrying).

Logs carry ids, counts and stack frames, never note text: a database error's message can quote
the failing row, so the message of an unexpected error is not logged, only its type and where
it happened.
"""

import logging
import traceback

from workers import retrying
from workers.celery_app import app, worker_name

logger = logging.getLogger(__name__)


def _log_failure(what: str, exc: BaseException, plain: str) -> None:
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("%s failed: %s (%s)\n%s", what, plain, type(exc).__name__, frames)


@app.task(bind=True, **retrying.options("workers.datasets.build_dataset"))
def build_dataset(self, dataset_id: int) -> None:
    from webapp.datasets import building

    try:
        dataset = building.claim(dataset_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if dataset is None:
        logger.info("dataset %s: nothing to build (held by a live worker, ended, cancelled or deleted)", dataset_id)
        return
    try:
        building.build(dataset)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, dataset)  # a rebuild starts from nothing: no duplicates
        _log_failure(f"dataset {dataset_id} build", exc, building.fail(dataset, exc))
    except Exception as exc:
        _log_failure(f"dataset {dataset_id} build", exc, building.fail(dataset, exc))


@app.task(bind=True, **retrying.options("workers.datasets.export_dataset"))
def export_dataset(self, export_id: int) -> None:
    from webapp.datasets import export

    try:
        job = export.claim_export(export_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if job is None:
        logger.info("export %s: nothing to write (held by a live worker, ended, cancelled or deleted)", export_id)
        return
    try:
        result = export.run_export(job)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, job)  # the next attempt writes its folder afresh
        _log_failure(f"export {export_id}", exc, export.fail_export(job, exc))
        return
    except Exception as exc:
        _log_failure(f"export {export_id}", exc, export.fail_export(job, exc))
        return
    if result is not None:
        logger.info("export %s: %s rows, %s bytes", export_id, result.rows, result.size_bytes)
