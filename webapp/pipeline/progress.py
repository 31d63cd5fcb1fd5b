"""How far a relevance job is: counts, throughput, ETA and errors, in O(1) queries.

Everything comes from the job's own row (the counters its chunks keep, webapp.pipeline.jobs),
the chunks running now (a handful: one per worker, on the (job, status) index) and the first
few chunk messages (a partial index of the chunks that have one). Nothing sums over the job's
chunks, so the page polls as fast for 300,000 chunks as for 10.

Throughput is measured over finished chunks (prompts / seconds of computing), so pauses
between a cancel and a resume do not distort it; the ETA assumes as many workers as chunks
running with a live heartbeat, and is never shown while a worker of the job is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.translation import gettext as _

from webapp.lifecycle import progress as rates
from webapp.lifecycle.status import JobStatus
from webapp.lifecycle.units import stale_before
from webapp.pipeline.error_text import error_words
from webapp.pipeline.jobs import can_resume
from webapp.pipeline.models import RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status
MAX_ERRORS = 5


@dataclass
class Progress:
    status: str
    status_label: str  # honest: "stalled: worker lost at HH:MM" for a lost worker
    total: int  # prompts
    done: int  # prompts in finished chunks
    chunks: dict[str, int]  # done, running, waiting, cancelled, failed
    prompts_per_second: float | None  # per worker, over finished chunks
    eta: timedelta | None
    errors: list[str] = field(default_factory=list)  # "Chunk 3: ..." in plain words
    job_error: str = ""
    ended: bool = False
    resumable: bool = False  # cancelled, failed, or a worker lost
    stalled_since: datetime | None = None
    notes_total: int = 0  # planning
    notes_planned: int = 0
    waiting_for_worker: bool = False  # chunks wait and no worker holds one: no ETA to give

    @property
    def cancellable(self) -> bool:
        return self.status in (JobStatus.PLANNING, JobStatus.QUEUED, JobStatus.RUNNING)

    @property
    def planning(self) -> bool:
        return self.status == JobStatus.PLANNING

    @property
    def percent(self) -> int:
        if self.planning:
            return int(100 * self.notes_planned / self.notes_total) if self.notes_total else 0
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def failed_chunks(self) -> int:
        return self.chunks.get("failed", 0)

    @property
    def chunk_total(self) -> int:
        return self.chunks.get("total", 0)


def job_progress(job: RelevanceJob, now=None) -> Progress:
    now = now or timezone.now()
    running = list(job.chunks.filter(status=Chunk.RUNNING).values_list("heartbeat", flat=True))
    stale = stale_before(now)  # on this process's clock, like `now`
    alive = sum(1 for beat in running if beat is not None and beat >= stale)
    stalled = job.stalled_since(now)
    ended = job.is_ended
    counted = job.chunks_done + job.chunks_failed + job.chunks_cancelled
    chunks = {
        "total": job.chunk_count,
        "done": job.chunks_done,
        "running": len(running),
        "waiting": max(job.chunk_count - counted - len(running), 0),
        "cancelled": job.chunks_cancelled,
        "failed": job.chunks_failed,
    }
    rate = rates.rate(job.done, job.seconds_done)
    waiting_for_worker = not ended and job.status != JobStatus.PLANNING and alive == 0
    eta = (
        None
        if ended or waiting_for_worker
        else rates.eta(job.total - job.done, rate, parallel=alive, stalled=stalled is not None)
    )
    errors = [
        _("Chunk %(number)s: %(error)s") % {"number": index + 1, "error": error_words(error)}
        for index, error in job.chunks.exclude(error="").order_by("index").values_list("index", "error")[:MAX_ERRORS]
    ]
    return Progress(
        status=job.status,
        status_label=job.status_text(now),
        total=job.total,
        done=job.done,
        chunks=chunks,
        prompts_per_second=rate,
        eta=eta,
        errors=errors,
        job_error=error_words(job.error),
        ended=ended,
        resumable=can_resume(job),
        stalled_since=stalled,
        notes_total=job.notes_total,
        notes_planned=job.notes_planned,
        waiting_for_worker=waiting_for_worker and stalled is None,
    )
