"""The API's relevance jobs (mounted under /api/ by webapp.api.api): list, read, launch as the
Jobs page does (webapp.pipeline.jobs); and imports of maps computed elsewhere, uploaded as the
Import maps page does (webapp.pipeline.mapimport_jobs); cancel and resume are webapp.api.work's."""

from datetime import datetime

from ninja import File, Form, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import Field

from webapp.corpus.access import corpus_for
from webapp.corpus.api import tasks_named
from webapp.db.api import Body, Error, LaunchBody
from webapp.db.pagination import PageQuery, page, page_of
from webapp.lib.seeds import MAX_SEED
from webapp.lifecycle.schemas import Conflict, UnitOut, must_confirm
from webapp.pipeline import estimates, jobs
from webapp.pipeline.access import job_for, map_import_job_for
from webapp.pipeline.forms import MapImportForm
from webapp.pipeline.models import MapImportJob, ModelVersion, RelevanceJob
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


class MapImportProblem(Schema):
    line: int | None = Field(description="The file's line (1-based); null: the whole file.")
    reason: str = Field(description="Why, in English (never the note's text).")


class MapImportJobOut(UnitOut):
    corpus: int = Field(alias="corpus_id")
    model_version: int = Field(alias="model_version_id")
    template: str
    explain: str
    source: str
    replace: bool
    file_name: str
    file_size: int
    phase: str = Field(description='"validating", "writing", or empty once ended.')
    lines_done: int = Field(description="Lines read so far (done: the file's lines).")
    problem_count: int = Field(description="Bad lines of a refused file (all counted).")
    problems: list[MapImportProblem] = Field(description="The first bad lines of a refused file.")
    map_import: int | None = Field(alias="map_import_id", description="The MapImport written (or found).")
    maps: int | None = Field(description="Maps the import stored; null until done.")
    imported_before: bool = Field(description="The same file was imported before: nothing written.")
    created: datetime

    @staticmethod
    def resolve_problems(job: MapImportJob) -> list[dict]:
        return [{"line": line, "reason": reason} for line, reason in job.problems]

    @staticmethod
    def resolve_maps(job: MapImportJob) -> int | None:
        return job.map_import.maps if job.map_import_id else None


@router.get("/map-imports", response=page_of(MapImportJobOut), summary="Imports of relevance maps computed elsewhere")
def list_map_imports(request, query: Query[PageQuery]):
    jobs_ = MapImportJob.objects.visible_to(request.user).select_related("map_import")
    return page(request, jobs_, query)


@router.get("/map-imports/{job_id}", response={200: MapImportJobOut, 404: Error})
def get_map_import(request, job_id: int):
    return map_import_job_for(request.user, job_id)


@router.post(
    "/map-imports",
    summary="Import relevance maps computed elsewhere (JSONL) into a model version's maps, as a background job",
    response={202: MapImportJobOut, 400: Error, 404: Error},
)
def launch_map_import(
    request,
    file: File[UploadedFile],
    corpus: Form[int],
    model_version: Form[int],
    template: Form[str] = "en",
    explain: Form[str] = "next",
    source: Form[str] = "",
    replace: Form[bool] = False,
):
    """The Import maps page's form: the file (JSON Lines, docs/ml-cli.md#imported-relevance-maps) is
    stored and checked whole by a worker; the job's `problems` list a refused file's lines."""
    corpus_for(request.user, corpus, Capability.IMPORT)  # another project's corpus: 404
    get_or_404(request.user, ModelVersion.objects, pk=model_version)
    fields = {
        "corpus": corpus,
        "model_version": model_version,
        "template": template,
        "explain": explain,
        "source": source,
        "replace": replace,
    }
    form = MapImportForm(fields, {"file": file}, user=request.user)
    if not form.is_valid():
        raise HttpError(400, " ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items()))
    return Status(202, form.launch(request.user))
