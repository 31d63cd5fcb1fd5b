"""The estimate of a relevance job, before it is launched (webapp.lifecycle.estimates)."""

from __future__ import annotations

from webapp.lifecycle import queue
from webapp.lifecycle.estimates import Estimate, from_rate
from webapp.pipeline import jobs, sizing
from webapp.pipeline.models import RelevanceJob


# prompts = notes x tasks per note; rate = prompts / seconds of computing of the finished chunks,
# counters the job keeps (webapp.pipeline.jobs), so no chunk is read.
def relevance_job(spec) -> Estimate:
    notes = jobs.selected_notes(spec.corpus, spec.note_filter).count()
    if spec.note_filter.get("limit"):
        notes = min(notes, spec.note_filter["limit"])
    per_note = spec.sample_k if spec.task_selection == RelevanceJob.TaskSelection.SAMPLE else len(spec.task_pool())
    earlier = sizing.measured(spec.model_version)
    return from_rate(notes * per_note, "prompts", earlier, work="job", queue_name=queue.queue_of(jobs.RUN_CHUNK))
