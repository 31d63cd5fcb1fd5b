"""The API's endpoints: thin like the pages' views. Each fetches through the same access
helpers as the pages (webapp/*/access.py, webapp.projects.scoping), with the request's user
being the token's principal (webapp.api.tokens), then makes one domain call. Another project's
object is a 404, a capability the token's role lacks a 403, a bad request a 400 saying why.
No endpoint writes note text anywhere but into its own answer. Data leaves through the gate
(webapp.deid.gate): downloads, exports and launches whose data comes from a corpus that is not
de-identified take `confirm_identifiable` (a query parameter, or a launch body's field); the
gate's refusal is a 409 (or a 403) naming the corpora (webapp.api.api)."""

import inspect
import unicodedata

from django.db.models import F, Q
from django.http import StreamingHttpResponse
from ninja import File, Form, Query, Router, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import Field

from ml.masking import DEFAULT_MASK_TOKEN
from ml.peaks import PAPER
from webapp.api.schemas import Body, LaunchBody, ReleaseBody
from webapp.corpus import import_jobs
from webapp.corpus.access import corpus_for, import_job_for, note_for
from webapp.corpus.forms import UploadForm
from webapp.corpus.models import Corpus, ImportJob, Note, Task
from webapp.datasets import estimates as dataset_estimates
from webapp.datasets import export as dataset_export
from webapp.datasets import launch as dataset_launch
from webapp.datasets.access import dataset_for, export_for
from webapp.datasets.forms import BuildForm
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.db.pagination import PageQuery, page
from webapp.deid import gate
from webapp.deid_ops import scanning
from webapp.evaluation import estimates as evaluation_estimates
from webapp.evaluation import evaluations
from webapp.evaluation.access import evaluation_for
from webapp.evaluation.forms import EvaluationForm
from webapp.evaluation.models import RelevanceEvaluation
from webapp.interchange.exporting import ExportChoice, ExportChoiceError, peak_source, zip_export
from webapp.interchange.exporting import download_name as annotations_name
from webapp.lib.formats import FORMATS
from webapp.lib.seeds import MAX_SEED
from webapp.lifecycle.estimates import Estimate, waits_for_confirmation
from webapp.pipeline import estimates as job_estimates
from webapp.pipeline import jobs
from webapp.pipeline.access import job_for
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob, RelevanceMap
from webapp.projects.models import Project
from webapp.projects.roles import Capability, require
from webapp.projects.scoping import get_or_404
from webapp.review import peakstore
from webapp.review.selection import default_profile
from webapp.training import estimates as run_estimates
from webapp.training import evaluation as run_evaluation
from webapp.training import experiments, presets, runs
from webapp.training.access import run_for
from webapp.training.models import LabeledSplit, TrainingRun

router = Router()


def _unit(unit) -> dict:
    """What every unit of work shares (webapp.lifecycle.models.WorkUnit)."""
    return {
        "id": unit.pk,
        "status": unit.status,
        "error": unit.error,
        "attempts": unit.attempts,
        "started": unit.started,
        "finished": unit.finished,
    }


def _corpus(corpus: Corpus) -> dict:
    return {
        "id": corpus.pk,
        "name": corpus.name,
        "project": corpus.project_id,
        "language": corpus.language,
        "description": corpus.description,
        "note_count": corpus.note_count,
        "annotation_count": corpus.annotation_count,
        "deidentified": corpus.deidentified,  # only then does its data leave without a confirmation
        "deidentified_from": corpus.deidentified_from_id,  # the corpus it was de-identified from
        "created": corpus.created,
    }


def _job(job: RelevanceJob) -> dict:
    return {
        **_unit(job),
        "corpus": job.corpus_id,
        "model_version": job.model_version_id,
        "method": job.method,
        "template": job.template,
        "total": job.total,
        "done": job.done,
        "chunk_count": job.chunk_count,
        "chunks_done": job.chunks_done,
        "chunks_failed": job.chunks_failed,
        "chunks_cancelled": job.chunks_cancelled,
        "lacking": job.lacking,  # workers that could not load the model: {worker: {model, reason, releases, at}}
        "created": job.created,
    }


