"""The API's relevance evaluations (mounted under /api/ by webapp.api.api): list, read, launch as
the New evaluation page does (webapp.evaluation.evaluations); cancel and resume are webapp.api.work's."""

from ninja import Query, Router, Status
from ninja.errors import HttpError
from pydantic import Field

from webapp.corpus.access import corpus_for
from webapp.corpus.api import tasks_named
from webapp.db.api import Error, LaunchBody, validated
from webapp.db.pagination import PageQuery, page, page_of
from webapp.evaluation import estimates, evaluations
from webapp.evaluation.access import evaluation_for
from webapp.evaluation.forms import EvaluationForm
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.schemas import Conflict, UnitOut, must_confirm
from webapp.pipeline.models import PeakProfile, RelevanceJob
from webapp.projects.roles import Capability

router = Router(tags=["evaluations"])


class EvaluationOut(UnitOut):
    corpus: int = Field(alias="corpus_id")
    model_version: int = Field(alias="model_version_id")
    phase: str
    done: int
    total: int
    # the stage in hand (maps, faithfulness, scoring), its own done/total and time left
    stage: str
    stage_done: int = Field(alias="progress_done")
    stage_total: int = Field(alias="progress_total")
    stage_seconds_left: float | None = Field(alias="eta_seconds", description="Null: not measured yet, or not running.")
    lacking: dict
    result: dict


class EvaluationIn(LaunchBody):
    """The fields of the New evaluation page; tasks by slug."""

    corpus: int
    model_version: int
    methods: list[str] = [RelevanceJob.Method.ATTNLRP]
    explains: list[str] = ["next"]
    template: str = "auto"  # the corpus language's template, or a template's name
    profile: int | None = None  # none: the default peak profile
    tasks: list[str] = []
    pairs_from: str = "evidence"  # or "notes": drawn notes x every chosen task, gold or not
    max_pairs: int | None = 200
    seed: int = 0
    faithfulness: bool = False


@router.get("/evaluations", response=page_of(EvaluationOut))
def list_evaluations(request, query: Query[PageQuery]):
    return page(request, RelevanceEvaluation.objects.visible_to(request.user), query)


@router.get("/evaluations/{evaluation_id}", response={200: EvaluationOut, 404: Error})
def get_evaluation(request, evaluation_id: int):
    return evaluation_for(request.user, evaluation_id)


@router.post(
    "/evaluations",
    response={202: EvaluationOut, 400: Error, 404: Error, 409: Conflict},
    summary="Launch a relevance evaluation (localisation, faithfulness)",
)
def launch_evaluation(request, body: EvaluationIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)  # another project's corpus: 404, as for jobs
    default = PeakProfile.objects.default_of(corpus.project_id) if body.profile is None else None
    data = {**body.dict(exclude={"tasks", "profile", "confirm"}), "profile": getattr(default, "pk", body.profile)}
    data["tasks"] = [task.pk for task in tasks_named(request.user, body.tasks)]
    if data["max_pairs"] is None:
        data["max_pairs"] = ""  # the form's "empty: all of them"
    spec = validated(EvaluationForm(data, user=request.user)).spec()
    must_confirm(estimates.evaluation(spec), body.confirm)
    try:
        evaluation = evaluations.launch(spec, actor=request.user)
    except evaluations.EvaluationError as exc:
        raise HttpError(400, str(exc)) from None
    return Status(202, evaluation)
