"""The API's relevance jobs (mounted under /api/ by webapp.api.api): list, read, launch as the
Jobs page does (webapp.pipeline.jobs); cancel and resume are webapp.api.work's."""

from datetime import datetime

from ninja import Query, Router, Status
from ninja.errors import HttpError
from pydantic import Field

from webapp.corpus.access import corpus_for
from webapp.corpus.api import tasks_named
from webapp.db.api import Body, Error, LaunchBody
from webapp.db.pagination import PageQuery, page, page_of
from webapp.lib.seeds import MAX_SEED
from webapp.lifecycle.schemas import Conflict, UnitOut, must_confirm
from webapp.pipeline import estimates, jobs
from webapp.pipeline.access import job_for
from webapp.pipeline.models import ModelVersion, RelevanceJob
from webapp.projects.roles import Capability
from webapp.projects.scoping import get_or_404

router = Router(tags=["relevance jobs"])


class JobOut(UnitOut):
    corpus: int = Field(alias="corpus_id")
    model_version: int = Field(alias="model_version_id")
    method: str
    template: str
    total: int
    done: int
    chunk_count: int
    chunks_done: int
    chunks_failed: int
    chunks_cancelled: int
    lacking: dict = Field(description="Workers that could not load the model: {worker: {model, reason, releases, at}}.")
    created: datetime


class NoteFilterIn(Body):
    """Which notes of the corpus (all given: notes that match each); none given: every note."""

    ids: list[int] | None = None  # the notes' ids
    external_ids: list[str] | None = None  # the notes' ids as imported
    limit: int | None = Field(None, ge=1)  # only the first N notes (in id order) of the selection

    def selection(self) -> dict:
        """As webapp.pipeline.jobs.JobSpec.note_filter takes it."""
        return self.dict(exclude_none=True)


class JobIn(LaunchBody):
    corpus: int
    model_version: int
    method: str = RelevanceJob.Method.ATTNLRP
    template: str = "en"
    task_selection: str = RelevanceJob.TaskSelection.SAMPLE
    tasks: list[str] = []  # task slugs; empty: the catalog
    sample_k: int = 9
    seed: int = Field(0, ge=0, le=MAX_SEED)
    # a factory, not an instance: a schema's default object is one a generated client cannot read
    note_filter: NoteFilterIn = Field(default_factory=NoteFilterIn)
    chunk_size: int | None = None


@router.get("/jobs", response=page_of(JobOut), summary="Relevance jobs")
def list_jobs(request, query: Query[PageQuery]):
    return page(request, RelevanceJob.objects.visible_to(request.user), query)


@router.get("/jobs/{job_id}", response={200: JobOut, 404: Error})
def get_job(request, job_id: int):
    return job_for(request.user, job_id)


@router.post(
    "/jobs",
    response={202: JobOut, 400: Error, 404: Error, 409: Conflict},
    summary="Launch a relevance job (as the Jobs page does)",
)
def launch_job(request, body: JobIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)
    model = get_or_404(request.user, ModelVersion.objects, pk=body.model_version)
    spec = jobs.JobSpec(
        corpus=corpus,
        model_version=model,
        method=body.method,
        template=body.template,
        task_selection=body.task_selection,
        tasks=tasks_named(request.user, body.tasks),
        sample_k=body.sample_k,
        seed=body.seed,
        note_filter=body.note_filter.selection(),
        chunk_size=body.chunk_size,
    )
    if problems := spec.problems():
        raise HttpError(400, " ".join(f"{field}: {problem}" for field, problem in problems.items()))
    must_confirm(estimates.relevance_job(spec), body.confirm)
    try:
        job = jobs.launch(spec, actor=request.user)
    except jobs.JobError as exc:
        raise HttpError(400, str(exc)) from None
    return Status(202, job)
