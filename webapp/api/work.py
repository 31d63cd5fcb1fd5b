"""Cancel and resume of every kind of long work the API serves, in one place: one row per kind
(the path of one of its units, how it is fetched for the token's user, and its kind of long work,
whose registry entry, webapp.lifecycle.kinds, names its domain's cancel and resume, the refusal
they raise and its answer's schema: webapp.lifecycle.actions), from which `add_operations` makes
the operations `POST <path>/cancel` and `POST <path>/resume`. Each does what the kind's page does: fetch through
the access helper (another project's unit: 404; a role that may not launch: 403), one domain
call (a unit past cancelling or resuming: 409 saying why), the unit as it is now."""

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from ninja import Router
from ninja.errors import HttpError

from webapp.corpus.access import import_job_for
from webapp.datasets.access import dataset_for, export_for
from webapp.db.api import Error
from webapp.deid.access import job_for as deid_job_for
from webapp.evaluation.access import evaluation_for
from webapp.lifecycle import actions, kinds
from webapp.lifecycle.schemas import Conflict
from webapp.pipeline.access import job_for, map_import_job_for
from webapp.projects.roles import Capability
from webapp.training.access import run_for

LAUNCH = Capability.LAUNCH
IMPORT = Capability.IMPORT


@dataclass(frozen=True)
class Work:
    name: str  # the operations' names: cancel_<name>, resume_<name>
    path: str  # one unit's path; its {ids} are the fetch's arguments after the user, in order
    fetch: Callable  # (user, *ids) -> the unit, or 404 / 403
    kind: str  # its kind of long work: cancel, resume, refusal and schema come from its registry entry


WORK = (
    Work("job", "/jobs/{job_id}", lambda user, pk: job_for(user, pk, LAUNCH), "relevance plan"),
    Work("dataset", "/datasets/{dataset_id}", lambda user, pk: dataset_for(user, pk, LAUNCH), "dataset build"),
    Work("export", "/datasets/{dataset_id}/exports/{export_id}", export_for, "export"),
    Work("run", "/training-runs/{run_id}", lambda user, pk: run_for(user, pk, LAUNCH), "training run"),
    Work("evaluation", "/evaluations/{evaluation_id}", lambda user, pk: evaluation_for(user, pk, LAUNCH), "evaluation"),
    Work("import", "/imports/{job_id}", import_job_for, "import"),
    Work("deid_job", "/deid-jobs/{job_id}", lambda user, pk: deid_job_for(user, pk, LAUNCH), "deidentify"),
    Work("map_import", "/map-imports/{job_id}", lambda user, pk: map_import_job_for(user, pk, IMPORT), "map import"),
)


def add_operations(router: Router, work=WORK) -> Router:
    for row in work:
        for verb in ("cancel", "resume"):
            if actions.can(row.kind, verb):
                _add(router, row, verb)
    return router


def _add(router: Router, row: Work, verb: str) -> None:
    act = actions.cancel if verb == "cancel" else actions.resume

    def operation(request, **ids):
        unit = row.fetch(request.user, *ids.values())
        try:
            return act(row.kind, unit, request.user)
        except actions.Refused as exc:
            raise HttpError(409, str(exc)) from None

    # ninja reads the path's parameters from the signature: (request, *, job_id: int, ...)
    names = [part[1:-1] for part in row.path.split("/") if part.startswith("{")]
    parameters = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=int) for name in names]
    operation.__signature__ = inspect.Signature(parameters)
    operation.__name__ = operation.__qualname__ = f"{verb}_{row.name}"
    summary = f"{verb.capitalize()} a{'n' if row.name[0] in 'aeiou' else ''} {row.name.replace('_', ' ')}"
    answer = kinds.resolve(kinds.by_name(row.kind).api)
    router.post(f"{row.path}/{verb}", response={200: answer, 404: Error, 409: Conflict}, summary=summary)(operation)


router = add_operations(Router(tags=["cancel and resume"]))