def _import(job: ImportJob) -> dict:
    return {
        **_unit(job),
        "project": job.project_id,
        "kind": job.kind,
        "corpus": job.corpus_name,
        "phase": job.phase,
        "records_done": job.records_done,
        "records_total": job.records_total,
        "created_count": job.created_count,
        "updated_count": job.updated_count,
        "unchanged_count": job.unchanged_count,
        "problem_count": job.problem_count,
        "problems": job.problems,
        "deidentify": job.deidentify,  # de-identified on the way in
        "deid_counts": job.deid_counts,  # identifiers replaced per type, never values
    }


def _dataset(dataset: DatasetVersion) -> dict:
    return {
        **_unit(dataset),
        "name": dataset.name,
        "version": dataset.version,
        "corpus": dataset.corpus_id,
        "model_version": dataset.model_version_id,
        "mode": dataset.mode,
        "maps_total": dataset.maps_total,
        "maps_done": dataset.maps_done,
        "stats": dataset.stats,
    }


def _export(job: DatasetExport) -> dict:
    return {
        **_unit(job),
        "dataset": job.dataset_id,
        "format": job.format,
        "rows": job.rows,
        "size_bytes": job.size_bytes,
        "residual": job.residual,  # the residual scan of the rows written: counts per type, never values
    }


def _run(run: TrainingRun) -> dict:
    return {
        **_unit(run),
        "name": run.name,
        "kind": run.kind,
        "model_version": run.model_version_id,
        "dataset": run.dataset_id,
        "phase": run.phase,
        "step": run.step,
        "total_steps": run.total_steps,
        "loss": run.loss,
        "produced_model": run.produced_model_id,
        "results": run.results,
        "code_version": run.code_version,
    }


def _evaluation(evaluation: RelevanceEvaluation) -> dict:
    return {
        **_unit(evaluation),
        "corpus": evaluation.corpus_id,
        "model_version": evaluation.model_version_id,
        "phase": evaluation.phase,
        "done": evaluation.done,
        "total": evaluation.total,
        # the stage in hand (maps, faithfulness, scoring), its own done/total and time left
        "stage": evaluation.stage,
        "stage_done": evaluation.progress_done,
        "stage_total": evaluation.progress_total,
        "stage_seconds_left": evaluation.eta_seconds,
        "lacking": evaluation.lacking,
        "result": evaluation.result,
    }


def _refuse(exc: Exception):
    raise HttpError(400, str(exc))


def _validated(form):
    """The page's own form, filled from a JSON body: one validation for pages and API. Its
    problems come back as one 400 naming each field, as the page shows them beside the fields."""
    if not form.is_valid():
        said = [
            f"{field}: {message}" if field != "__all__" else message
            for field, messages in form.errors.items()
            for message in messages
        ]
        raise HttpError(400, " ".join(said))
    return form


def _unconfirmed(estimate: Estimate | None, confirm: bool) -> Status | None:
    """The pages' rule (webapp.lifecycle.estimates.waits_for_confirmation, with nothing confirmed
    yet): a launch they would ask to confirm needs `"confirm": true`; without it, a 409 that states
    the question the page asks (the amount and the time) and the estimate, and nothing launched."""
    if confirm or not waits_for_confirmation(estimate, {}):
        return None
    return Status(
        409,
        {
            "detail": f'{estimate.question} Send the same request with "confirm": true to launch it.',
            "estimate": {
                "amount": estimate.amount,
                "unit": estimate.unit,
                "size": estimate.size,
                "seconds": estimate.seconds,
                "duration": estimate.duration,
                "basis": estimate.basis,
                "queue": estimate.queue,
            },
        },
    )


