"""A worker of the relevance queue that cannot load a unit's model gives the unit back for
another worker (relevance chunks: webapp.pipeline.chunks; evaluations:
webapp.evaluation.evaluations). Each worker's releases are counted on the unit (`releases`),
the workers that lacked the model listed on the page's row (`lacking`); once every worker that
released it, and every other relevance worker busy now, has released it RELEVANCE_RELEASE_LIMIT
times, the unit fails with a reason naming them (never an endless loop). A released unit is sent
again after RELEVANCE_RELEASE_DELAY_SECONDS x the releasing worker's count, at most
RELEASE_DELAY_CAP (workers.runner.send_released).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone

from webapp.lifecycle import units
from webapp.lifecycle.status import HELD, JobStatus
from webapp.lifecycle.units import Released  # what release_unloadable returns

RELEASE_DELAY_CAP = 60.0  # seconds: the longest wait before a released unit is sent again


def node_of(worker: str) -> str:
    """The Celery worker of a unit's `worker` ("relevance@host pid 12" -> "relevance@host"): the
    processes of one worker share its disk, its cache and so what it can load."""
    return worker.split(" pid ", 1)[0]


def busy_relevance_workers() -> set[str]:
    """The Celery workers holding a unit of the relevance queue now (a live heartbeat): workers
    alive that may be able to load a model another worker cannot. Idle workers need no list:
    they wait on the queue and take a released unit first."""
    from webapp.lifecycle.kinds import KINDS

    busy = set()
    for kind in KINDS:
        if kind.queue != "relevance":
            continue
        rows = kind.model_class().objects.filter(status=JobStatus.RUNNING, heartbeat__gte=units.stale_before())
        # named as release_unloadable names a releasing worker, so a worker is never two entries
        busy.update(node_of(w) or "?" for w in rows.exclude(worker="").values_list("worker", flat=True).distinct())
    return busy


def release_unloadable(
    unit,
    reason: str,
    *,
    model: str,
    lacking,
    lock: Callable | None = None,
    on_failed: Callable | None = None,
    held=HELD,
    queued: dict | None = None,
) -> Released | None:
    """Any unit of the relevance queue (a chunk, an evaluation: a WorkUnit with a `releases`
    field) whose worker cannot load `model`: back to queued for another worker, or failed once
    every live worker has released it RELEVANCE_RELEASE_LIMIT times. `lacking`: the row whose
    `lacking` field the page lists the worker on; `lock()` first takes what the kind locks;
    `on_failed()` counts the end (in the transaction); `held`: the statuses it may be released
    from; `queued`: the kind's own fields when queued again. None when the attempt no longer held it."""
    node, limit = node_of(unit.worker) or "?", settings.RELEVANCE_RELEASE_LIMIT
    reason = reason.strip().splitlines()[0][:400] if reason.strip() else "the model could not be loaded"
    with transaction.atomic():
        if lock is not None:
            lock()
        row = units.owned(unit, held).select_for_update().values("releases").first()
        if row is None:
            return None
        releases = dict(row["releases"] or {})
        releases[node] = releases.get(node, 0) + 1
        _record_lacking(lacking, node, model, reason)
        everyone = set(releases) | (busy_relevance_workers() - {node})
        if all(releases.get(worker, 0) >= limit for worker in everyone):
            message = (
                f"No worker could load model {model}: released {limit} times by each of "
                f"{', '.join(sorted(releases))} ({reason}). Make the model reachable by the relevance "
                "workers (docs/operations.md: What must be shared), then Resume."
            )[:2000]
            ended = units.owned(unit, held).update(
                status=JobStatus.FAILED, finished=Now(), heartbeat=Now(), error=message, releases=releases
            )
            if ended and on_failed is not None:
                on_failed()
            return Released(True, 0.0, message)
        message = (
            f"Worker {node} cannot load model {model} ({reason}); released for another worker "
            f"({releases[node]} of {limit} releases by this worker)."
        )[:2000]
        units.owned(unit, held).update(
            status=JobStatus.QUEUED, heartbeat=Now(), error=message, releases=releases, **(queued or {})
        )
    delay = min(settings.RELEVANCE_RELEASE_DELAY_SECONDS * releases[node], RELEASE_DELAY_CAP)
    return Released(False, delay, message)


def _record_lacking(rows, node: str, model: str, reason: str) -> None:
    """The page's list of workers that could not load its model, on the one row of `rows` (locked
    by the caller)."""
    lacking = rows.values_list("lacking", flat=True).first() or {}
    entry = lacking.get(node, {})
    lacking[node] = {
        "model": model,
        "reason": reason,
        "releases": int(entry.get("releases", 0)) + 1,
        "at": timezone.now().isoformat(timespec="seconds"),
    }
    rows.update(lacking=lacking)
