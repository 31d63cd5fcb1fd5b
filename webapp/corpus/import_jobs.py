"""Imports from the Import page as background work (the lifecycle of webapp.lifecycle).

    launch()   in the web request: store the upload, create a queued ImportJob, send
               workers.imports.run_import after the commit; it answers at once, whatever the size.
    run()      in the worker, under a Heartbeat: validate, then write (webapp.corpus.importing),
               reporting the phase and the records done through the heartbeat, so they show while
               the write transaction is still open. Validation runs outside any transaction; a
               done job's end commits in the SAME transaction as the notes: a worker killed at
               any point leaves both or neither (a refused file writes nothing, then fails). The
               sweeper queues a job whose worker was lost, and the next worker imports again
               from the stored upload (atomic and idempotent: nothing lost, nothing twice). A
               worker that lost its job (taken over, or stopped and continued after its heartbeat
               went stale), or was asked to cancel, stops before the next document it would read
               (its reading's checkpoint) and rolls its writes back.
    cancel()   queued: cancelled at once; running: the worker rolls back and ends it cancelled.
    resume()   a job whose worker was lost is queued again at once (the sweeper does it anyway).

The stored upload is removed once the job has ended (discard_upload; leftovers of a worker lost
between its commit and the removal are removed at the next launch).

With ARTIFACT_STORAGE_URL the upload is kept in that storage (webapp.corpus.uploads: web and
workers need not share DATA_DIR). A storage out of reach fails the job in plain words, naming
the storage: at launch (the job is created failed, never queued) or when the worker fetches the
file; nothing is imported then. An upload the storage could not remove stays named by its job,
and a later launch removes it (discard_leftovers).

A failed job's `problems` are the import's problem lines; a done job's are its warnings (what
was accepted but should be known: a byte order mark, fields kept as metadata, overlapping
evidence), with `problem_count` 0. Neither holds note text or metadata values.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import timedelta
from functools import partial

from django.core.files import File
from django.db import transaction
from django.utils import timezone

from webapp.audit.log import record, record_refused_import
from webapp.audit.models import AuditEvent
from webapp.corpus import uploads
from webapp.corpus.models import ImportJob
from webapp.corpus.problem_text import english_lines
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.projects.roles import Capability
from webapp.shared_files import StorageError

log = logging.getLogger(__name__)

TASK = "workers.imports.run_import"
RECENT = 50
PREVIEW_KEPT = timedelta(hours=24)  # a preview's upload, for "Import now"
PHASES = {"validate": ImportJob.Phase.VALIDATING, "write": ImportJob.Phase.WRITING}


class ImportStopped(Exception):
    """Raised from a progress report to roll the import back: cancel asked, or the job was lost."""


def launch(
    uploaded,
    *,
    project,
    kind: str,
    corpus: str,
    language: str,
    update: bool,
    actor,
    ip: str | None = None,
    deidentify: bool = False,
) -> ImportJob:
    discard_leftovers()
    stored, fields = uploads.for_job(uploaded, actor)
    try:
        with transaction.atomic():
            job = ImportJob.objects.create(
                project=project,
                kind=kind,
                corpus_name=corpus,
                language=language if kind == ImportJob.Kind.NOTES else "",
                update=update,
                deidentify=deidentify,
                **fields,
            )
            record(
                actor,
                AuditEvent.Action.LAUNCH_JOB,
                job,
                ip=ip,
                kind=kind,
                corpus=corpus,
                file=stored.name,
                size=stored.size,
                **({"deidentify": True} if deidentify else {}),
            )
            if fields["upload"]:
                queue.send_on_commit(TASK, job.pk, on_error=partial(_queue_error, job.pk))
    except BaseException:
        with contextlib.suppress(StorageError):  # the error to report is the one that got us here
            uploads.discard(stored.path)
        raise
    return job


def claim(job_id: int, worker: str = "") -> ImportJob | None:
    """Take a queued import, or one whose worker is lost (webapp.lifecycle.units.claim); it validates
    and counts its records afresh. None: nothing to do for this message."""
    return units.claim(
        ImportJob,
        job_id,
        worker,
        select_related=("created_by",),
        phase=ImportJob.Phase.VALIDATING,
        records_done=0,
        records_total=None,
    )


def run_claimed(job: ImportJob, heart) -> str | None:
    """The runner's work for a claimed import (kind "import", workers.runner): import it, then
    remove the stored upload once it has ended (not when another attempt holds it now: that one
    imports from it)."""
    log.info("import %s: %s, %s bytes, attempt %s", job.pk, job.kind, job.file_size, job.attempts)
    status = run(job, heart)
    if status is None:
        log.warning("import %s: %s; this attempt wrote nothing", job.pk, units.fate(job))
        return None
    discard_upload(job)
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


def run(job: ImportJob, heart) -> str | None:
    """Import the job's upload (the worker holds the job). Returns the status it ended in, None
    if another attempt holds it now (nothing was written)."""
    validated = 0

    def checkpoint() -> None:  # between documents: the heartbeat's thread tells what became of the job
        if heart.cancelling or heart.lost:
            raise ImportStopped

    def progress(phase: str, done: int) -> None:
        nonlocal validated
        if phase == "validate":
            validated = done
            heart.report(phase=PHASES[phase], records_done=done)
        else:
            heart.report(phase=PHASES[phase], records_done=done, records_total=validated)
        checkpoint()

    def finish(report) -> None:  # inside the write transaction: the job ends with its rows, or neither
        # The last progress report rides on a beat that never comes once the job has ended: the
        # end itself records that every record was written.
        written = report.created + report.updated + report.unchanged
        if not units.finish(
            job,
            phase="",
            records_done=written,
            records_total=written,
            created_count=report.created,
            updated_count=report.updated,
            unchanged_count=report.unchanged,
            problems=report.warning_items(),
            problem_count=0,
            deid_counts=report.deid_counts,
        ):
            raise ImportStopped  # lost to another attempt: roll our writes back

    try:
        # Validation runs outside any transaction (on SQLite a transaction locks the whole
        # database); only the write phase and the job's end are one transaction.
        report = uploads.import_stored(
            job.upload,
            project=job.project,
            kind=job.kind,
            corpus=job.corpus_name,
            language=job.language,
            update=job.update,
            deidentify=job.deidentify,
            actor=job.created_by,
            progress=progress,
            on_written=finish,
            checkpoint=checkpoint,
        )
        if not report.ok:
            if not units.fail(
                job,
                f"Nothing was imported: {report.problem_count} problem{'s' if report.problem_count != 1 else ''}.",
                phase="",
                problems=report.problem_items(),
                problem_count=report.problem_count,
            ):
                return None
            record_refused_import(job.created_by, job.corpus_name, job.kind, report.problem_count, report.problems)
    except StorageError as exc:  # raised before anything was written: the file could not be fetched
        return JobStatus.FAILED if units.fail(job, uploads.unreachable(exc), phase="") else None
    except ImportStopped:
        if heart.cancelling and units.cancelled(job, phase=""):
            return JobStatus.CANCELLED
        return None
    return JobStatus.DONE if report.ok else JobStatus.FAILED


def fail_unexpectedly(job: ImportJob, exc: BaseException) -> bool:
    """Record an error the import did not expect, in plain words (a database error's text can
    quote a row, so only its type). The import's transaction was rolled back."""
    return units.fail(
        job,
        f"The import stopped on an unexpected error ({type(exc).__name__}); nothing was "
        "imported. Try again, or import the file from the command line to see more.",
        phase="",
    )


