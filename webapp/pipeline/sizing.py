"""How many prompts go in a relevance chunk when the launch leaves it to the app.

A chunk's maps are stored, and the job's progress moves, when the chunk ends; so a chunk should
take about CHUNK_SECONDS on one relevance worker, whatever the hardware. The rate is the one the
launch estimate uses: prompts per second of chunk computing of this model's most recent jobs
(their counters, no chunk is read). A model with no measured job yet gets UNMEASURED_CHUNK
prompts a chunk: small, so its first maps and its first rate come within seconds on a GPU and
within a minute on a CPU.
"""

from __future__ import annotations

from webapp.lifecycle.estimates import RATE_SAMPLE
from webapp.pipeline.models import RelevanceJob

CHUNK_SECONDS = 30  # progress and maps about every half minute
UNMEASURED_CHUNK = 8  # prompts a chunk until the model has a measured rate
MAX_CHUNK_SIZE = 5000


def measured(model_version) -> list[tuple[int, float]]:
    """(prompts done, seconds of computing) of the model's most recent measured jobs."""
    rows = (
        RelevanceJob.objects.filter(model_version=model_version, done__gt=0, seconds_done__gt=0)
        .order_by("-pk")
        .values_list("done", "seconds_done")[:RATE_SAMPLE]
    )
    return list(rows)


def rate(model_version) -> float | None:
    """Prompts a second on one relevance worker, or None before any job of the model was measured."""
    samples = measured(model_version)
    if not samples:
        return None
    return sum(done for done, _ in samples) / sum(seconds for _, seconds in samples)


def chunk_size_for(model_version, seconds: float = CHUNK_SECONDS) -> int:
    """Prompts a chunk so that one takes about `seconds` (1 to MAX_CHUNK_SIZE)."""
    prompts_per_second = rate(model_version)
    if prompts_per_second is None:
        return UNMEASURED_CHUNK
    return max(1, min(MAX_CHUNK_SIZE, round(prompts_per_second * seconds)))
