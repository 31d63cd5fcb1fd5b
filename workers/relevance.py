"""Tasks of relevance jobs. Thin: claim, call `webapp.pipeline`, report how it ended.

`plan_job` (queue "default"): a job launched from the web page is planned here into chunks,
then its chunks are sent (webapp.pipeline.planning).

`run_chunk` (queue "relevance"): claim the chunk, get the worker's model, let
`webapp.pipeline.chunks` compute (with the job's RelevanceConfig) and store, beating all along
(webapp.lifecycle.heartbeat). A worker of this queue computes AttnLRP relevance, which patches
the model code for the whole process (lxt): it must never train. Run it alone on its queue:

    celery -A workers worker --queues relevance --pool solo     # or prefork, one model per child

A worker that cannot load the job's model (not on its disk, its storage unreachable:
webapp.pipeline.modelcache.ModelUnavailable) releases the chunk for another worker and sends it
again after a back-off (webapp.pipeline.chunks.release_unloadable); the job page names the
worker and the model. A chunk every live worker released RELEVANCE_RELEASE_LIMIT times fails.

Recovery: a chunk whose worker stops beating is queued and sent again by the recovery sweeper
that every worker runs (webapp.lifecycle.recovery), within WORK_STALL_SECONDS plus a sweep, on
Redis and on the embedded filesystem broker alike; a redelivered message finds it taken.
"""

import logging
import time

from celery.exceptions import SoftTimeLimitExceeded

from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.pipeline import chunks, planning
from webapp.pipeline.modelcache import ModelUnavailable, loaded_model
from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)


@app.task(bind=True, **retrying.options("workers.relevance.plan_job"))
def plan_job(self, job_id: int) -> str:
    try:
        job = planning.claim(job_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if job is None:
        return "nothing to do"
    try:
        with Heartbeat(job, held=planning.PLANNING) as heart:
            total = planning.plan(job, heart)
    except Exception as exc:  # noqa: BLE001 - the job records it in plain words
        log.error("job %s: planning failed (%s)", job_id, type(exc).__name__)
        planning.fail(
            job, f"Planning failed ({type(exc).__name__}); the worker log has the details. Press Resume to plan again."
        )
        return "failed"
    return f"planned {total} prompts"


@app.task(bind=True, **retrying.options("workers.relevance.run_chunk"))
def run_chunk(self, chunk_id: int) -> str:
    try:
        chunk = chunks.claim(chunk_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if chunk is None:
        return "nothing to do"
    started = time.monotonic()
    try:
        with Heartbeat(chunk) as heart:
            outcome = chunks.run(
                chunk, lambda: loaded_model(chunk.job.model_version, chunk.job.relevance_config.dtype), heart=heart
            )
    except ModelUnavailable as exc:
        return _released(chunk, exc)
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, chunk, release=chunks.release)
        return _failed(chunk, exc, retrying.failed_message(exc, self.request.retries))
    except SoftTimeLimitExceeded as exc:
        return _failed(chunk, exc, "The chunk took longer than the task time limit; launch with smaller chunks.")
    except Exception as exc:
        return _failed(chunk, exc, chunks.failure_message(exc, chunk))
    if outcome.taken_over or not chunks.finish(chunk, time.monotonic() - started, outcome):
        log.info("chunk %s: %s; this attempt stops", chunk_id, units.fate(chunk))
        return "taken over"
    log.info(
        "chunk %s done (%s): %s maps computed, %s already stored",
        chunk_id,
        chunk.job.config_key,
        outcome.computed,
        outcome.already,
    )
    return "done"


def _released(chunk, exc: ModelUnavailable) -> str:
    """This worker cannot load the model: leave the chunk to another worker (or fail it once every
    live worker has given it back often enough), and send it again after the back-off."""
    released = chunks.release_unloadable(chunk, str(exc))
    if released is None:
        log.info("chunk %s: %s; this attempt stops", chunk.pk, units.fate(chunk))
        return "taken over"
    return retrying.send_released(run_chunk, chunk, released, "chunk")


def _failed(chunk, exc, message: str) -> str:
    chunks.log_failure(chunk.pk, exc, message)
    chunks.fail(chunk, message)
    return "failed"
