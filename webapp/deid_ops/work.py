"""A claimed de-identification job's work (kind "deidentify", webapp.lifecycle.kinds), run by the
one runner (workers.runner): its action's module ends it ("done", "cancelled", "failed", or None
when this attempt lost it). Logs carry ids and counts, never note text nor an identifier."""

from __future__ import annotations

import logging

from webapp.deid.models import DeidJob
from webapp.deid_ops import deidentifying, scanning

log = logging.getLogger(__name__)


def run(job: DeidJob, heart) -> str | None:
    log.info("deid job %s: %s, attempt %s", job.pk, job.action, job.attempts)
    if job.action == DeidJob.Action.DEIDENTIFY:
        status = deidentifying.run(job, heart=heart)
    elif job.action == DeidJob.Action.SCAN:
        status = scanning.run(job, heart=heart)
    else:
        raise ValueError(f"unknown action {job.action!r}")
    job.refresh_from_db()
    log.info("deid job %s: %s, %s of %s notes", job.pk, status or "lost", job.notes_done, job.notes_total)
    return status