def _known_fields_only(request, endpoint):
    """A form's field the endpoint does not take is a 400 naming it, as a JSON body's is
    (webapp.api.schemas): the fields are the endpoint's own parameters, so a new one is known."""
    known = set(inspect.signature(endpoint).parameters) - {"request"}
    if unknown := sorted((set(request.POST) | set(request.FILES)) - known):
        raise HttpError(400, " ".join(f"Unknown field {name}." for name in unknown))


def _tasks(user, names: list[str]) -> list[Task]:
    """The tasks the user may see, each named by its slug or its description (as a mapping names
    them: "diagnóstico" for the task diagnostico), in the order given, once each; an unknown name
    is a 400 naming it."""
    names = [unicodedata.normalize("NFC", name) for name in names]  # descriptions are stored NFC
    found = {}
    for task in Task.objects.visible_to(user).filter(Q(slug__in=names) | Q(description__in=names)):
        found.setdefault(task.description, task)
        found[task.slug] = task  # a slug wins over another task's description
    missing = sorted(set(names) - set(found))
    if missing:
        raise HttpError(400, f"Unknown task(s): {', '.join(missing)}.")
    return list(dict.fromkeys(found[name] for name in names))


# --- corpora and notes (read) ---------------------------------------------------------------


@router.get("/projects", summary="The projects the token may act in")
def list_projects(request):
    ids = list(request.user._dsm_memberships)
    return [{"id": p.pk, "slug": p.slug, "name": p.name} for p in Project.objects.filter(pk__in=ids)]


@router.get("/corpora", summary="Corpora of the token's projects")
def list_corpora(request, query: Query[PageQuery]):
    return page(request, Corpus.objects.visible_to(request.user), query, _corpus)


@router.get("/corpora/{corpus_id}")
def get_corpus(request, corpus_id: int):
    return _corpus(corpus_for(request.user, corpus_id))


@router.get("/corpora/{corpus_id}/notes", summary="A corpus's notes (ids and sizes; the text is in a note's detail)")
def list_notes(request, corpus_id: int, query: Query[PageQuery]):
    corpus = corpus_for(request.user, corpus_id)
    notes = Note.objects.visible_to(request.user).filter(corpus=corpus).only("pk", "external_id", "created")
    return page(request, notes, query, lambda n: {"id": n.pk, "external_id": n.external_id, "created": n.created})


@router.get("/corpora/{corpus_id}/notes/{note_id}")
def get_note(request, corpus_id: int, note_id: int):
    note = note_for(request.user, corpus_id, note_id)
    annotations = [
        {"task": a.task.slug, "label": a.label, "evidence": a.evidence, "annotator": a.annotator_name}
        for a in note.annotations.select_related("task").order_by("pk")
    ]
    return {
        "id": note.pk,
        "corpus": note.corpus_id,
        "external_id": note.external_id,
        "text": note.text,
        "metadata": note.metadata,
        "annotations": annotations,
    }


