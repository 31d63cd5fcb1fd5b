"""Review reports (queue "default"): webapp.review.report_store computes and stores the figures,
this only orchestrates: claim the snapshot, run it, record a failure in plain words. A temporary
problem puts it back in the queue and retries (workers.retrying); a lost worker's snapshot is
queued again by the sweeper. Logs carry ids and seconds, never names or figures.
"""

import logging
import traceback

from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)


@app.task(bind=True, **retrying.options("workers.reports.compute_report"))
def compute_report(self, snapshot_id: int) -> str:
    from webapp.lifecycle import units
    from webapp.lifecycle.heartbeat import Heartbeat
    from webapp.review import report_store
    from webapp.review.models import ReportSnapshot

    try:
        snapshot = units.claim(ReportSnapshot, snapshot_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if snapshot is None:
        return "nothing to do"
    try:
        with Heartbeat(snapshot):
            report_store.run(snapshot)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, snapshot)
        units.fail(snapshot, retrying.failed_message(exc, self.request.retries))
        return "failed"
    except Exception as exc:  # noqa: BLE001 - recorded in plain words
        log.error(
            "report %s failed (%s)\n%s",
            snapshot.pk,
            type(exc).__name__,
            "".join(traceback.format_tb(exc.__traceback__)),
        )
        units.fail(snapshot, f"The report could not be computed ({type(exc).__name__}).")
        return "failed"
    snapshot.refresh_from_db(fields=["compute_seconds"])
    log.info("report %s: computed in %s s", snapshot.pk, snapshot.compute_seconds)
    return "done"
