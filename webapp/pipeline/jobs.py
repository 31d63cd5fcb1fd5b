"""Relevance jobs: what a job asks for, launch, cancel, resume, and how a job ends.

A job is the prompts (note, task) of a corpus selection x a task selection, for one model
version and relevance configuration. `launch()` only checks the request and creates the job
(status "planning"); a worker plans it (webapp.pipeline.planning: chunks of `chunk_size`
pairs, streamed over the notes by keyset, never note text) and sends one message per chunk
(`workers.relevance.run_chunk`), so a job of millions of prompts launches from the web page at
once. The worker side of a chunk (claim, compute, store) is in `webapp.pipeline.chunks`.

Statuses move only through atomic conditional updates, so two workers, or a worker and a person
pressing Cancel, never both win a transition:

    planning --planned--> queued --first chunk claimed--> running --every chunk ended--> done | failed
    planning --cancel--> cancelled
    queued/running --cancel--> cancelling --every chunk ended--> cancelled
    cancelled/failed (or a lost worker) --resume--> queued (or planning, if never planned)

Counters: a chunk that ends adds itself to the job's counters (done prompts, chunks done / failed
/ cancelled, seconds) in the same transaction as its own end, one UPDATE; `settle()` ends the job
when the counted chunks reach `chunk_count`. Neither ever sums over the chunks, so finishing a
chunk and polling the job page cost the same for 10 chunks or 300,000.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Case, Count, F, Q, Sum, Value, When
from django.db.models.functions import Now
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ml.prompts import template_label
from ml.relevance import ConfigError, RelevanceConfig
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note, Task
from webapp.lifecycle import queue, signals, units
from webapp.lifecycle.status import RESUMABLE
from webapp.pipeline.models import JobStatus, ModelVersion, RelevanceChunk, RelevanceJob
from webapp.pipeline.sizing import MAX_CHUNK_SIZE, chunk_size_for

log = logging.getLogger(__name__)

RUN_CHUNK = "workers.relevance.run_chunk"
PLAN_JOB = "workers.relevance.plan_job"
NOTE_FILTER_KEYS = ("ids", "external_ids", "limit")
SEND_BATCH = 10_000  # chunk messages sent per connection
NOTE_BATCH = 2000  # notes read per keyset query while planning

Chunk = RelevanceChunk.Status


class JobError(Exception):
    """A request the job cannot honour; the message is in plain words for the page."""


@dataclass
class JobSpec:
    """What a researcher asks for. `tasks` is the pool (empty: every task of the catalog and of the
    corpus's project)."""

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
    sample_k: int = 9  # the paper: 9 tasks per note
    seed: int = 0
    note_filter: dict = field(default_factory=dict)  # {"ids": [...]}, {"external_ids": [...]}, {"limit": N}
    chunk_size: int | None = None  # prompts a chunk; None: about 30 s at the model's measured rate (sizing)

    def task_pool(self) -> list[Task]:
        if self.tasks:
            return sorted(self.tasks, key=lambda t: t.slug)
        pool = (
            Task.objects.of_project(self.corpus.project_id).active(self.corpus.project_id).order_by("slug")
        )  # never another's
        return list(pool if self.include_held_out else pool.filter(held_out=False))

    def config(self) -> RelevanceConfig:
        """The job's relevance configuration (dtype "auto": the relevance worker's preferred
        dtype; an explicit dtype makes the worker load the model in it). Raises ConfigError."""
        try:
            template = normalise_template(self.template)
        except ValueError as exc:
            raise ConfigError("template", str(exc)) from None
        return RelevanceConfig(
            method=self.method,
            explain=self.explain,
            normalise=self.normalise,
            template=template,
            truncate=self.truncate,
            neutral=self.neutral,
            dtype=self.dtype,
        )

    def problems(self) -> dict[str, str]:
        """{field: plain-words problem}; empty when the spec can be launched."""
        problems = {}
        if self.method not in RelevanceJob.Method.values:
            problems["method"] = _("Unknown method %(method)s.") % {"method": repr(self.method)}
        try:
            self.config()
        except ConfigError as exc:
            if exc.field == "template":
                problems["template"] = _("The template is not usable: %(reason)s.") % {"reason": ml_reason(exc)}
            elif exc.field != "method":
                reason = ml_reason(exc)
                problems[exc.field] = f"{reason[:1].upper()}{reason[1:]}."
        if self.chunk_size is not None and not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            problems["chunk_size"] = _("The chunk size must be between 1 and %(max)s prompts.") % {
                "max": MAX_CHUNK_SIZE
            }
        if self.task_selection == RelevanceJob.TaskSelection.LIST and not self.tasks:
            problems["tasks"] = _("Choose at least one task.")
        pool = self.task_pool()
        if not pool:
            problems["tasks"] = _("There are no tasks to use: load the task catalog first.")
        elif self.task_selection == RelevanceJob.TaskSelection.SAMPLE and not 1 <= self.sample_k <= len(pool):
            problems["sample_k"] = _("k must be between 1 and %(count)s, the number of tasks to sample from.") % {
                "count": len(pool)
            }
        note_problem = _note_filter_problem(self.note_filter)
        if note_problem:
            problems["note_filter"] = note_problem
        elif not selected_notes(self.corpus, self.note_filter).exists():
            problems["note_filter"] = _("No note of corpus %(corpus)s matches this selection.") % {
                "corpus": self.corpus.name
            }
        return problems


# ml.relevance's refusals (ml has no Django) in the reader's language; one not listed stays as ml wrote it
ML_REASONS = {
    "template: template must contain {note} and {task} exactly once each": gettext_lazy(
        "template: template must contain {note} and {task} exactly once each"
    ),
    "template: {task} must come after {note} in the template": gettext_lazy(
        "template: {task} must come after {note} in the template"
    ),
    "template: template needs some text between {note} and {task}": gettext_lazy(
        "template: template needs some text between {note} and {task}"
    ),
    "the neutral description must be text": gettext_lazy("the neutral description must be text"),
    "a neutral description applies only to explain='contrastive'": gettext_lazy(
        "a neutral description applies only to explain='contrastive'"
    ),
    "explain='contrastive' with a custom template needs a neutral description (the built-in templates have one)": (
        gettext_lazy(
            "explain='contrastive' with a custom template needs a neutral description (the built-in templates have one)"
        )
    ),
}


def ml_reason(exc: Exception) -> str:
    return str(ML_REASONS.get(str(exc), exc))


def normalise_template(text: str) -> str:
    """'en'/'it'/'es' stay names; a custom text equal to a built-in becomes its name (one
    configuration key per prompt); any other text is validated. Raises ValueError."""
    return template_label((text or "").strip("\n") or "en")


@transaction.atomic
def launch(spec: JobSpec, actor=None, *, ip: str | None = None, enqueue: bool = True) -> RelevanceJob:
    """Create the job (status planning) and, after the commit, send it to a planner. Answers at
    once whatever the size of the job. enqueue=False leaves the planning to the caller
    (`planning.plan_now`: scripts and tests that run the job in-process). `ip`: the client's
    address, for the audit log, when a page launched it."""
    problems = spec.problems()
    if problems:
        raise JobError(" ".join(problems.values()))
    config = spec.config()
    spec.template = config.template
    job = RelevanceJob(
        corpus=spec.corpus,
        model_version=spec.model_version,
        task_selection=spec.task_selection,
        sample_k=spec.sample_k,
        seed=spec.seed,
        note_filter=spec.note_filter,
        chunk_size=spec.chunk_size or chunk_size_for(spec.model_version),
        created_by=_user(actor),
        status=JobStatus.PLANNING,
        heartbeat=Now(),
    )
    job.set_config(config)
    job.save()
    job.tasks.set(spec.task_pool())
    record(
        actor,
        AuditEvent.Action.LAUNCH_JOB,
        job,
        ip=ip,
        corpus=spec.corpus.pk,
        model=spec.model_version.name,
        method=spec.method,
        explain=config.explain,
        config=config.key,
        note_filter=audited_filter(spec.corpus, spec.note_filter),
        task_selection=spec.task_selection,
    )
    if enqueue:
        queue.send_on_commit(PLAN_JOB, job.pk, on_error=_say_queue_error(job.pk))
    return job


def _say_queue_error(job_id: int):
    """on_error for a send: the job page says the queue was unreachable (the sweeper retries)."""
    return lambda message: RelevanceJob.objects.filter(pk=job_id).update(error=message)


def enqueue_chunks(job_id: int) -> int:
    """Send one run_chunk message per queued chunk of the job. Returns the count sent."""
    ids = RelevanceChunk.objects.filter(job_id=job_id, status=Chunk.QUEUED).values_list("pk", flat=True)
    return send_chunks(job_id, ids.iterator(chunk_size=SEND_BATCH))


def send_chunks(job_id: int, ids) -> int:
    """Send one run_chunk message per chunk id, a connection per SEND_BATCH. If the broker cannot
    be reached, the job says so; the recovery sweeper sends them once it is back."""
    sent, batch = 0, []
    try:
        for chunk_id in ids:
            batch.append(chunk_id)
            if len(batch) == SEND_BATCH:
                sent += queue.send(RUN_CHUNK, *batch)
                batch = []
        sent += queue.send(RUN_CHUNK, *batch) if batch else 0
    except queue.QueueUnavailable as exc:
        RelevanceJob.objects.filter(pk=job_id).update(error=str(exc))
    return sent


@transaction.atomic
def cancel(job: RelevanceJob, actor=None) -> RelevanceJob:
    """Stop the job: a job being planned ends at once; otherwise running chunks finish and the
    queued ones are cancelled (their messages find them cancelled)."""
    if RelevanceJob.objects.filter(pk=job.pk, status=JobStatus.PLANNING).update(
        status=JobStatus.CANCELLED, finished=Now()
    ):
        job.chunks.all().delete()  # a partial plan (its planner stops at its next write)
        signals.announce_after_commit(RelevanceJob, job.pk)
        record(actor, AuditEvent.Action.CANCEL_JOB, job, skipped_chunks=0, planning=True)
        job.status = JobStatus.CANCELLED
        return job
    if not _move(job.pk, (JobStatus.QUEUED, JobStatus.RUNNING), status=JobStatus.CANCELLING):
        job.refresh_from_db(fields=["status"])
        raise JobError(
            _("Only a queued or running job can be cancelled; this one is %(status)s.")
            % {"status": job.get_status_display().lower()}
        )
    # waiting chunks, and chunks whose worker was lost (no worker may come back for them)
    skipped = job.chunks.filter(Q(status=Chunk.QUEUED) | units.lost()).update(status=Chunk.CANCELLED, finished=Now())
    RelevanceJob.objects.filter(pk=job.pk).update(chunks_cancelled=F("chunks_cancelled") + skipped)
    record(actor, AuditEvent.Action.CANCEL_JOB, job, skipped_chunks=skipped)
    transaction.on_commit(lambda: settle(job.pk))
    job.status = JobStatus.CANCELLING
    return job


def can_resume(job: RelevanceJob) -> bool:
    """Cancelled, failed, cancelling (its running chunks may finish), or a worker was lost."""
    return job.status in (*RESUMABLE, JobStatus.CANCELLING) or job.stalled_since() is not None


@transaction.atomic
def resume(job: RelevanceJob, actor=None, *, enqueue: bool = True) -> int:
    """Run again every chunk that did not finish (cancelled, failed, or held by a lost worker);
    a job whose planning never finished is planned again. Returns the number of chunks queued.
    Maps already stored are not computed again."""
    job.refresh_from_db()
    if not can_resume(job):
        if job.status == JobStatus.DONE:
            raise JobError(_("This job is done: there is nothing to resume."))
        raise JobError(
            _(
                "This job is %(status)s and its workers are alive; it can be "
                "resumed once cancelled, failed, or when a worker is lost."
            )
            % {"status": job.get_status_display().lower()}
        )
    if not job.chunk_count:  # never planned to the end
        if not _move(
            job.pk,
            (*RESUMABLE, JobStatus.PLANNING),
            status=JobStatus.PLANNING,
            worker="",
            error="",
            finished=None,
            heartbeat=Now(),
        ):
            raise JobError(_("This job changed meanwhile; reload the page."))
        record(actor, AuditEvent.Action.LAUNCH_JOB, job, resumed=True, planning=True)
        if enqueue:
            queue.send_on_commit(PLAN_JOB, job.pk, on_error=_say_queue_error(job.pk))
        job.status = JobStatus.PLANNING
        return 0
    if not _move(
        job.pk,
        (*RESUMABLE, JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING),
        status=JobStatus.QUEUED,
        finished=None,
        error="",
    ):
        raise JobError(_("This job changed meanwhile; reload the page."))
    again = Q(status__in=(Chunk.CANCELLED, Chunk.FAILED)) | units.lost()
    ids = list(job.chunks.filter(again).select_for_update().values_list("pk", flat=True))
    for start in range(0, len(ids), SEND_BATCH):
        # attempts never go back (see RelevanceChunk): a new series of attempts starts here
        RelevanceChunk.objects.filter(pk__in=ids[start : start + SEND_BATCH]).update(
            status=Chunk.QUEUED,
            heartbeat=Now(),
            error="",
            finished=None,
            attempts_before_resume=F("attempts"),
            releases={},  # every worker may give it back RELEVANCE_RELEASE_LIMIT times again
        )
    recount(job.pk)
    record(actor, AuditEvent.Action.LAUNCH_JOB, job, resumed=True, chunks=len(ids))
    if enqueue:  # only the chunks moved back: the others' messages still wait in the queue
        transaction.on_commit(lambda: send_chunks(job.pk, ids))
    transaction.on_commit(lambda: settle(job.pk))
    job.status = JobStatus.QUEUED
    return len(ids)


def mark_running(job_id: int) -> None:
    """The first claimed chunk moves the job from queued to running."""
    RelevanceJob.objects.filter(pk=job_id, status=JobStatus.QUEUED, started__isnull=True).update(started=Now())
    _move(job_id, (JobStatus.QUEUED,), status=JobStatus.RUNNING)


def lock_job(job_id: int) -> None:
    """Lock the job's row first, in every transaction that changes a job and its chunks, so that
    all take their locks in one order (job, then chunks) and never deadlock."""
    list(RelevanceJob.objects.select_for_update().filter(pk=job_id).values_list("pk", flat=True))


def count_chunk_end(chunk: RelevanceChunk, status: str, seconds: float = 0.0) -> None:
    """Add an ended chunk to its job's counters; call in the transaction that ended it."""
    field = {Chunk.DONE: "chunks_done", Chunk.FAILED: "chunks_failed", Chunk.CANCELLED: "chunks_cancelled"}[status]
    changes = {field: F(field) + 1}
    if status == Chunk.DONE:
        changes.update(done=F("done") + chunk.size, seconds_done=F("seconds_done") + seconds)
    RelevanceJob.objects.filter(pk=chunk.job_id).update(**changes)


def recount(job_id: int) -> None:
    """Set the job's counters from its chunks: one aggregate over them, so only where that is
    rare (Resume), never per chunk."""
    ended = RelevanceChunk.objects.filter(job_id=job_id).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(status=Chunk.DONE)),
        failed=Count("pk", filter=Q(status=Chunk.FAILED)),
        cancelled=Count("pk", filter=Q(status=Chunk.CANCELLED)),
        prompts=Sum("size", filter=Q(status=Chunk.DONE)),
        seconds=Sum("seconds", filter=Q(status=Chunk.DONE)),
    )
    RelevanceJob.objects.filter(pk=job_id).update(
        chunk_count=ended["total"],
        chunks_done=ended["done"],
        chunks_failed=ended["failed"],
        chunks_cancelled=ended["cancelled"],
        done=ended["prompts"] or 0,
        seconds_done=ended["seconds"] or 0.0,
    )