def fail_claimed(job: ImportJob, exc: BaseException) -> bool:
    """The runner's record of an error: the import failed (fail_unexpectedly), its upload removed."""
    failed = fail_unexpectedly(job, exc)
    if failed:
        discard_upload(job)
    return failed


def cancel(job: ImportJob, actor) -> str | None:
    """Returns "cancelled", "cancelling" (the worker rolls back at its next report) or None (it ended)."""
    outcome = units.request_cancel(ImportJob, job.pk)
    if outcome is not None:
        record(actor, AuditEvent.Action.CANCEL_JOB, job, kind=job.kind, corpus=job.corpus_name)
    if outcome == JobStatus.CANCELLED:
        discard_upload(job)
    return outcome


def resume(job: ImportJob, actor) -> bool:
    """Queue again at once a job whose worker was lost (the sweeper would, within seconds)."""
    if not job.resumable or not units.requeue(ImportJob, job.pk):
        return False
    record(actor, AuditEvent.Action.LAUNCH_JOB, job, kind=job.kind, corpus=job.corpus_name, resumed=True)
    queue.send_on_commit(TASK, job.pk, on_error=partial(_queue_error, job.pk))
    return True


def discard_upload(job: ImportJob, *, keep_preview: bool = True) -> None:
    """Remove the stored upload of a job that has ended (it can no longer run). A done preview's
    (annotation-tool files checked with "Preview only") is kept PREVIEW_KEPT, for "Import now"
    (only in the storage, with ARTIFACT_STORAGE_URL: this machine's copy goes)."""
    if keep_preview and _fresh_preview(job):
        uploads.release(job.upload)
        return
    if job.upload and ImportJob.objects.filter(pk=job.pk, status__in=ENDED).update(upload="") == 1:
        try:
            uploads.discard(job.upload)
        except StorageError as exc:  # named by its job again: a later launch removes it
            ImportJob.objects.filter(pk=job.pk, upload="").update(upload=job.upload)
            log.warning("import %s: its upload stays in storage for now: %s", job.pk, exc)


