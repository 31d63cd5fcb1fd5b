"""The API's training runs (mounted under /api/ by webapp.api.api): list, read, per-step metrics,
launch from a preset as the New training run page does (webapp.training.runs), the test set's
predictions through the gate (webapp.deid.gate); cancel and resume are webapp.api.work's."""

from django.http import StreamingHttpResponse
from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from webapp.corpus.access import corpus_for
from webapp.datasets.access import dataset_for
from webapp.db.api import Error, ReleaseBody, download
from webapp.db.pagination import PageQuery, page, page_of
from webapp.deid import gate
from webapp.lifecycle.schemas import Conflict, UnitOut, must_confirm
from webapp.pipeline.models import ModelVersion
from webapp.projects.roles import Capability, require
from webapp.projects.scoping import get_or_404
from webapp.training import estimates, evaluation, experiments, presets, runs
from webapp.training.access import run_for
from webapp.training.models import LabeledSplit, TrainingRun

router = Router(tags=["training runs"])


class RunOut(UnitOut):
    name: str
    kind: str
    model_version: int = Field(alias="model_version_id")
    dataset: int | None = Field(alias="dataset_id")
    phase: str
    step: int
    total_steps: int
    loss: float | None
    produced_model: int | None = Field(alias="produced_model_id", description="The model version it made.")
    results: dict
    code_version: str


class MetricOut(Schema):
    phase: str
    step: int
    epoch: float | None
    loss: float | None
    lr: float | None
    tokens_per_s: float | None


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


@router.get("/training-runs", response=page_of(RunOut))
def list_runs(request, query: Query[PageQuery]):
    return page(request, TrainingRun.objects.visible_to(request.user), query)


@router.get("/training-runs/{run_id}", response={200: RunOut, 404: Error})
def get_run(request, run_id: int):
    return run_for(request.user, run_id)


@router.get(
    "/training-runs/{run_id}/metrics",
    response={200: page_of(MetricOut), 404: Error},
    summary="Per-step loss, learning rate and throughput",
)
def run_metrics(request, run_id: int, query: Query[PageQuery]):
    return page(request, run_for(request.user, run_id).metrics.all(), query)


@router.post(
    "/training-runs",
    response={202: RunOut, 400: Error, 403: Error, 404: Error, 409: Conflict},
    summary="Launch a training run from a preset",
)
def launch_run(request, body: RunIn):
    require(request.user, Capability.LAUNCH)
    try:
        preset = presets.get(body.preset)
    except ValueError as exc:
        raise HttpError(400, str(exc)) from None
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
    must_confirm(estimates.training_run(spec), body.confirm)
    try:
        run = runs.launch(spec, actor=request.user, confirm_identifiable=body.confirm_identifiable)
    except runs.RunError as exc:
        said = " ".join(f"{key}: {problem}" for key, problem in exc.problems.items())
        raise HttpError(400, said or str(exc)) from None
    return Status(202, run)


@router.get(
    "/training-runs/{run_id}/predictions/{fmt}",
    response={400: Error, 403: Error, 404: Error, 409: Conflict},
    openapi_extra=download("text/csv", "The test set's predictions: text/csv, or application/x-ndjson for jsonl."),
    summary="The test set's predictions (csv or jsonl)",
)
def run_predictions(request, run_id: int, fmt: str, confirm_identifiable: bool = False):
    run = run_for(request.user, run_id)
    if fmt not in ("csv", "jsonl"):
        raise HttpError(400, "Download predictions as csv or jsonl.")
    corpora = runs.run_corpora(run)  # the notes' ids and labels leave
    gate.release(corpora, request.user, confirm_identifiable, what="predictions download", obj=run, format=fmt)
    stream = evaluation.stream_csv(run) if fmt == "csv" else evaluation.stream_jsonl(run)
    content_type = "text/csv" if fmt == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(stream, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-predictions.{fmt}"'
    return response
