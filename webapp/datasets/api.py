"""The API's datasets and their exports (mounted under /api/ by webapp.api.api): list, read,
build a new one (version) as the New dataset page does, build again, download, export to a
folder on the server and download it (webapp.datasets.launch, webapp.datasets.export; data
leaves through the gate, webapp.deid.gate); cancelling is webapp.api.work's."""

from ninja import Query, Router, Status
from ninja.errors import HttpError
from pydantic import Field

from ml.masking import DEFAULT_MASK_TOKEN
from webapp.corpus.access import corpus_for
from webapp.corpus.api import tasks_named
from webapp.datasets import estimates, export, launch
from webapp.datasets.access import dataset_for, export_for
from webapp.datasets.forms import BuildForm
from webapp.datasets.models import DatasetVersion
from webapp.db.api import Error, ReleaseBody, download, validated, zip_download
from webapp.db.pagination import PageQuery, page, page_of
from webapp.lifecycle.schemas import Conflict, UnitOut, must_confirm
from webapp.pipeline.models import PeakProfile, RelevanceJob
from webapp.projects.roles import Capability

router = Router(tags=["datasets"])
REFUSED = {400: Error, 403: Error, 404: Error, 409: Conflict}  # a download: gate's 409 / 403


class DatasetOut(UnitOut):
    name: str
    version: int
    corpus: int = Field(alias="corpus_id")
    model_version: int = Field(alias="model_version_id")
    mode: str
    maps_total: int
    maps_done: int
    stats: dict


class ExportOut(UnitOut):
    dataset: int = Field(alias="dataset_id")
    format: str
    rows: int | None
    size_bytes: int | None
    residual: dict | None = Field(description="The residual scan of the rows written: counts per type, never values.")


class DatasetIn(ReleaseBody):
    """The fields of the New dataset page; tasks by slug, notes by their ids in the corpus."""

    name: str
    corpus: int
    model_version: int
    profile: int | None = None  # none: the default peak profile
    method: str = RelevanceJob.Method.ATTNLRP
    template: str = "en"
    jobs: list[int] = []  # only maps written by these relevance jobs
    mode: str = DatasetVersion.Mode.DSM
    tasks: list[str] = []  # empty: every task that has maps
    include_held_out: bool = False
    notes: list[str] = []  # external ids; empty: every note
    seed: int = 0
    mask_token: str = DEFAULT_MASK_TOKEN


@router.get("/datasets", response=page_of(DatasetOut))
def list_datasets(request, query: Query[PageQuery]):
    return page(request, DatasetVersion.objects.visible_to(request.user), query)


@router.get("/datasets/{dataset_id}", response={200: DatasetOut, 404: Error})
def get_dataset(request, dataset_id: int):
    return dataset_for(request.user, dataset_id)


@router.post(
    "/datasets",
    response={202: DatasetOut, **REFUSED},
    summary="Build a new dataset (version) from relevance maps",
)
def launch_dataset(request, body: DatasetIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)  # another project's corpus: 404, as for jobs
    default = PeakProfile.objects.default_of(corpus.project_id) if body.profile is None else None
    data = {
        **body.dict(exclude={"tasks", "notes", "profile", "confirm", "confirm_identifiable"}),
        "profile": getattr(default, "pk", body.profile),
        "tasks": [task.pk for task in tasks_named(request.user, body.tasks)],
        "notes": " ".join(body.notes),
    }
    form = validated(BuildForm(data, user=request.user))
    must_confirm(estimates.dataset_build(form.cleaned_data["model_version"], form.maps.count()), body.confirm)
    try:
        dataset = launch.launch_build(
            actor=request.user, confirm_identifiable=body.confirm_identifiable, **form.build_fields()
        )
    except launch.LaunchError as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, dataset)


@router.post("/datasets/{dataset_id}/rebuild", response={202: DatasetOut, **REFUSED}, summary="Build the dataset again")
def rebuild_dataset(request, dataset_id: int, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.LAUNCH)
    try:
        again = launch.build_again(dataset, actor=request.user, confirm_identifiable=confirm_identifiable)
    except launch.LaunchError as exc:
        raise HttpError(400, str(exc)) from None
    return Status(202, again)


@router.get(
    "/datasets/{dataset_id}/download/{fmt}",
    response=REFUSED,
    openapi_extra=download("application/zip", "The examples and the manifest, zipped."),
    summary="The examples as a zip (jsonl or parquet)",
)
def download_dataset(request, dataset_id: int, fmt: str, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    if fmt not in export.DATA_FILES:
        raise HttpError(400, f"Download one of: {', '.join(export.DATA_FILES)}.")
    try:
        stream = export.stream_download(dataset, fmt, request.user, confirm_identifiable=confirm_identifiable)
    except export.ExportError as exc:
        raise HttpError(400, str(exc)) from None
    return zip_download(stream, export.download_name(dataset, fmt))


@router.post(
    "/datasets/{dataset_id}/exports", response={202: ExportOut, **REFUSED}, summary="Export to a folder on the server"
)
def request_export(request, dataset_id: int, fmt: str, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    try:  # an unknown fmt: a LaunchError naming the formats of the table (webapp.datasets.formats)
        job = launch.request_export(dataset, fmt, actor=request.user, confirm_identifiable=confirm_identifiable)
    except launch.LaunchError as exc:
        raise HttpError(400, str(exc)) from None
    return Status(202, job)


@router.get("/datasets/{dataset_id}/exports/{export_id}", response={200: ExportOut, 404: Error})
def get_export(request, dataset_id: int, export_id: int):
    return export_for(request.user, dataset_id, export_id)


@router.get(
    "/datasets/{dataset_id}/exports/{export_id}/download",
    response=REFUSED,
    openapi_extra=download("application/zip", "The export's folder, zipped."),
    summary="A finished export's folder as a zip",
)
def download_export(request, dataset_id: int, export_id: int, confirm_identifiable: bool = False):
    job = export_for(request.user, dataset_id, export_id)
    try:
        stream = export.stream_folder(job, request.user, confirm_identifiable=confirm_identifiable)
    except export.ExportError as exc:
        raise HttpError(400, str(exc)) from None
    return zip_download(stream, export.download_name(job.dataset, job.format))
