"""The worker side of a relevance job: claim a chunk, compute its missing maps, store them.

Every step is safe to repeat, because a chunk's message may come more than once (a broker
redelivers a message whose worker died; the recovery sweeper sends a lost chunk again):
* `claim()` takes a queued chunk, or one whose worker was lost, in one conditional UPDATE
  (webapp.lifecycle.units.claim); a chunk held by a live worker, or ended, is left alone (the
  message is a duplicate). A chunk of a cancelling/cancelled job ends cancelled instead.
* `run()` computes only the pairs with no stored map of the job's configuration (a chunk taken
  over resumes where the lost worker stopped), with the job's ml.relevance.RelevanceConfig,
  and writes maps every STORE_EVERY prompts (rounded up to whole notes, so a note's prompts share
  their prefix: `note_batches`) by upsert on the maps' unique key (note, task,
  model version, config key), so nothing is ever written twice. It runs inside the worker's
  Heartbeat and stops writing as soon as the chunk was taken over.
* `finish()` / `fail()` / `release()` end the attempt (only the attempt that holds the chunk)
  and count it on the job in the same transaction (`jobs.count_chunk_end`, `jobs.settle`).
* `release_unloadable()`: this worker cannot load the job's model (not on its disk, storage
  unreachable: webapp.pipeline.modelcache.ModelUnavailable). The chunk goes back to queued for
  another worker, the worker's name and reason recorded on the chunk and on the job (the job page
  lists them); the released attempt does not count toward MAX_ATTEMPTS. Once every worker that
  released it, and every other relevance worker busy now, has released it
  RELEVANCE_RELEASE_LIMIT times, it fails with a reason that names them (never an endless loop).
  The rule is webapp.pipeline.releases, which relevance evaluations share.

Nothing here logs or stores note text: problems name note and task ids only.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Now

from webapp.corpus.models import Note, Task
from webapp.lifecycle import units
from webapp.lifecycle.ended import TRANSIENT
from webapp.lifecycle.kinds import RETRY
from webapp.logs import keeps_message
from webapp.pipeline import jobs, releases
from webapp.pipeline.modelcache import ModelUnavailable, loaded_model
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob, RelevanceMap

log = logging.getLogger(__name__)

Chunk = RelevanceChunk.Status
MAX_ATTEMPTS = 5  # a chunk whose worker dies this many times (out of memory?) fails
STORE_EVERY = 16  # prompts computed between two writes of maps
_TEXT_WINDOW = 16  # a message sharing this many consecutive characters with a note is withheld


@dataclass
class Outcome:
    computed: int = 0  # maps written by this attempt
    already: int = 0  # pairs that had a map before this attempt
    problems: list[str] = field(default_factory=list)  # plain words, ids only
    taken_over: bool = False  # another worker took the chunk over (this one was presumed lost)


def claim(chunk_id: int, worker: str = "") -> RelevanceChunk | None:
    """The chunk to run now (with its job), or None when there is nothing to do (a chunk of a
    job still being planned is left for the planner to send)."""
    claimable = RelevanceChunk.objects.filter(Q(status=Chunk.QUEUED) | units.lost(), pk=chunk_id).exclude(
        job__status=JobStatus.PLANNING
    )
    worn_out = claimable.filter(attempts__gte=F("attempts_before_resume") + MAX_ATTEMPTS)
    job_id = RelevanceChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
    if job_id is None:
        return None
    with transaction.atomic():
        jobs.lock_job(job_id)
        gave_up = worn_out.select_for_update().first()
        if gave_up is not None and worn_out.update(
            status=Chunk.FAILED,
            finished=Now(),
            error=f"Gave up after {MAX_ATTEMPTS} attempts: the worker stopped during each one "
            "(out of memory, or killed). Try smaller chunks, then Resume.",
        ):
            jobs.count_chunk_end(gave_up, Chunk.FAILED)
            jobs.settle(gave_up.job_id)
    if gave_up is not None:
        return None
    if not claimable.exists():
        return None
    chunk = units.claim(RelevanceChunk, chunk_id, worker, select_related=("job", "job__model_version"))
    if chunk is None:
        return None
    if chunk.job.status in (JobStatus.CANCELLING, JobStatus.CANCELLED):
        _end(chunk, Chunk.CANCELLED)
        return None
    jobs.mark_running(chunk.job_id)
    return chunk


def todo(chunk: RelevanceChunk) -> list[tuple[int, int]]:
    """The chunk's pairs that have no map yet for the job's model version and configuration."""
    job = chunk.job
    pairs = [(int(n), int(t)) for n, t in chunk.pairs]
    stored = set(
        RelevanceMap.objects.for_config(job.method, job.template, job.config_key)
        .filter(
            model_version_id=job.model_version_id,
            note_id__in={n for n, _ in pairs},
            task_id__in={t for _, t in pairs},
        )
        .values_list("note_id", "task_id")
    )
    return [pair for pair in pairs if pair not in stored]


def run(chunk: RelevanceChunk, get_model: Callable, compute: Callable | None = None, heart=None) -> Outcome:
    """Compute and store the chunk's missing maps. get_model() -> ml.models.LoadedModel is
    called only if something is left to compute; compute defaults to ml.relevance's. With the
    worker's `heart` (webapp.lifecycle.heartbeat), stop as soon as the chunk was taken over."""
    if compute is None:
        compute = relevance_compute()
    job, outcome = chunk.job, Outcome()
    pairs = todo(chunk)
    outcome.already = chunk.size - len(pairs)
    if not pairs:
        return outcome
    texts = dict(Note.objects.filter(pk__in={n for n, _ in pairs}).values_list("pk", "text"))
    descriptions = dict(Task.objects.filter(pk__in={t for _, t in pairs}).values_list("pk", "description"))
    runnable = [(n, t) for n, t in pairs if n in texts and t in descriptions]
    if len(runnable) < len(pairs):
        outcome.problems.append(f"{len(pairs) - len(runnable)} prompts skipped: their note or task was deleted.")
    if not runnable:
        return outcome
    config = job.relevance_config
    loaded = get_model()
    for batch in note_batches(runnable, STORE_EVERY):
        done = compute_pairs(loaded, compute, batch, texts, descriptions, config, outcome.problems)
        if heart is not None and heart.lost:  # upserts are harmless, but the new holder writes them
            outcome.taken_over = True
            return outcome
        outcome.computed += store(chunk, done)
        if heart is not None:
            heart.report()
    return outcome


