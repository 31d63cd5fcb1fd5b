"""The estimate of a dataset build, before it is launched (webapp.lifecycle.estimates)."""

from __future__ import annotations

from webapp.datasets.launch import BUILD_TASK
from webapp.datasets.models import DatasetVersion
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, elapsed, from_rate
from webapp.lifecycle.status import JobStatus


# relevance maps read; rate = maps / wall time of earlier finished builds.
def dataset_build(model_version, maps: int) -> Estimate:
    earlier = (
        DatasetVersion.objects.filter(model_version=model_version, status=JobStatus.DONE, maps_total__gt=0)
        .order_by("-finished")
        .values_list("maps_total", "started", "finished")[:RATE_SAMPLE]
    )
    return from_rate(maps, "maps", elapsed(earlier), work="build", queue_name=queue.queue_of(BUILD_TASK))
