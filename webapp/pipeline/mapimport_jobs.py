"""Relevance maps computed elsewhere, uploaded in the app and imported as long work (kind "map
import", webapp.lifecycle.kinds; run by workers.runner like every kind).

    launch()   in the web request: store the upload (webapp.corpus.uploads, shared through
               ARTIFACT_STORAGE_URL when set), create a queued MapImportJob, audit it, send the
               task after the commit; it answers at once, whatever the file's size.
    run()      in the worker, under a Heartbeat: webapp.pipeline.mapimport.import_maps checks the
               WHOLE file (progress: the lines read), then writes the maps and their MapImport row
               in one transaction in which the job ends done too: a worker killed at any point
               leaves both or neither. The sweeper queues a job whose worker was lost and the next
               worker imports again from the stored file; the file's digest makes a second import
               of a file already written a no-op (nothing twice). A refused file fails the job with
               its problems (line and reason, never note text), audited by import_maps.
    cancel()   queued: cancelled at once; running: the worker stops at its next progress report,
               before anything is written (or rolls its write back).
    resume()   a cancelled or failed job, or one whose worker was lost, is queued again; it reads
               the stored file again.

The stored file is removed once the job is done or its file refused (it can never run again);
a cancelled or unexpectedly failed job keeps it, for Resume. A file left by a worker killed between
its job's end and the removal is removed at the next launch (discard_leftovers).
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial

from django.db import transaction
from django.db.models import Q

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus import uploads
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.pipeline import mapimport
from webapp.pipeline.models import MapImportJob
from webapp.shared_files import StorageError

log = logging.getLogger(__name__)

KIND = "map import"
TASK = "workers.runner.map_import"
PROGRESS_EVERY = 100  # lines between progress reports (and checks for a cancel)


class Stopped(Exception):
    """Raised from a progress report to stop without writing: cancel asked, or the job was lost."""


class MapImportJobError(Exception):
    """A cancel or resume the job's state refuses (plain words)."""


def launch(
    uploaded,
    *,
    corpus,
    model_version,
    template: str = "en",
    explain: str = "next",
    source: str = "",
    replace: bool = False,
    actor=None,
    ip: str | None = None,
) -> MapImportJob:
    """Store the upload and queue its import. The caller has checked that `corpus` and
    `model_version` are the person's (webapp.projects.scoping)."""
    discard_leftovers()
    stored, fields = uploads.for_job(uploaded, actor)
    try:
        with transaction.atomic():
            job = MapImportJob.objects.create(
                corpus=corpus,
                model_version=model_version,
                template=template,
                explain=explain,
                source=source[:200],
                replace=replace,
                **fields,
            )
            record(
                actor,
                AuditEvent.Action.LAUNCH_JOB,
                job,
                ip=ip,
                kind=KIND,
                corpus=corpus.name,
                model_version=model_version.name,
                file=stored.name,
                size=stored.size,
            )
            if fields["upload"]:
                queue.send_on_commit(TASK, job.pk, on_error=partial(_queue_error, job.pk))
    except BaseException:
        with contextlib.suppress(StorageError):
            uploads.discard(stored.path)
        raise
    return job


def _queue_error(job_id: int, message: str) -> None:
    MapImportJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(
        error=f"Not sent to a worker yet ({message}); it is sent again automatically."
    )


def claim(job_id: int, worker: str = "") -> MapImportJob | None:
    """A queued job, or one whose worker is lost: it reads its file afresh."""
    return units.claim(
        MapImportJob,
        job_id,
        worker,
        select_related=("corpus", "model_version", "created_by"),
        phase=MapImportJob.Phase.VALIDATING,
        lines_done=0,
    )


def run_claimed(job: MapImportJob, heart) -> str | None:
    """The runner's work for a claimed job: import, then remove the stored file once the job can
    never run again (done, or its file refused)."""
    log.info("map import job %s: %s bytes, attempt %s", job.pk, job.file_size, job.attempts)
    status = run(job, heart)
    if status is None:
        log.warning("map import job %s: %s; this attempt wrote nothing", job.pk, units.fate(job))
        return None
    if status == JobStatus.DONE or (status == JobStatus.FAILED and job.problem_count):
        discard_upload(job)
    log.info("map import job %s: %s", job.pk, status)
    return status


