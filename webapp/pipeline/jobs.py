"""Relevance jobs: what a job asks for, planning it into chunks, launch, cancel, resume, settle.

A job is the prompts (note, task) of a corpus selection x a task selection, for one model
version, method and template. `launch()` plans them ONCE, streaming over the notes by keyset
(ids and external ids only, never note text), into RelevanceChunk rows of `chunk_size` pairs,
and after the commit enqueues one Celery task per chunk (`workers.relevance.run_chunk`).
The worker side of a chunk (claim, compute, store) is in `webapp.pipeline.chunks`.

Job status only moves through atomic conditional updates (`filter(pk=, status=).update()`),
so two workers, or a worker and a person pressing Cancel, can never both win a transition:

    queued --first chunk claimed--> running --no chunk pending/running--> done | failed
    queued/running --cancel--> cancelling --no chunk running--> cancelled
    cancelling/cancelled/failed (or stalled queued/running) --resume--> queued

`job.done` is derived: the sum of the sizes of its DONE chunks, recomputed by `settle()` in
one UPDATE after every chunk, never incremented.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Case, Exists, F, Max, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from ml.masking import sample_tasks
from ml.prompts import template_label
from ml.relevance import ConfigError, RelevanceConfig
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.pipeline.models import JobStatus, ModelVersion, RelevanceChunk, RelevanceJob

log = logging.getLogger(__name__)

RUN_CHUNK = "workers.relevance.run_chunk"
MAX_CHUNK_SIZE = 5000
NOTE_BATCH = 2000  # notes read per keyset query while planning
PAIRS_PER_WRITE = 50_000  # chunk rows are written in bulk once this many pairs are buffered
# A queued/running job with no chunk started or finished for this long may be resumed.
STALL_SECONDS = getattr(settings, "RELEVANCE_STALL_SECONDS", 15 * 60)

Chunk = RelevanceChunk.Status
ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING)
RESUMABLE = (JobStatus.CANCELLING, JobStatus.CANCELLED, JobStatus.FAILED)
NOTE_FILTER_KEYS = ("ids", "external_ids", "limit")


class JobError(Exception):
    """A request the job cannot honour; the message is in plain words for the page."""


@dataclass
class JobSpec:
    """What a researcher asks for. `tasks` is the pool (empty: every task in the catalog)."""

    corpus: Corpus
    model_version: ModelVersion
    method: str = RelevanceJob.Method.ATTNLRP
    template: str = "en"  # 'en', 'it', 'es', or a custom text with {note} and {task}
    explain: str = RelevanceJob.Explain.NEXT  # which prediction is explained (ml.relevance)
    neutral: str = ""  # explain 'contrastive' only; empty: the template's ("the patient")
    normalise: str = "abs"  # reference code: |r| / max|r|; 'clip': max(r, 0) / max r
    truncate: str = "right"  # notes longer than the model's context keep their start
    dtype: str = "auto"  # "auto": the worker's preferred dtype (bf16 on GPUs and bf16 CPUs, else fp32)
    task_selection: str = RelevanceJob.TaskSelection.SAMPLE
    tasks: list[Task] = field(default_factory=list)
    include_held_out: bool = False  # held-out tasks are kept out of DSM training by default
    sample_k: int = 9  # the paper: 9 of 136 tasks per note
    seed: int = 0
    note_filter: dict = field(default_factory=dict)  # {"ids": [...]}, {"external_ids": [...]}, {"limit": N}
    chunk_size: int = 64

    def task_pool(self) -> list[Task]:
        if self.tasks:
            return sorted(self.tasks, key=lambda t: t.slug)
        pool = Task.objects.order_by("slug")
        return list(pool if self.include_held_out else pool.filter(held_out=False))

    def config(self) -> RelevanceConfig:
        """The job's relevance configuration (dtype "auto": the relevance worker's preferred
        dtype; an explicit dtype makes the worker load the model in it). Raises ConfigError."""
        try:
            template = normalise_template(self.template)
        except ValueError as exc:
            raise ConfigError("template", str(exc)) from None
        return RelevanceConfig(method=self.method, explain=self.explain, normalise=self.normalise,
                               template=template, truncate=self.truncate, neutral=self.neutral,
                               dtype=self.dtype)

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the spec can be launched."""
        problems = {}
        if self.method not in RelevanceJob.Method.values:
            problems["method"] = f"Unknown method {self.method!r}."
        try:
            self.config()
        except ConfigError as exc:
            if exc.field == "template":
                problems["template"] = f"The template is not usable: {exc}."
            elif exc.field != "method":
                problems[exc.field] = f"{str(exc)[:1].upper()}{str(exc)[1:]}."
        if not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            problems["chunk_size"] = f"The chunk size must be between 1 and {MAX_CHUNK_SIZE} prompts."
        if self.task_selection == RelevanceJob.TaskSelection.LIST and not self.tasks:
            problems["tasks"] = "Choose at least one task."
        pool = self.task_pool()
        if not pool:
            problems["tasks"] = "There are no tasks to use: load the task catalog first."
        elif self.task_selection == RelevanceJob.TaskSelection.SAMPLE and not 1 <= self.sample_k <= len(pool):
            problems["sample_k"] = f"k must be between 1 and {len(pool)}, the number of tasks to sample from."
        note_problem = _note_filter_problem(self.note_filter)
        if note_problem:
            problems["note_filter"] = note_problem
        elif not _notes(self.corpus, self.note_filter).exists():
            problems["note_filter"] = f"No note of corpus {self.corpus.name} matches this selection."
        return problems