def settle_complete_jobs() -> int:
    """Settle the active jobs whose chunks have all ended (a worker killed between ending a job's
    last chunk and settling it); a query on the job table only. Returns how many were settled."""
    complete = RelevanceJob.objects.filter(
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING),
        chunk_count__gt=0,
        chunk_count=F("chunks_done") + F("chunks_failed") + F("chunks_cancelled"),
    )
    ids = list(complete.values_list("pk", flat=True)[:1000])
    for job_id in ids:
        settle(job_id)
    return len(ids)


def settle(job_id: int) -> None:
    """End the job once every chunk has ended: done (all chunks done), cancelled (it was
    cancelling, or chunks were cancelled) or failed (chunks failed). One UPDATE on the job row;
    safe to call any number of times."""
    ended = RelevanceJob.objects.filter(
        pk=job_id,
        status__in=(JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING),
        chunk_count__gt=0,
        chunk_count=F("chunks_done") + F("chunks_failed") + F("chunks_cancelled"),
    ).update(
        status=Case(
            When(chunks_done=F("chunk_count"), then=Value(JobStatus.DONE)),
            When(status=JobStatus.CANCELLING, then=Value(JobStatus.CANCELLED)),
            When(chunks_failed__gt=0, then=Value(JobStatus.FAILED)),
            default=Value(JobStatus.CANCELLED),
        ),
        finished=Now(),
    )
    if ended:
        # the one place a job ends once planned (a chunk's task, a cancel, the sweeper): announced here
        signals.announce_after_commit(RelevanceJob, job_id)
        failed, total = RelevanceJob.objects.values_list("chunks_failed", "chunk_count").get(pk=job_id)
        if failed:
            RelevanceJob.objects.filter(pk=job_id, status=JobStatus.FAILED).update(
                error=f"{failed} of {total} chunks failed (their errors are listed below). "
                "Press Resume to run them again."
            )
        log.info("job %s ended", job_id)