def run(job: MapImportJob, heart) -> str | None:
    """Import the job's file (the worker holds the job). The status it ended in, None when
    another attempt holds it now (nothing was written)."""

    def checkpoint() -> None:
        if heart.cancelling or heart.lost:
            raise Stopped

    def progress(lines: int) -> None:
        heart.report(phase=MapImportJob.Phase.VALIDATING, lines_done=lines)
        checkpoint()

    def validated(maps: int) -> None:
        heart.report(phase=MapImportJob.Phase.WRITING)
        checkpoint()

    def written(made) -> None:  # inside the write transaction: the job ends with its maps, or neither
        if not units.finish(job, phase="", lines_done=made.lines, map_import=made, problems=[], problem_count=0):
            raise Stopped  # lost to another attempt: roll our writes back

    try:
        path = uploads.local_file(job.upload)
        if path is None:
            reason = "the uploaded file is no longer stored; upload it again"
            return _refused(job, [(None, reason)], 1)
        outcome = mapimport.import_maps(
            path,
            corpus=job.corpus,
            model_version=job.model_version,
            template=job.template,
            explain=job.explain,
            source=job.source,
            actor=job.created_by,
            replace=job.replace,
            file_name=job.file_name,
            progress=progress,
            progress_every=PROGRESS_EVERY,
            on_validated=validated,
            on_written=written,
        )
    except mapimport.MapImportError as exc:
        if _model_unreadable(exc):  # not the file's fault: keep it, for Resume once the model can be read
            return JobStatus.FAILED if units.fail(job, exc.problems[0][1], phase="") else None
        return _refused(job, exc.problems, exc.count)
    except StorageError as exc:
        return JobStatus.FAILED if units.fail(job, uploads.unreachable(exc), phase="") else None
    except Stopped:
        if heart.cancelling and units.cancelled(job, phase=""):
            return JobStatus.CANCELLED
        return None
    if not outcome.created:  # the same file was imported before: nothing written, the job points at it
        earlier = outcome.map_import
        finished = units.finish(
            job, phase="", lines_done=earlier.lines, map_import=earlier, imported_before=True, problems=[]
        )
        return JobStatus.DONE if finished else None
    return JobStatus.DONE


def _model_unreadable(exc) -> bool:
    return len(exc.problems) == 1 and exc.problems[0][0] is None and exc.problems[0][1].startswith("cannot read model ")


def _refused(job: MapImportJob, problems, count: int) -> str | None:
    words = f"Nothing was imported: {count} problem{'s' if count != 1 else ''}."
    failed = units.fail(
        job,
        words,
        phase="",
        problems=[[line, reason] for line, reason in sorted(problems, key=lambda p: (p[0] is not None, p[0] or 0))],
        problem_count=count,
    )
    if failed:
        job.problem_count = count
    return JobStatus.FAILED if failed else None


def fail_claimed(job: MapImportJob, exc: BaseException) -> str:
    """An error the import did not expect, in plain words (its type only; a database error's text
    can quote a row). Nothing was written: the transaction was rolled back. The file is kept, for Resume."""
    said = (
        f"The map import stopped on an unexpected error ({type(exc).__name__}); nothing was imported. "
        "Press Resume to try again, or import the file with manage.py import_maps to see more."
    )
    units.fail(job, said, phase="")
    return said


def cancel(job: MapImportJob, actor) -> str | None:
    """ "cancelled" (queued), "cancelling" (the worker stops at its next report) or None (it ended)."""
    outcome = units.request_cancel(MapImportJob, job.pk)
    if outcome is not None:
        record(actor, AuditEvent.Action.CANCEL_JOB, job, kind=KIND, corpus=job.corpus.name)
    return outcome


def resume(job: MapImportJob, actor) -> bool:
    """Queue again a cancelled or failed job, or one whose worker was lost, whose file is still stored."""
    if not job.upload:
        raise MapImportJobError("This import's file is no longer stored; upload it again.")
    if not job.resumable or not units.requeue(MapImportJob, job.pk, phase="", problems=[], problem_count=0):
        return False
    record(actor, AuditEvent.Action.LAUNCH_JOB, job, kind=KIND, corpus=job.corpus.name, resumed=True)
    queue.send_on_commit(TASK, job.pk, on_error=partial(_queue_error, job.pk))
    return True


def discard_upload(job: MapImportJob) -> None:
    """Remove the stored file of a job that has ended."""
    if job.upload and MapImportJob.objects.filter(pk=job.pk, status__in=ENDED).update(upload="") == 1:
        try:
            uploads.discard(job.upload)
        except StorageError as exc:
            MapImportJob.objects.filter(pk=job.pk, upload="").update(upload=job.upload)
            log.warning("map import job %s: its file stays in storage for now: %s", job.pk, exc)


def discard_leftovers(limit: int = 100) -> None:
    """Remove the stored files of jobs that can never run again (done, or refused) but still name
    one: their worker was lost between the job's end and the file's removal."""
    ended = MapImportJob.objects.exclude(upload="").filter(
        Q(status=JobStatus.DONE) | Q(status=JobStatus.FAILED, problem_count__gt=0)
    )
    for job in ended[:limit]:
        discard_upload(job)