def _fresh_preview(job: ImportJob) -> bool:
    """Read from the database: the worker's copy of its job is older than the job's end."""
    row = ImportJob.objects.filter(pk=job.pk, status=JobStatus.DONE).exclude(upload="").values("upload", "finished")
    row = row.first()
    if row is None or (row["finished"] and row["finished"] < timezone.now() - PREVIEW_KEPT):
        return False
    try:
        options = uploads.upload_options(row["upload"])
    except StorageError:  # cannot tell: keep it (a later launch asks again)
        return True
    return bool(options and options.get("dry_run"))


class NotPreviewed(Exception):
    """Said to the user as written."""


def import_previewed(job: ImportJob, *, actor, ip: str | None = None) -> ImportJob:
    """Import, as a new job, the file a done preview checked: its stored upload is copied for the
    new job (with the same format and mapping, for real), then the preview's is removed."""
    try:
        path = uploads.local_file(job.upload) if job.is_done else None
    except StorageError as exc:
        raise NotPreviewed(f"The previewed file could not be fetched ({exc}); try again later.") from None
    options = uploads.stored_options(path) if path is not None else None
    if not options or not options.get("dry_run"):
        raise NotPreviewed(
            "Only a finished preview whose file is still kept can be imported from here; upload it again."
        )
    with path.open("rb") as stored:
        uploaded = File(stored, name=job.file_name)
        uploaded.import_options = {**options, "dry_run": False}  # kept beside the copy (uploads.store)
        new = launch(
            uploaded,
            project=job.project,
            kind=job.kind,
            corpus=job.corpus_name,
            language="",
            update=job.update,
            deidentify=job.deidentify,
            actor=actor,
            ip=ip,
        )
    discard_upload(job, keep_preview=False)
    return new


def discard_leftovers() -> None:
    for job in ImportJob.objects.filter(status__in=ENDED).exclude(upload="").only("pk", "upload")[:100]:
        discard_upload(job)


def problem_text(job: ImportJob) -> str:
    """Every problem line the job keeps, one a line, for the download; then how many more were
    counted than kept (webapp.lib.problems.KEPT_PROBLEMS), if any."""
    lines = english_lines(job.problems)
    if job.more_problems:
        lines.append(f"... and {job.more_problems:,} more problems ({job.problem_count:,} in all), not kept")
    return "".join(f"{line}\n" for line in lines)


def recent(user):
    """The latest imports into the projects where `user` may import."""
    return ImportJob.objects.visible_to(user, Capability.IMPORT).select_related("created_by", "project")[:RECENT]


def _queue_error(job_id: int, message: str) -> None:
    ImportJob.objects.filter(pk=job_id, status=JobStatus.QUEUED).update(error=message)