@router.get("/corpora/{corpus_id}/notes/{note_id}/maps", summary="A note's relevance maps and their peaks")
def note_maps(request, corpus_id: int, note_id: int, profile: str = "", arrays: bool = False):
    """Each map of the note (task, model, configuration) with its peaks as character spans under
    the named peak profile (default: the default profile, as on the review page); `arrays=true`
    adds the tokens' character offsets and scores."""
    note = note_for(request.user, corpus_id, note_id)
    project_id = note.corpus.project_id  # its own profiles and the shared ones; another project's is unknown
    named = PeakProfile.objects.of_project(project_id).filter(name=profile)
    named = named.order_by(F("project").asc(nulls_last=True), "-version")  # its own before a shared one
    chosen = named.first() if profile else default_profile(project_id)
    if profile and chosen is None:
        raise HttpError(400, f"No peak profile named {profile!r}.")
    params = chosen.params if chosen else PAPER
    maps = RelevanceMap.objects.visible_to(request.user).filter(note=note).select_related("task", "config", "tokens")
    answer = []
    for relevance_map in maps.order_by("pk"):
        one = RelevanceMap.objects.filter(pk=relevance_map.pk)
        spans, fits = peakstore.spans_of(one, params, note, store=False)
        item = {
            "id": relevance_map.pk,
            "task": relevance_map.task.slug,
            "model_version": relevance_map.model_version_id,
            "method": relevance_map.method,
            "template": relevance_map.template,
            "config_key": relevance_map.config_key,
            "job": relevance_map.job_id,
            "n_tokens": relevance_map.n_tokens,
            "peaks": [list(span) for span in spans],
            "fits": fits,
        }
        if arrays:
            offsets, scores = relevance_map.arrays()
            item["offsets"], item["scores"] = offsets.tolist(), [float(x) for x in scores]
        answer.append(item)
    return {"note": note.pk, "profile": chosen.name if chosen else "paper", "maps": answer}


@router.get(
    "/corpora/{corpus_id}/annotations/{fmt}",
    summary="Gold spans, a model's peaks (pre-annotations) and review decisions as a zip in an annotation format",
)
def export_annotations(
    request,
    corpus_id: int,
    fmt: str,
    gold: bool = True,
    decisions: bool = True,
    peaks_model: str = "",
    profile: str = "",
    confirm_identifiable: bool = False,
):
    """The corpus page's annotation export (webapp.interchange), by API: `fmt` one of the
    interchange formats; `peaks_model`: a model version's name to include its peaks;
    `confirm_identifiable`: a project admin lets a corpus that is not de-identified leave."""
    corpus = corpus_for(request.user, corpus_id, Capability.EXPORT)
    if fmt not in FORMATS:
        raise HttpError(400, f"fmt must be one of {', '.join(FORMATS)}.")
    peaks = None
    if peaks_model:
        get_or_404(request.user, ModelVersion.objects, name=peaks_model)  # a model this token may see
        try:
            peaks = peak_source(corpus, peaks_model, profile_name=profile)
        except ExportChoiceError as exc:
            _refuse(exc)
    choice = ExportChoice(gold=gold, peaks=peaks, decisions=decisions)
    stream = zip_export(corpus, fmt, choice, actor=request.user, confirm_identifiable=confirm_identifiable)
    return _zip(stream, annotations_name(corpus, fmt))


# --- residual scans (webapp.deid_ops.scanning) -----------------------------------------------------


@router.post(
    "/corpora/{corpus_id}/scans",
    response={202: dict},
    summary="Scan a corpus for identifiers left: counts per type, never values",
)
def launch_scan(request, corpus_id: int):
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        job = scanning.launch(corpus, actor=request.user)
    except scanning.ScanError as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, scanning.result(job))


@router.get("/corpora/{corpus_id}/scans/latest", summary="The latest residual scan of a corpus, as it goes")
def latest_scan(request, corpus_id: int):
    corpus = corpus_for(request.user, corpus_id)
    job = scanning.latest(corpus)
    if job is None:
        raise HttpError(404, "This corpus has not been scanned yet.")
    return scanning.result(job)


# --- imports (background jobs) ----------------------------------------------------------------


@router.get("/imports")
def list_imports(request, query: Query[PageQuery]):
    return page(request, ImportJob.objects.visible_to(request.user, Capability.IMPORT), query, _import)


@router.get("/imports/{job_id}")
def get_import(request, job_id: int):
    return _import(import_job_for(request.user, job_id))


