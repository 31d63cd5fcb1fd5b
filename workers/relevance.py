"""Tasks of the "relevance" queue. Thin: claim the chunk, get the worker's model, let
`webapp.pipeline.chunks` compute (with the job's RelevanceConfig) and store, report how it ended.

A worker of this queue computes AttnLRP relevance, which patches the model code for the
whole process (lxt): it must never train. Run it alone on its queue:

    celery -A workers worker --queues relevance --pool solo     # or prefork, one model per child

Redelivery: tasks are acked late and rejected when their worker is lost (settings), so on
Redis a chunk whose worker died is delivered again once the visibility timeout has passed;
`chunks.claim()` makes that harmless. The embedded filesystem broker cannot redeliver: there
the job stalls and the Resume button (jobs.resume) sends its unfinished chunks again.
"""
import logging
import time

from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from webapp.pipeline import chunks
from webapp.pipeline.modelcache import loaded_model
from workers.celery_app import app

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
MAX_RETRIES = 3


@app.task(bind=True, name="workers.relevance.run_chunk", max_retries=MAX_RETRIES)
def run_chunk(self, chunk_id: int) -> str:
    try:
        chunk = chunks.claim(chunk_id, worker=self.request.hostname or "")
    except TRANSIENT as exc:
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries))
    if chunk is None:
        return "nothing to do"
    started = time.monotonic()
    try:
        outcome = chunks.run(chunk, lambda: loaded_model(chunk.job.model_version, chunk.job.relevance_config.dtype))
    except TRANSIENT as exc:
        if self.request.retries < MAX_RETRIES:
            chunks.release(chunk_id, f"A temporary problem ({type(exc).__name__}); retrying.")
            raise self.retry(exc=exc, countdown=_backoff(self.request.retries))
        return _failed(chunk, exc, f"Failed {MAX_RETRIES + 1} times on a temporary problem ({type(exc).__name__}).")
    except SoftTimeLimitExceeded as exc:
        return _failed(chunk, exc, "The chunk took longer than the task time limit; launch with smaller chunks.")
    except Exception as exc:
        return _failed(chunk, exc, chunks.failure_message(exc, chunk))
    chunks.finish(chunk, time.monotonic() - started, outcome)
    log.info("chunk %s done (%s): %s maps computed, %s already stored", chunk_id, chunk.job.config_key,
             outcome.computed, outcome.already)
    return "done"


def _failed(chunk, exc, message: str) -> str:
    chunks.log_failure(chunk.pk, exc, message)
    chunks.fail(chunk.pk, message)
    return "failed"


def _backoff(retries: int) -> int:
    return 5 * 2**retries
