"""Dataset tasks (queue "default"): build a dataset version, write an export folder.

Thin: claim the row atomically (queued -> running; a message redelivered after its worker died
may take back a running one), call webapp.datasets, record failure in plain words. Logs carry
ids, counts and stack frames, never note text: a database error's message can quote the failing
row, so the message of an unexpected error is not logged, only its type and where it happened.
"""
import logging
import traceback

from workers.celery_app import app

logger = logging.getLogger(__name__)


def _redelivered(task) -> bool:
    return bool((task.request.delivery_info or {}).get("redelivered"))


def _log_failure(what: str, exc: BaseException, plain: str) -> None:
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("%s failed: %s (%s)\n%s", what, plain, type(exc).__name__, frames)


@app.task(bind=True)
def build_dataset(self, dataset_id: int) -> None:
    from webapp.datasets import building

    dataset = building.claim(dataset_id, reclaim=_redelivered(self))
    if dataset is None:
        logger.info("dataset %s: not queued (already taken, finished or deleted); nothing to do", dataset_id)
        return
    try:
        building.build(dataset)
    except Exception as exc:
        _log_failure(f"dataset {dataset_id} build", exc, building.fail(dataset_id, exc))


@app.task(bind=True)
def export_dataset(self, export_id: int) -> None:
    from webapp.datasets import export

    job = export.claim_export(export_id, reclaim=_redelivered(self))
    if job is None:
        logger.info("export %s: not queued (already taken, finished or deleted); nothing to do", export_id)
        return
    try:
        result = export.run_export(job)
    except Exception as exc:
        _log_failure(f"export {export_id}", exc, export.fail_export(export_id, exc))
        return
    logger.info("export %s: %s rows, %s bytes", export_id, result.rows, result.size_bytes)
