"""Cancel and resume of every kind of long work the API serves, in one place: one row per kind
(the path of one of its units, how it is fetched for the token's user, its domain's cancel and
resume, the refusal they raise, its answer), from which `add_operations` makes the operations
`POST <path>/cancel` and `POST <path>/resume`. Each does what the kind's page does: fetch through
the access helper (another project's unit: 404; a role that may not launch: 403), one domain
call (a unit past cancelling or resuming: 409 saying why), the unit as it is now.

When webapp.lifecycle.kinds carries each kind's API representation (issue 40, item 4), WORK is
derived from the registry and this module keeps only `add_operations`."""

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ninja import Router
from ninja.errors import HttpError

from webapp.corpus import import_jobs
from webapp.corpus.access import import_job_for
from webapp.corpus.api import ImportOut
from webapp.datasets import launch as dataset_launch
from webapp.datasets.access import dataset_for, export_for
from webapp.datasets.api import DatasetOut, ExportOut
from webapp.db.api import Error
from webapp.deid.access import job_for as deid_job_for
from webapp.deid_ops import jobs as deid_jobs
from webapp.deid_ops.api import DeidJobOut
from webapp.evaluation import evaluations
from webapp.evaluation.access import evaluation_for
from webapp.evaluation.api import EvaluationOut
from webapp.lifecycle.schemas import Conflict
from webapp.pipeline import jobs
from webapp.pipeline.access import job_for
from webapp.pipeline.api import JobOut
from webapp.projects.roles import Capability
from webapp.training import runs
from webapp.training.access import run_for
from webapp.training.api import RunOut

LAUNCH = Capability.LAUNCH


@dataclass(frozen=True)
class Work:
    name: str  # the operations' names: cancel_<name>, resume_<name>
    path: str  # one unit's path; its {ids} are the fetch's arguments after the user, in order
    fetch: Callable  # (user, *ids) -> the unit, or 404 / 403
    answer: type  # the unit's schema
    cancel: Callable  # (unit, actor=) -> anything; raises `refused` when it cannot
    resume: Callable | None = None  # as cancel; None: the kind is not resumed by API
    refused: type[Exception] | tuple = ()  # none: nothing it raises is a refusal
    # a kind whose cancel / resume says "nothing done" by returning None or False: the 409's detail
    cancel_ended: str = ""
    resume_ended: str = ""


WORK = (
    Work(
        "job",
        "/jobs/{job_id}",
        lambda user, pk: job_for(user, pk, LAUNCH),
        JobOut,
        jobs.cancel,
        jobs.resume,
        jobs.JobError,
    ),
    Work(
        "dataset",
        "/datasets/{dataset_id}",
        lambda user, pk: dataset_for(user, pk, LAUNCH),
        DatasetOut,
        dataset_launch.cancel_build,
        refused=dataset_launch.LaunchError,
    ),
    Work(
        "export",
        "/datasets/{dataset_id}/exports/{export_id}",
        export_for,
        ExportOut,
        dataset_launch.cancel_export,
        refused=dataset_launch.LaunchError,
    ),
    Work(
        "run",
        "/training-runs/{run_id}",
        lambda user, pk: run_for(user, pk, LAUNCH),
        RunOut,
        runs.cancel,
        runs.resume,
        runs.RunError,
    ),
    Work(
        "evaluation",
        "/evaluations/{evaluation_id}",
        lambda user, pk: evaluation_for(user, pk, LAUNCH),
        EvaluationOut,
        evaluations.cancel,
        evaluations.resume,
        evaluations.EvaluationError,
    ),
    Work(
        "import",
        "/imports/{job_id}",
        import_job_for,
        ImportOut,
        import_jobs.cancel,
        cancel_ended="This import has already ended.",
    ),
    Work(
        "deid_job",
        "/deid-jobs/{job_id}",
        lambda user, pk: deid_job_for(user, pk, LAUNCH),
        DeidJobOut,
        deid_jobs.cancel,
        deid_jobs.resume,
        cancel_ended="This job has ended; there is nothing to cancel.",
        resume_ended="Only a cancelled or failed job, or one whose worker was lost, can be resumed.",
    ),
)


def add_operations(router: Router, work=WORK) -> Router:
    for kind in work:
        _add(router, kind, "cancel", kind.cancel, kind.cancel_ended)
        if kind.resume is not None:
            _add(router, kind, "resume", kind.resume, kind.resume_ended)
    return router


def _add(router: Router, kind: Work, verb: str, act: Callable, ended: str) -> None:
    def operation(request, **ids):
        unit = kind.fetch(request.user, *ids.values())
        try:
            outcome = act(unit, actor=request.user)
        except kind.refused as exc:
            raise HttpError(409, str(exc)) from None
        if ended and not outcome:
            raise HttpError(409, ended)
        unit.refresh_from_db()
        return unit

    # ninja reads the path's parameters from the signature: (request, *, job_id: int, ...)
    names = [part[1:-1] for part in kind.path.split("/") if part.startswith("{")]
    parameters = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=int) for name in names]
    operation.__signature__ = inspect.Signature(parameters)
    operation.__name__ = operation.__qualname__ = f"{verb}_{kind.name}"
    summary = f"{verb.capitalize()} a{'n' if kind.name[0] in 'aeiou' else ''} {kind.name.replace('_', ' ')}"
    router.post(f"{kind.path}/{verb}", response={200: kind.answer, 404: Error, 409: Conflict}, summary=summary)(
        operation
    )


router = add_operations(Router(tags=["cancel and resume"]))