def relevance_compute() -> Callable:
    """ml.relevance.compute_relevance with this deployment's execution options: whether a note's
    prompts share their prefix's forward pass (settings.RELEVANCE_SHARE_PREFIX; None: the
    device decides)."""
    from ml.relevance import compute_relevance

    return partial(compute_relevance, share_prefix=settings.RELEVANCE_SHARE_PREFIX)


def note_batches(pairs: list[tuple[int, int]], size: int):
    """The (note id, task id) pairs in consecutive batches of at least `size` (the last may be
    smaller), cut only where the note changes: a note's prompts, which come together (planned
    note by note), reach one compute_relevance call and share their prefix there."""
    batch: list[tuple[int, int]] = []
    for pair in pairs:
        if len(batch) >= size and pair[0] != batch[-1][0]:
            yield batch
            batch = []
        batch.append(pair)
    if batch:
        yield batch


def store(chunk: RelevanceChunk, computed: list) -> int:
    """Upsert maps for [((note_id, task_id), RelevanceResult), ...]; returns the count."""
    job = chunk.job
    return RelevanceMap.objects.store(
        computed,
        model_version_id=job.model_version_id,
        method=job.method,
        template=job.template,
        config_key=job.config_key,
        job_id=job.pk,
    )


def finish(chunk: RelevanceChunk, seconds: float, outcome: Outcome) -> bool:
    return _end(chunk, Chunk.DONE, seconds=round(seconds, 3), error=" ".join(outcome.problems)[:2000])


def run_claimed(chunk: RelevanceChunk, heart) -> str | releases.Released:
    """The runner's work for a claimed chunk (kind "relevance chunk", workers.runner): the worker's
    model, compute and store (run), and end it: "done", "taken over" (another attempt holds it), or
    the chunk given back when this worker cannot load the model (Released: sent again later)."""
    started = time.monotonic()
    try:
        outcome = run(
            chunk, lambda: loaded_model(chunk.job.model_version, chunk.job.relevance_config.dtype), heart=heart
        )
    except ModelUnavailable as exc:
        released = release_unloadable(chunk, str(exc))
        if released is None:
            log.info("chunk %s: %s; this attempt stops", chunk.pk, units.fate(chunk))
            return "taken over"
        return released
    if outcome.taken_over or not finish(chunk, time.monotonic() - started, outcome):
        log.info("chunk %s: %s; this attempt stops", chunk.pk, units.fate(chunk))
        return "taken over"
    log.info(
        "chunk %s done (%s): %s maps computed, %s already stored",
        chunk.pk,
        chunk.job.config_key,
        outcome.computed,
        outcome.already,
    )
    return "done"


def fail_unexpectedly(chunk: RelevanceChunk, exc: BaseException) -> bool:
    """The runner's record of an error (its temporary problems' retries spent, or any other)."""
    from celery.exceptions import SoftTimeLimitExceeded

    if isinstance(exc, SoftTimeLimitExceeded):
        message = "The chunk took longer than the task time limit; launch with smaller chunks."
    elif isinstance(exc, TRANSIENT):
        message = RETRY.gave_up(exc)
    else:
        message = failure_message(exc, chunk)
    return fail(chunk, message)


def fail(chunk: RelevanceChunk, message: str) -> bool:
    """The attempt failed for good: the job shows the message; Resume runs the chunk again."""
    return _end(chunk, Chunk.FAILED, error=message[:2000])


def release(chunk: RelevanceChunk, message: str) -> bool:
    """A temporary problem: back to queued until the retry's message comes."""
    return units.release(chunk, message[:2000])