def normalise_template(text: str) -> str:
    """'en'/'it'/'es' stay names; a custom text equal to a built-in becomes its name (one
    configuration key per prompt); any other text is validated. Raises ValueError."""
    return template_label((text or "").strip("\n") or "en")


@transaction.atomic
def launch(spec: JobSpec, actor=None, *, enqueue: bool = True) -> RelevanceJob:
    """Create the job, plan its chunks and, after the commit, enqueue them.
    enqueue=False leaves the chunks pending (scripts that run them in-process)."""
    problems = spec.problems()
    if problems:
        raise JobError(" ".join(problems.values()))
    config = spec.config()
    spec.template = config.template
    job = RelevanceJob(
        corpus=spec.corpus, model_version=spec.model_version, task_selection=spec.task_selection,
        sample_k=spec.sample_k, seed=spec.seed, note_filter=spec.note_filter, chunk_size=spec.chunk_size,
        created_by=_user(actor),
    )
    job.set_config(config)
    job.save()
    pool = spec.task_pool()
    job.tasks.set(pool)
    total = plan(job, pool)
    record(actor, AuditEvent.Action.LAUNCH_JOB, job, corpus=spec.corpus.pk, model=spec.model_version.name,
           method=spec.method, explain=config.explain, config=config.key, prompts=total, chunks=job.chunks.count())
    if enqueue:
        transaction.on_commit(partial(enqueue_pending, job.pk))
    return job


def plan(job: RelevanceJob, pool: list[Task]) -> int:
    """Write the job's chunks from its notes x tasks; set and return job.total."""
    slugs = [task.slug for task in pool]
    ids = {task.slug: task.pk for task in pool}
    chunks, pending, total, index = [], [], 0, 0
    for note_id, external_id in _note_keys(job.corpus, job.note_filter):
        if job.task_selection == RelevanceJob.TaskSelection.SAMPLE:
            chosen = sample_tasks(external_id, slugs, k=job.sample_k, seed=job.seed)
        else:
            chosen = slugs
        for slug in chosen:
            pending.append([note_id, ids[slug]])
            if len(pending) == job.chunk_size:
                chunks.append(RelevanceChunk(job=job, index=index, pairs=pending, size=len(pending)))
                total, index, pending = total + len(pending), index + 1, []
                if len(chunks) * job.chunk_size >= PAIRS_PER_WRITE:
                    RelevanceChunk.objects.bulk_create(chunks)
                    chunks = []
    if pending:
        chunks.append(RelevanceChunk(job=job, index=index, pairs=pending, size=len(pending)))
        total += len(pending)
    RelevanceChunk.objects.bulk_create(chunks)
    if total == 0:
        raise JobError("The selection has no prompts.")
    RelevanceJob.objects.filter(pk=job.pk).update(total=total)
    job.total = total
    return total


