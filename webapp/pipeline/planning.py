"""Planning a relevance job into chunks: by a worker (queue "default"), never in a web request.

`plan(job, heart)` streams the selected notes by keyset (ids and external ids only, never note
text), draws each note's tasks, writes RelevanceChunk rows in bulk and reports its progress
(`notes_planned` of `notes_total`) through the heartbeat; at the end the job becomes queued with
its `total` and `chunk_count`, and one message per chunk is sent. A planner that dies is
replaced (the sweeper below, or Resume): planning starts again from nothing, deleting the chunks
the lost planner wrote (none of them was sent).

A job is held by a planner while it is "planning" with a `worker` name; waiting, it has none.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now

from ml.masking import sample_tasks
from webapp.lifecycle import queue, recovery, units
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.pipeline import jobs
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

log = logging.getLogger(__name__)

PLANNING = (JobStatus.PLANNING,)
NOTES_PER_REPORT = 2000
PAIRS_PER_WRITE = 50_000  # chunk rows are written in bulk once this many pairs are buffered


class PlanError(Exception):
    """The job cannot be planned; the message is in plain words for the page."""


def claim(job_id: int, worker: str = "") -> RelevanceJob | None:
    """Take a job waiting to be planned, or one whose planner was lost."""
    waiting = Q(status=JobStatus.PLANNING, worker="") | units.lost(held=PLANNING)
    if not RelevanceJob.objects.filter(waiting, pk=job_id).update(
        worker=(worker or "planner")[:200], attempts=F("attempts") + 1, heartbeat=Now(), error=""
    ):
        return None
    return RelevanceJob.objects.select_related("corpus").get(pk=job_id)


def plan_now(job: RelevanceJob, worker: str = "in-process", *, enqueue: bool = False) -> int:
    """Claim and plan in this process (scripts, tests). Returns the prompts planned."""
    claimed = claim(job.pk, worker)
    if claimed is None:
        raise PlanError(f"Job {job.pk} is not waiting to be planned.")
    with Heartbeat(claimed, held=PLANNING) as heart:
        total = plan(claimed, heart, enqueue=enqueue)
    job.refresh_from_db()
    return total


def plan(job: RelevanceJob, heart: Heartbeat, *, enqueue: bool = True) -> int:
    """Write the job's chunks, then queue the job and (enqueue) send its chunks. Returns the
    prompts planned (0 when the planner lost the job: cancelled, or taken over).

    Chunks are written with no heartbeat: the recovery sweeper sends only chunks with one (a time
    they were queued), and they get it in the transaction that queues the job, so no chunk runs
    while its job is still being planned. Every write first checks, under a row lock, that this
    planner still holds the job: a planner replaced meanwhile writes nothing more."""
    if not _write(job, []):
        return 0
    notes_total = jobs.selected_notes(job.corpus, job.note_filter).count()
    limit = job.note_filter.get("limit")
    notes_total = min(notes_total, limit) if limit else notes_total
    heart.report(notes_total=notes_total, notes_planned=0)
    pool = list(job.tasks.order_by("slug").values_list("slug", "pk"))
    slugs, ids = [slug for slug, _ in pool], dict(pool)
    sample = job.task_selection == RelevanceJob.TaskSelection.SAMPLE
    chunks, pending, total, index, notes = [], [], 0, 0, 0
    for note_id, external_id in jobs.note_keys(job.corpus, job.note_filter):
        for slug in sample_tasks(external_id, slugs, k=job.sample_k, seed=job.seed) if sample else slugs:
            pending.append([note_id, ids[slug]])
            if len(pending) == job.chunk_size:
                chunks.append(_chunk(job, index, pending))
                total, index, pending = total + len(pending), index + 1, []
                if len(chunks) * job.chunk_size >= PAIRS_PER_WRITE:
                    if heart.lost or not _write(job, chunks, keep=True):
                        return _stopped(job, notes)
                    chunks = []
        notes += 1
        if notes % NOTES_PER_REPORT == 0:
            heart.report(notes_planned=notes)
            if heart.lost:
                return _stopped(job, notes)
    if pending:
        chunks.append(_chunk(job, index, pending))
        total, index = total + len(pending), index + 1
    if heart.lost or not _write(job, chunks, keep=True):
        return _stopped(job, notes)
    if total == 0:
        fail(job, "The selection has no prompts.")
        return 0
    with transaction.atomic():
        planned = units.owned(job, PLANNING).update(
            status=JobStatus.QUEUED,
            total=total,
            chunk_count=index,
            notes_total=notes_total,
            notes_planned=notes,
            heartbeat=Now(),
            done=0,
            chunks_done=0,
            chunks_failed=0,
            chunks_cancelled=0,
            seconds_done=0.0,
        )
        if planned:
            RelevanceChunk.objects.filter(job=job).update(heartbeat=Now())  # queued now
    if not planned:
        return 0
    log.info("job %s planned: %s prompts in %s chunks", job.pk, total, index)
    if enqueue:
        jobs.enqueue_chunks(job.pk)
    return total


def _write(job: RelevanceJob, chunks: list, *, keep: bool = False) -> bool:
    """Write chunks if this planner still holds the job (False: it does not, nothing written).
    keep=False first deletes the chunks of an earlier, lost planner."""
    with transaction.atomic():
        if not units.owned(job, PLANNING).select_for_update().exists():
            return False
        if not keep:
            RelevanceChunk.objects.filter(job=job).delete()
        RelevanceChunk.objects.bulk_create(chunks)
    return True


def _stopped(job: RelevanceJob, notes: int) -> int:
    log.info("job %s: planning stopped (cancelled or taken over) after %s notes", job.pk, notes)
    return 0


def _chunk(job, index, pairs) -> RelevanceChunk:
    return RelevanceChunk(job=job, index=index, pairs=pairs, size=len(pairs))


def fail_unexpectedly(job: RelevanceJob, exc: BaseException) -> bool:
    """Planning stopped on an error (the runner, workers.runner): said by its type only."""
    return fail(
        job, f"Planning failed ({type(exc).__name__}); the worker log has the details. Press Resume to plan again."
    )


def fail(job: RelevanceJob, message: str) -> bool:
    """Planning failed: the job says why and keeps no partial plan (Resume plans again)."""
    with transaction.atomic():
        failed = units.owned(job, PLANNING).update(status=JobStatus.FAILED, finished=Now(), error=message) == 1
        if failed:
            RelevanceChunk.objects.filter(job=job).delete()
    return failed


def sweep(kind: recovery.Kind, now=None) -> tuple[list[int], list[int]]:
    """The recovery sweeper's pass for planning (see webapp.lifecycle.recovery): a planner that
    stopped beating is replaced; a job waiting for a planner whose message was lost is sent again."""
    lost = units.lost(now, held=PLANNING) & ~Q(worker="")
    lost_ids = []
    for pk in RelevanceJob.objects.filter(lost).values_list("pk", flat=True)[: recovery.BATCH]:
        if RelevanceJob.objects.filter(lost, pk=pk).update(
            worker="", heartbeat=Now(), error="The planner was lost; planning again automatically."
        ):
            lost_ids.append(pk)
    waiting = RelevanceJob.objects.filter(
        status=JobStatus.PLANNING, worker="", heartbeat__lt=units.before(settings.WORK_REQUEUE_GRACE_SECONDS, now)
    )
    resent = []
    if waiting.exists() and queue.waiting_messages(kind.queue) == 0:
        resent = list(waiting.values_list("pk", flat=True)[: recovery.BATCH])
        RelevanceJob.objects.filter(pk__in=resent, worker="").update(heartbeat=Now())
    if lost_ids or resent:
        recovery.send(kind, lost_ids + resent)
    jobs.settle_complete_jobs()  # a worker killed between ending a job's last chunk and settling it
    return lost_ids, resent
