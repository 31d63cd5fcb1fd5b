"""Relevance evaluations, on the "relevance" queue (model-holding processes that lxt patches).
Thin: claim the evaluation, let `webapp.evaluation.running` compute and score, record how it ended.

One task computes every configuration of an evaluation in one process, AttnLRP last (its lxt
patches stay in the process for good; gradient x input refuses a patched process, and then the
evaluation fails with a message saying to restart the worker and Resume).

Recovery: the evaluation is computed inside a heartbeat (webapp.lifecycle.heartbeat). A worker that
dies stops beating; after WORK_STALL_SECONDS the recovery sweeper of any live worker queues the
evaluation again, and the next claim skips the maps already stored. A message that finds it held
by a live worker finds nothing to do. A temporary database or broker problem puts the evaluation
back in the queue and retries the task. A worker that cannot load the model
(webapp.pipeline.modelcache.ModelUnavailable) releases the evaluation for another worker and sends
it again after a back-off, as relevance chunks are (webapp.evaluation.evaluations.release_unloadable);
the evaluation page names the worker and the model.
The time limit (settings.EVALUATION_TIME_LIMIT, default a week) is far above Celery's default
for chunks: an evaluation of many configurations runs for hours on a CPU.
"""

import logging
import traceback

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings

from webapp.lifecycle import units
from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)

TIME_LIMIT = settings.EVALUATION_TIME_LIMIT


@app.task(
    bind=True,
    **retrying.options("workers.evaluation.run_evaluation"),
    soft_time_limit=TIME_LIMIT,
    time_limit=TIME_LIMIT + 600,
)
def run_evaluation(self, evaluation_id: int) -> str:
    from webapp.evaluation import evaluations, running
    from webapp.pipeline.modelcache import ModelUnavailable, loaded_model

    try:
        evaluation = evaluations.claim(evaluation_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if evaluation is None:
        log.info(
            "evaluation %s: not queued (held by a live worker, finished or cancelled); nothing to do", evaluation_id
        )
        return "nothing to do"
    try:
        outcome = running.execute(evaluation, lambda: loaded_model(evaluation.model_version))
    except ModelUnavailable as exc:
        return _released(evaluation, exc)
    except evaluations.EvaluationError as exc:
        evaluations.fail(evaluation, str(exc))
        return "failed"
    except retrying.TRANSIENT as exc:
        retrying.retry_released(self, exc, evaluation, release=lambda unit, message: evaluations.release(unit))
        return _failed(
            evaluation,
            exc,
            f"Stopped by a temporary problem ({type(exc).__name__}) that did not go away. "
            "Maps already stored are kept: press Resume.",
        )
    except SoftTimeLimitExceeded as exc:
        return _failed(
            evaluation,
            exc,
            "The evaluation took longer than the task time limit. Maps already stored "
            "are kept: press Resume to continue.",
        )
    except Exception as exc:
        return _failed(
            evaluation,
            exc,
            f"Unexpected error ({type(exc).__name__}); the worker log has the details. "
            "Maps already stored are kept: Resume continues from there.",
        )
    log.info("evaluation %s: %s", evaluation_id, outcome)
    return outcome


def _released(evaluation, exc: BaseException) -> str:
    """This worker cannot load the model: leave the evaluation to another worker (or fail it once
    every live worker has given it back often enough), and send it again after the back-off."""
    from webapp.evaluation import evaluations

    released = evaluations.release_unloadable(evaluation, str(exc))
    if released is None:
        if evaluations.cancelled(evaluation):  # cancel asked meanwhile: honoured, not queued again
            return "cancelled"
        log.info("evaluation %s: %s; this attempt stops", evaluation.pk, units.fate(evaluation))
        return "taken over"
    return retrying.send_released(run_evaluation, evaluation, released, "evaluation")


def _failed(evaluation, exc: BaseException, message: str) -> str:
    """Record the failure; log where it happened (code lines only: a message could quote a note)."""
    from webapp.evaluation import evaluations

    where = "".join(traceback.format_tb(exc.__traceback__)[-3:])
    log.error("evaluation %s failed: %s\n%s", evaluation.pk, message, where)
    evaluations.fail(evaluation, message)
    return "failed"