def enqueue_pending(job_id: int) -> int:
    """Send one run_chunk message per pending chunk of the job. Returns the count sent.
    If the broker cannot be reached, the job says so and Resume sends them again."""
    from workers.celery_app import app

    ids = RelevanceChunk.objects.filter(job_id=job_id, status=Chunk.PENDING).values_list("pk", flat=True)
    sent = 0
    try:
        with app.producer_or_acquire() as producer:
            for chunk_id in ids.iterator(chunk_size=2000):
                app.send_task(RUN_CHUNK, args=[chunk_id], producer=producer)
                sent += 1
    except Exception as exc:  # kombu raises several connection error types
        log.error("job %s: could not enqueue chunks (%s)", job_id, type(exc).__name__)
        RelevanceJob.objects.filter(pk=job_id).update(
            error=f"The task queue could not be reached ({type(exc).__name__}); {sent} chunks were sent. "
                  "Press Resume when the queue is back.")
    return sent


@transaction.atomic
def cancel(job: RelevanceJob, actor=None) -> RelevanceJob:
    """Stop the job between chunks: running chunks finish, the others are skipped."""
    if not _move(job.pk, (JobStatus.QUEUED, JobStatus.RUNNING), status=JobStatus.CANCELLING):
        job.refresh_from_db(fields=["status"])
        raise JobError(f"Only a queued or running job can be cancelled; this one is {job.get_status_display().lower()}.")
    # Messages of these chunks may still be queued: they will find the chunk skipped.
    skipped = job.chunks.filter(status=Chunk.PENDING).update(status=Chunk.SKIPPED, finished=timezone.now())
    record(actor, AuditEvent.Action.CANCEL_JOB, job, skipped_chunks=skipped)
    transaction.on_commit(partial(settle, job.pk))
    job.status = JobStatus.CANCELLING
    return job


def is_stalled(job: RelevanceJob, now=None) -> bool:
    """Queued or running, yet no chunk started or finished for STALL_SECONDS (its worker
    died and the broker did not, or cannot, redeliver)."""
    if job.status not in (JobStatus.QUEUED, JobStatus.RUNNING):
        return False
    now = now or timezone.now()
    seen = job.chunks.aggregate(started=Max("started"), finished=Max("finished"))
    latest = max(filter(None, [seen["started"], seen["finished"], job.started, job.created]))
    return now - latest > timedelta(seconds=STALL_SECONDS)


def can_resume(job: RelevanceJob) -> bool:
    return job.status in RESUMABLE or is_stalled(job)


@transaction.atomic
def resume(job: RelevanceJob, actor=None, *, enqueue: bool = True) -> int:
    """Run again every chunk that is not DONE (pending, skipped, failed, stale running).
    Returns the number of chunks enqueued. Maps already stored are not recomputed."""
    stalled = is_stalled(job)
    allowed = (JobStatus.QUEUED, JobStatus.RUNNING) if stalled else RESUMABLE
    if not _move(job.pk, allowed, status=JobStatus.QUEUED, finished=None, error=""):
        job.refresh_from_db(fields=["status"])
        if job.status == JobStatus.DONE:
            raise JobError("This job is done: there is nothing to resume.")
        raise JobError(f"This job is {job.get_status_display().lower()} and still making progress; "
                       f"it can be resumed once cancelled, failed, or stalled for {STALL_SECONDS // 60} minutes.")
    again = Q(status__in=(Chunk.PENDING, Chunk.SKIPPED, Chunk.FAILED))
    if stalled:
        again |= Q(status=Chunk.RUNNING)  # its worker is gone: nothing moved for STALL_SECONDS
    count = job.chunks.filter(again).update(status=Chunk.PENDING, attempts=0, error="", finished=None)
    record(actor, AuditEvent.Action.LAUNCH_JOB, job, resumed=True, chunks=count)
    if enqueue:
        transaction.on_commit(partial(enqueue_pending, job.pk))
    transaction.on_commit(partial(settle, job.pk))
    job.status = JobStatus.QUEUED
    return count