def release_unloadable(chunk: RelevanceChunk, reason: str) -> releases.Released | None:
    """This attempt's worker cannot load the job's model: give the chunk back for another worker,
    or fail it once every live worker has released it RELEVANCE_RELEASE_LIMIT times. None when
    the attempt no longer held the chunk."""

    def failed():
        jobs.count_chunk_end(chunk, Chunk.FAILED)
        jobs.settle(chunk.job_id)

    return releases.release_unloadable(
        chunk,
        reason,
        model=chunk.job.model_version.name,
        lacking=RelevanceJob.objects.filter(pk=chunk.job_id),
        lock=partial(jobs.lock_job, chunk.job_id),
        on_failed=failed,
        # a released attempt is no worker death: it does not count toward MAX_ATTEMPTS
        queued={"attempts_before_resume": F("attempts_before_resume") + 1},
    )


def _end(chunk: RelevanceChunk, status: str, **fields) -> bool:
    """End this attempt of the chunk, count it on the job and settle the job, in one transaction
    (a worker killed at any point leaves all or nothing). False when the attempt no longer held
    the chunk (nothing is counted twice)."""
    with transaction.atomic():
        jobs.lock_job(chunk.job_id)
        ended = units.owned(chunk).update(status=status, finished=Now(), heartbeat=Now(), **fields) == 1
        if ended:
            jobs.count_chunk_end(chunk, status, fields.get("seconds") or 0.0)
            jobs.settle(chunk.job_id)
    return ended


def sweep(kind, now=None) -> tuple[list[int], list[int]]:
    """The recovery sweeper's pass over chunks (webapp.lifecycle.recovery): a lost chunk of a job
    being cancelled ends cancelled (no worker may ever come back for it), then the generic pass
    queues the other lost chunks again and re-sends waiting chunks whose messages were lost."""
    from webapp.lifecycle import recovery

    stopping = RelevanceChunk.objects.filter(
        units.lost(now), job__status__in=(JobStatus.CANCELLING, JobStatus.CANCELLED)
    )
    for chunk in stopping.select_related(None)[: recovery.BATCH]:
        with transaction.atomic():
            jobs.lock_job(chunk.job_id)
            if RelevanceChunk.objects.filter(units.lost(now), pk=chunk.pk).update(
                status=Chunk.CANCELLED, finished=Now()
            ):
                jobs.count_chunk_end(chunk, Chunk.CANCELLED)
                jobs.settle(chunk.job_id)
    return recovery.requeue_lost_workers(kind, now), recovery.resend_lost_messages(kind, now)


def failure_message(exc: BaseException, chunk: RelevanceChunk | None = None) -> str:
    """Plain words for a failed attempt, never quoting note text: the message of an exception is
    kept only when its type describes the system, not the data (webapp.logs.keeps_message: our
    own errors, files, connections, memory), and even then not if it shares a run of characters
    with a note of the chunk."""
    text = str(exc).strip().splitlines()[0][:400] if str(exc).strip() and keeps_message(exc) else ""
    if text and chunk is not None and _quotes_a_note(text, chunk):
        text = ""
    if not text:
        return f"Unexpected error ({type(exc).__name__}) while computing relevance; the worker log has the details."
    return f"Could not compute relevance ({type(exc).__name__}): {text}"


def log_failure(chunk_id: int, exc: BaseException, message: str) -> None:
    """Log where it failed (code lines only: a traceback's message could quote a note)."""
    where = "".join(traceback.format_tb(exc.__traceback__)[-3:])
    log.error("chunk %s failed: %s\n%s", chunk_id, message, where)


def compute_pairs(loaded, compute, batch, texts, descriptions, config, problems: list, what: str = "") -> list:
    """[(pair, result), ...] for the batch of (note id, task id) pairs. If the batch fails on a bad
    input (ValueError), each prompt is tried alone; those that fail are listed in `problems`
    ("... skipped{what} (reason)"), the reason withheld unless it describes the system, and when it
    quotes the note. Shared by relevance
    chunks and evaluations."""
    if not batch:
        return []
    try:
        results = compute(loaded, [texts[n] for n, _ in batch], [descriptions[t] for _, t in batch], config)
        return list(zip(batch, results))
    except ValueError as exc:
        if len(batch) > 1:
            return [
                item
                for pair in batch
                for item in compute_pairs(loaded, compute, [pair], texts, descriptions, config, problems, what)
            ]
        (note_id, task_id), reason = batch[0], str(exc).strip()[:200] if keeps_message(exc) else ""
        if not reason or _quotes(reason, [texts[note_id]]):
            reason = "invalid input"
        problems.append(f"Note {note_id} x task {task_id} skipped{what} ({reason}).")
        return []


def _quotes_a_note(message: str, chunk: RelevanceChunk) -> bool:
    note_ids = {int(n) for n, _ in chunk.pairs}
    texts = Note.objects.filter(pk__in=note_ids).values_list("text", flat=True)
    return _quotes(message, texts)


def _quotes(message: str, texts) -> bool:
    windows = {message[i : i + _TEXT_WINDOW] for i in range(max(len(message) - _TEXT_WINDOW + 1, 0))}
    return any(window in text for text in texts for window in windows)
