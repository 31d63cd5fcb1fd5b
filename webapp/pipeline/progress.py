"""How far a relevance job is: counts, throughput, ETA and errors, from its chunks.

One aggregate query over the job's chunks (indexed by job, status) plus the first few error
messages. Throughput is measured over finished chunks (prompts / seconds of computing), so
pauses between a cancel and a resume do not distort it; the ETA assumes as many workers as
chunks now running (at least one).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.db.models import Count, Sum

from webapp.pipeline.jobs import can_resume
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status
MAX_ERRORS = 5


@dataclass
class Progress:
    status: str
    status_label: str
    total: int  # prompts
    done: int  # prompts in DONE chunks
    chunks: dict[str, int]  # chunk status -> count
    prompts_per_second: float | None  # per worker, over finished chunks
    eta: timedelta | None
    errors: list[str] = field(default_factory=list)  # "chunk 3: ..." in plain words
    job_error: str = ""
    ended: bool = False
    resumable: bool = False  # cancelled, failed, cancelling, or stalled

    @property
    def cancellable(self) -> bool:
        return self.status in (JobStatus.QUEUED, JobStatus.RUNNING)

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def failed_chunks(self) -> int:
        return self.chunks.get(Chunk.FAILED, 0)

    @property
    def chunk_total(self) -> int:
        return sum(self.chunks.values())


def job_progress(job: RelevanceJob) -> Progress:
    rows = job.chunks.values("status").annotate(n=Count("pk"), size=Sum("size"), seconds=Sum("seconds"))
    by_status = {row["status"]: row for row in rows}
    counts = {status: by_status.get(status, {}).get("n", 0) for status in Chunk.values}
    finished = by_status.get(Chunk.DONE, {})
    done = finished.get("size") or 0
    seconds = finished.get("seconds") or 0.0
    rate = done / seconds if seconds > 0 else None
    ended = job.status not in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.CANCELLING)
    left = sum(by_status.get(s, {}).get("size") or 0 for s in (Chunk.PENDING, Chunk.RUNNING))
    eta = None
    if rate and left and not ended:
        eta = timedelta(seconds=round(left / (rate * max(counts[Chunk.RUNNING], 1))))
    errors = [
        f"Chunk {index + 1}: {error}"
        for index, error in job.chunks.filter(status__in=(Chunk.FAILED, Chunk.DONE, Chunk.PENDING))
        .exclude(error="").order_by("index").values_list("index", "error")[:MAX_ERRORS]
    ]
    return Progress(
        status=job.status, status_label=job.get_status_display(), total=job.total, done=done, chunks=counts,
        prompts_per_second=rate, eta=eta, errors=errors, job_error=job.error, ended=ended,
        resumable=can_resume(job),
    )