@router.post(
    "/imports",
    summary="Import notes or gold labels (JSONL, CSV, or an annotation tool's files) as a background job",
    response={202: dict},
)
def launch_import(
    request,
    file: File[UploadedFile],
    project: Form[str],
    kind: Form[str],
    corpus: Form[str],
    language: Form[str] = "",
    update: Form[bool] = False,
    deidentify: Form[bool] = False,
    annotation_format: Form[str] = "",
    mapping: Form[str] = "",
    layer: Form[str] = "",
    feature: Form[str] = "",
    missing_feature: Form[str] = "refuse",
    feature_default: Form[str] = "",
    annotator: Form[str] = "",
    preview: Form[bool] = False,
):
    """The Import page's form: `annotation_format` (brat, xmi, labelstudio, doccano, jsonl) reads
    gold labels from an annotation tool's files, `mapping` one rule a line (LABEL=TASK:VALUE, ...),
    `annotator` whose they are (left empty: the annotator each span carries in the file);
    `preview=true` checks and counts what would be imported and writes nothing (the job's
    `problems` lines say what each label maps to), then POST /imports/ID/import imports it.
    `deidentify=true` (notes): each note goes through the project's de-identification policy
    before it is stored, as the page's "De-identify on the way in"; the job's `deid_counts` say how
    many identifiers of each type were replaced."""
    _known_fields_only(request, launch_import)
    target = Project.objects.where(request.user, Capability.VIEW).filter(slug=project).first()
    if target is None:
        raise HttpError(404, "No such project.")
    require(request.user, Capability.IMPORT, target)
    fields = {
        "project": target.pk,
        "kind": kind,
        "corpus": corpus,
        "language": language,
        "update": update,
        "deidentify": deidentify,
        "annotation_format": annotation_format,
        "mapping": mapping,
        "layer": layer,
        "feature": feature,
        "missing_feature": missing_feature,
        "feature_default": feature_default,
        "annotator": annotator,
        "preview": preview,
    }
    job = _validated(UploadForm(fields, {"file": file}, user=request.user)).launch(request.user)
    return Status(202, _import(job))


@router.post("/imports/{job_id}/import", response={202: dict}, summary="Import a finished preview's file, as previewed")
def import_previewed(request, job_id: int):
    job = import_job_for(request.user, job_id)
    try:
        new = import_jobs.import_previewed(job, actor=request.user)
    except import_jobs.NotPreviewed as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, _import(new))


@router.post("/imports/{job_id}/cancel")
def cancel_import(request, job_id: int):
    job = import_job_for(request.user, job_id)
    status = import_jobs.cancel(job, request.user)
    if status is None:
        raise HttpError(409, "This import has already ended.")
    job.refresh_from_db()
    return _import(job)


# --- relevance jobs ------------------------------------------------------------------------------


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
    note_filter: NoteFilterIn = NoteFilterIn()
    chunk_size: int | None = None


@router.get("/jobs", summary="Relevance jobs")
def list_jobs(request, query: Query[PageQuery]):
    return page(request, RelevanceJob.objects.visible_to(request.user), query, _job)


@router.get("/jobs/{job_id}")
def get_job(request, job_id: int):
    return _job(job_for(request.user, job_id))


@router.post("/jobs", response={202: dict, 409: dict}, summary="Launch a relevance job (as the Jobs page does)")
def launch_job(request, body: JobIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)
    model = get_or_404(request.user, ModelVersion.objects, pk=body.model_version)
    tasks = _tasks(request.user, body.tasks)
    spec = jobs.JobSpec(
        corpus=corpus,
        model_version=model,
        method=body.method,
        template=body.template,
        task_selection=body.task_selection,
        tasks=tasks,
        sample_k=body.sample_k,
        seed=body.seed,
        note_filter=body.note_filter.selection(),
        chunk_size=body.chunk_size,
    )
    if problems := spec.problems():
        raise HttpError(400, " ".join(f"{field}: {problem}" for field, problem in problems.items()))
    if refused := _unconfirmed(job_estimates.relevance_job(spec), body.confirm):
        return refused
    try:
        job = jobs.launch(spec, actor=request.user)
    except jobs.JobError as exc:
        _refuse(exc)
    return Status(202, _job(job))