def mark_running(job_id: int) -> None:
    """The first claimed chunk moves the job from queued to running."""
    _move(job_id, (JobStatus.QUEUED,), status=JobStatus.RUNNING, started=Coalesce(F("started"), Now()))


def settle(job_id: int) -> None:
    """Derive job.done from the DONE chunks, then end the job if no chunk is pending or
    running: done (all chunks done), cancelled (it was cancelling, or chunks were skipped),
    or failed (chunks failed). Two UPDATE statements; safe to call any number of times."""
    chunks = RelevanceChunk.objects.filter(job=OuterRef("pk"))
    done_sum = chunks.filter(status=Chunk.DONE).values("job").annotate(s=Sum("size")).values("s")
    RelevanceJob.objects.filter(pk=job_id).update(done=Coalesce(Subquery(done_sum), 0))
    ended = (
        RelevanceJob.objects.filter(pk=job_id, status__in=ACTIVE)
        .exclude(Exists(chunks.filter(status__in=(Chunk.PENDING, Chunk.RUNNING))))
        .update(
            status=Case(
                When(~Exists(chunks.exclude(status=Chunk.DONE)), then=Value(JobStatus.DONE)),
                When(status=JobStatus.CANCELLING, then=Value(JobStatus.CANCELLED)),
                When(Exists(chunks.filter(status=Chunk.FAILED)), then=Value(JobStatus.FAILED)),
                default=Value(JobStatus.CANCELLED),
            ),
            finished=Now(),
        )
    )
    if ended:
        failed = RelevanceChunk.objects.filter(job_id=job_id, status=Chunk.FAILED).count()
        if failed:
            total = RelevanceChunk.objects.filter(job_id=job_id).count()
            RelevanceJob.objects.filter(pk=job_id, status=JobStatus.FAILED).update(
                error=f"{failed} of {total} chunks failed (their errors are listed below). "
                      "Press Resume to run them again.")
        log.info("job %s ended", job_id)


def _move(job_id: int, from_statuses, **changes) -> bool:
    return RelevanceJob.objects.filter(pk=job_id, status__in=from_statuses).update(**changes) == 1


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _note_filter_problem(note_filter) -> str:
    if not isinstance(note_filter, dict):
        return "The note selection must be an object such as {\"limit\": 200}."
    unknown = sorted(set(note_filter) - set(NOTE_FILTER_KEYS))
    if unknown:
        return f"Unknown note selection {', '.join(unknown)}; use {', '.join(NOTE_FILTER_KEYS)}."
    if "ids" in note_filter and not (isinstance(note_filter["ids"], list)
                                     and all(isinstance(i, int) for i in note_filter["ids"])):
        return "Note ids must be a list of whole numbers."
    if "external_ids" in note_filter and not (isinstance(note_filter["external_ids"], list)
                                              and all(isinstance(i, str) for i in note_filter["external_ids"])):
        return "External note ids must be a list of texts."
    limit = note_filter.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        return "The note limit must be a whole number of at least 1."
    return ""


def _notes(corpus, note_filter):
    notes = Note.objects.filter(corpus=corpus)
    if "ids" in note_filter:
        notes = notes.filter(pk__in=note_filter["ids"])
    if "external_ids" in note_filter:
        notes = notes.filter(external_id__in=note_filter["external_ids"])
    return notes


def _note_keys(corpus, note_filter):
    """(id, external_id) of the selected notes in id order, by keyset; never the text."""
    notes, limit = _notes(corpus, note_filter), note_filter.get("limit")
    last, seen = 0, 0
    while True:
        size = NOTE_BATCH if limit is None else min(NOTE_BATCH, limit - seen)
        if size <= 0:
            return
        batch = list(notes.filter(pk__gt=last).order_by("pk").values_list("pk", "external_id")[:size])
        if not batch:
            return
        yield from batch
        seen, last = seen + len(batch), batch[-1][0]