def _move(job_id: int, from_statuses, **changes) -> bool:
    return RelevanceJob.objects.filter(pk=job_id, status__in=from_statuses).update(**changes) == 1


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None


def _note_filter_problem(note_filter) -> str:
    if not isinstance(note_filter, dict):
        return _('The note selection must be an object such as {"limit": 200}.')
    unknown = sorted(set(note_filter) - set(NOTE_FILTER_KEYS))
    if unknown:
        return _("Unknown note selection %(keys)s; use %(known)s.") % {
            "keys": ", ".join(unknown),
            "known": ", ".join(NOTE_FILTER_KEYS),
        }
    if "ids" in note_filter and not (
        isinstance(note_filter["ids"], list) and all(isinstance(i, int) for i in note_filter["ids"])
    ):
        return _("Note ids must be a list of whole numbers.")
    if "external_ids" in note_filter and not (
        isinstance(note_filter["external_ids"], list) and all(isinstance(i, str) for i in note_filter["external_ids"])
    ):
        return _("External note ids must be a list of texts.")
    limit = note_filter.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        return _("The note limit must be a whole number of at least 1.")
    return ""


def audited_filter(corpus, note_filter: dict) -> dict:
    """The note selection as the audit log keeps it: notes chosen by external id are named by their
    row ids instead (a site's external ids may be record numbers; no identifier goes into a log)."""
    if "external_ids" not in note_filter:
        return note_filter
    kept = {key: value for key, value in note_filter.items() if key != "external_ids"}
    ids = (
        selected_notes(corpus, {"external_ids": note_filter["external_ids"]})
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return {**kept, "external_ids_as_note_ids": list(ids)}


def selected_notes(corpus, note_filter):
    notes = Note.objects.filter(corpus=corpus)
    if "ids" in note_filter:
        notes = notes.filter(pk__in=note_filter["ids"])
    if "external_ids" in note_filter:
        notes = notes.filter(external_id__in=note_filter["external_ids"])
    return notes


def note_keys(corpus, note_filter):
    """(id, external_id) of the selected notes in id order, by keyset; never the text."""
    notes, limit = selected_notes(corpus, note_filter), note_filter.get("limit")
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