@router.post("/jobs/{job_id}/cancel")
def cancel_job(request, job_id: int):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    try:
        job = jobs.cancel(job, actor=request.user)
    except jobs.JobError as exc:
        raise HttpError(409, str(exc)) from None
    return _job(job)


@router.post("/jobs/{job_id}/resume")
def resume_job(request, job_id: int):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    try:
        jobs.resume(job, actor=request.user)
    except jobs.JobError as exc:
        raise HttpError(409, str(exc)) from None
    job.refresh_from_db()
    return _job(job)


# --- datasets and exports ------------------------------------------------------------------------


@router.get("/datasets")
def list_datasets(request, query: Query[PageQuery]):
    return page(request, DatasetVersion.objects.visible_to(request.user), query, _dataset)


@router.get("/datasets/{dataset_id}")
def get_dataset(request, dataset_id: int):
    return _dataset(dataset_for(request.user, dataset_id))


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


@router.post("/datasets", response={202: dict, 409: dict}, summary="Build a new dataset (version) from relevance maps")
def launch_dataset(request, body: DatasetIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)  # another project's corpus: 404, as for jobs
    profile = body.profile if body.profile is not None else getattr(default_profile(corpus.project_id), "pk", None)
    data = {
        **body.dict(exclude={"tasks", "notes", "profile", "confirm", "confirm_identifiable"}),
        "profile": profile,
        "tasks": [task.pk for task in _tasks(request.user, body.tasks)],
        "notes": " ".join(body.notes),
    }
    form = _validated(BuildForm(data, user=request.user))
    estimate = dataset_estimates.dataset_build(form.cleaned_data["model_version"], form.maps.count())
    if refused := _unconfirmed(estimate, body.confirm):
        return refused
    try:
        dataset = dataset_launch.launch_build(
            actor=request.user, confirm_identifiable=body.confirm_identifiable, **form.build_fields()
        )
    except dataset_launch.LaunchError as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, _dataset(dataset))


@router.post("/datasets/{dataset_id}/cancel")
def cancel_dataset(request, dataset_id: int):
    dataset = dataset_for(request.user, dataset_id, Capability.LAUNCH)
    try:
        dataset_launch.cancel_build(dataset, actor=request.user)
    except dataset_launch.LaunchError as exc:
        raise HttpError(409, str(exc)) from None
    dataset.refresh_from_db()
    return _dataset(dataset)


@router.post("/datasets/{dataset_id}/rebuild", response={202: dict}, summary="Build the dataset again")
def rebuild_dataset(request, dataset_id: int, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.LAUNCH)
    try:
        again = dataset_launch.build_again(dataset, actor=request.user, confirm_identifiable=confirm_identifiable)
    except dataset_launch.LaunchError as exc:
        _refuse(exc)
    return Status(202, _dataset(again))


@router.get("/datasets/{dataset_id}/download/{fmt}", summary="The examples as a zip (jsonl or parquet)")
def download_dataset(request, dataset_id: int, fmt: str, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    if fmt not in dataset_export.DATA_FILES:
        raise HttpError(400, f"Download one of: {', '.join(dataset_export.DATA_FILES)}.")
    try:
        stream = dataset_export.stream_download(dataset, fmt, request.user, confirm_identifiable=confirm_identifiable)
    except dataset_export.ExportError as exc:
        _refuse(exc)
    return _zip(stream, dataset_export.download_name(dataset, fmt))


@router.post("/datasets/{dataset_id}/exports", response={202: dict}, summary="Export to a folder on the server")
def request_export(request, dataset_id: int, fmt: str, confirm_identifiable: bool = False):
    dataset = dataset_for(request.user, dataset_id, Capability.EXPORT)
    if fmt not in DatasetExport.Format.values:
        raise HttpError(400, f"fmt must be one of {', '.join(DatasetExport.Format.values)}.")
    try:
        job = dataset_launch.request_export(dataset, fmt, actor=request.user, confirm_identifiable=confirm_identifiable)
    except dataset_launch.LaunchError as exc:
        _refuse(exc)
    return Status(202, _export(job))


@router.get("/datasets/{dataset_id}/exports/{export_id}")
def get_export(request, dataset_id: int, export_id: int):
    return _export(export_for(request.user, dataset_id, export_id))


@router.post("/datasets/{dataset_id}/exports/{export_id}/cancel")
def cancel_export(request, dataset_id: int, export_id: int):
    job = export_for(request.user, dataset_id, export_id)
    dataset_launch.cancel_export(job, actor=request.user)
    job.refresh_from_db()
    return _export(job)


@router.get("/datasets/{dataset_id}/exports/{export_id}/download", summary="A finished export's folder as a zip")
def download_export(request, dataset_id: int, export_id: int, confirm_identifiable: bool = False):
    job = export_for(request.user, dataset_id, export_id)
    try:
        stream = dataset_export.stream_folder(job, request.user, confirm_identifiable=confirm_identifiable)
    except dataset_export.ExportError as exc:
        _refuse(exc)
    return _zip(stream, dataset_export.download_name(job.dataset, job.format))


# --- training runs and evaluations ----------------------------------------------------------------


@router.get("/training-runs")
def list_runs(request, query: Query[PageQuery]):
    return page(request, TrainingRun.objects.visible_to(request.user), query, _run)


@router.get("/training-runs/{run_id}")
def get_run(request, run_id: int):
    return _run(run_for(request.user, run_id))


@router.get("/training-runs/{run_id}/metrics", summary="Per-step loss, learning rate and throughput")
def run_metrics(request, run_id: int, query: Query[PageQuery]):
    run = run_for(request.user, run_id)
    fields = ("phase", "step", "epoch", "loss", "lr", "tokens_per_s")
    return page(request, run.metrics.all(), query, lambda m: {f: getattr(m, f) for f in fields})


class RunIn(ReleaseBody):
    """A run as the New training run page asks for it: a preset, its inputs, and `config`
    overrides by section over the preset's settings (e.g. {"train": {"max_steps": 20}})."""

    preset: str
    model_version: int
    name: str = ""
    dataset: int | None = None  # DSM, CPT and their ablations: a finished dataset version
    split: int | None = None  # SFT, CH, prompting, self-learning: a stored labeled split...
    split_corpus: int | None = None  # ...or the corpus to split (a split with this seed and share is reused)
    split_seed: int = 0
    split_test_ratio: float = 0.15
    config: dict = {}


@router.post("/training-runs", response={202: dict, 409: dict}, summary="Launch a training run from a preset")
def launch_run(request, body: RunIn):
    require(request.user, Capability.LAUNCH)
    try:
        preset = presets.get(body.preset)
    except ValueError as exc:
        _refuse(exc)
    overrides, problems = experiments.run_settings({"config": body.config}, {}, preset.kind, preset)
    if problems:
        raise HttpError(400, " ".join(problems))
    user, launch = request.user, Capability.LAUNCH
    spec = runs.RunSpec(
        kind=preset.kind,
        preset=preset.key,
        name=body.name,
        model_version=get_or_404(user, ModelVersion.objects, launch, pk=body.model_version),
        dataset=dataset_for(user, body.dataset, launch) if body.dataset is not None else None,
        split=get_or_404(user, LabeledSplit.objects, launch, pk=body.split) if body.split is not None else None,
        split_corpus=corpus_for(user, body.split_corpus, launch) if body.split_corpus is not None else None,
        split_seed=body.split_seed,
        split_test_ratio=body.split_test_ratio,
        config=overrides,
    )
    if refused := _unconfirmed(run_estimates.training_run(spec), body.confirm):
        return refused
    try:
        run = runs.launch(spec, actor=request.user, confirm_identifiable=body.confirm_identifiable)
    except runs.RunError as exc:
        said = " ".join(f"{key}: {problem}" for key, problem in exc.problems.items())
        raise HttpError(400, said or str(exc)) from None
    return Status(202, _run(run))


@router.post("/training-runs/{run_id}/cancel")
def cancel_run(request, run_id: int):
    run = run_for(request.user, run_id, Capability.LAUNCH)
    try:
        run = runs.cancel(run, actor=request.user)
    except runs.RunError as exc:
        raise HttpError(409, str(exc)) from None
    return _run(run)


@router.post("/training-runs/{run_id}/resume")
def resume_run(request, run_id: int):
    run = run_for(request.user, run_id, Capability.LAUNCH)
    try:
        run = runs.resume(run, actor=request.user)
    except runs.RunError as exc:
        raise HttpError(409, str(exc)) from None
    return _run(run)


@router.get("/training-runs/{run_id}/predictions/{fmt}", summary="The test set's predictions (csv or jsonl)")
def run_predictions(request, run_id: int, fmt: str, confirm_identifiable: bool = False):
    run = run_for(request.user, run_id)
    if fmt not in ("csv", "jsonl"):
        raise HttpError(400, "Download predictions as csv or jsonl.")
    corpora = runs.run_corpora(run)  # the notes' ids and labels leave
    gate.release(corpora, request.user, confirm_identifiable, what="predictions download", obj=run, format=fmt)
    stream = run_evaluation.stream_csv(run) if fmt == "csv" else run_evaluation.stream_jsonl(run)
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(stream, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-predictions.{fmt}"'
    return response


@router.get("/evaluations")
def list_evaluations(request, query: Query[PageQuery]):
    return page(request, RelevanceEvaluation.objects.visible_to(request.user), query, _evaluation)


@router.get("/evaluations/{evaluation_id}")
def get_evaluation(request, evaluation_id: int):
    return _evaluation(evaluation_for(request.user, evaluation_id))


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


@router.post(
    "/evaluations",
    response={202: dict, 409: dict},
    summary="Launch a relevance evaluation (localisation, faithfulness)",
)
def launch_evaluation(request, body: EvaluationIn):
    corpus = corpus_for(request.user, body.corpus, Capability.LAUNCH)  # another project's corpus: 404, as for jobs
    profile = body.profile if body.profile is not None else getattr(default_profile(corpus.project_id), "pk", None)
    data = {**body.dict(exclude={"tasks", "profile", "confirm"}), "profile": profile}
    data["tasks"] = [task.pk for task in _tasks(request.user, body.tasks)]
    if data["max_pairs"] is None:
        data["max_pairs"] = ""  # the form's "empty: all of them"
    spec = _validated(EvaluationForm(data, user=request.user)).spec()
    if refused := _unconfirmed(evaluation_estimates.evaluation(spec), body.confirm):
        return refused
    try:
        evaluation = evaluations.launch(spec, actor=request.user)
    except evaluations.EvaluationError as exc:
        _refuse(exc)
    return Status(202, _evaluation(evaluation))


@router.post("/evaluations/{evaluation_id}/cancel")
def cancel_evaluation(request, evaluation_id: int):
    evaluation = evaluation_for(request.user, evaluation_id, Capability.LAUNCH)
    try:
        evaluations.cancel(evaluation, actor=request.user)
    except evaluations.EvaluationError as exc:
        raise HttpError(409, str(exc)) from None
    evaluation.refresh_from_db()
    return _evaluation(evaluation)


@router.post("/evaluations/{evaluation_id}/resume")
def resume_evaluation(request, evaluation_id: int):
    evaluation = evaluation_for(request.user, evaluation_id, Capability.LAUNCH)
    try:
        evaluations.resume(evaluation, actor=request.user)
    except evaluations.EvaluationError as exc:
        raise HttpError(409, str(exc)) from None
    evaluation.refresh_from_db()
    return _evaluation(evaluation)


def _zip(stream, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
