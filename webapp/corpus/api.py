"""The API's corpora, notes and imports (mounted under /api/ by webapp.api.api), and how every
router names tasks (`tasks_named`). A note's text is only ever in its own detail's answer."""

import inspect
import unicodedata
from datetime import datetime

from django.db.models import Q
from ninja import File, Form, Query, Router, Schema, Status
from ninja.errors import HttpError
from ninja.files import UploadedFile
from pydantic import Field

from webapp.corpus import import_jobs
from webapp.corpus.access import corpus_for, import_job_for, note_for
from webapp.corpus.forms import UploadForm
from webapp.corpus.models import Corpus, ImportJob, Note, Task
from webapp.corpus.problem_text import english_lines
from webapp.db.api import Error, validated
from webapp.db.pagination import PageQuery, page, page_of
from webapp.lifecycle.schemas import Conflict, UnitOut
from webapp.projects.models import Project
from webapp.projects.roles import Capability, require

router = Router(tags=["corpora"])


class CorpusOut(Schema):
    id: int
    name: str
    project: int = Field(alias="project_id")
    language: str
    description: str
    note_count: int
    annotation_count: int
    deidentified: bool = Field(description="Only then does its data leave without a confirmation.")
    deidentified_from: int | None = Field(alias="deidentified_from_id", description="The corpus it was made from.")
    created: datetime


class NoteRow(Schema):
    id: int
    external_id: str
    created: datetime


class AnnotationOut(Schema):
    task: str = Field(description="The task's slug.")
    label: str
    evidence: list = Field(description="Character spans [[start, end], ...] of the label's evidence.")
    annotator: str


class NoteOut(Schema):
    id: int
    corpus: int = Field(alias="corpus_id")
    external_id: str
    text: str
    metadata: dict
    annotations: list[AnnotationOut]

    @staticmethod
    def resolve_annotations(note: Note) -> list[dict]:
        return [
            {"task": a.task.slug, "label": a.label, "evidence": a.evidence, "annotator": a.annotator_name}
            for a in note.annotations.select_related("task").order_by("pk")
        ]


class ImportOut(UnitOut):
    project: int = Field(alias="project_id")
    kind: str
    corpus: str = Field(alias="corpus_name", description="The corpus's name, made or updated.")
    phase: str
    records_done: int
    records_total: int | None
    created_count: int
    updated_count: int
    unchanged_count: int
    problem_count: int
    problems: list[str] = Field(description="The problem lines (or a done import's warnings), in English.")
    deidentify: bool = Field(description="De-identified on the way in.")
    deid_counts: dict[str, int] = Field(description="Identifiers replaced per type, never values.")

    @staticmethod
    def resolve_problems(job: ImportJob) -> list[str]:
        return english_lines(job.problems)


def tasks_named(user, names: list[str]) -> list[Task]:
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


def _known_fields_only(request, endpoint):
    """A form's field the endpoint does not take is a 400 naming it, as a JSON body's is
    (webapp.db.api.Body): the fields are the endpoint's own parameters, so a new one is known."""
    known = set(inspect.signature(endpoint).parameters) - {"request"}
    if unknown := sorted((set(request.POST) | set(request.FILES)) - known):
        raise HttpError(400, " ".join(f"Unknown field {name}." for name in unknown))


@router.get("/corpora", response=page_of(CorpusOut), summary="Corpora of the token's projects")
def list_corpora(request, query: Query[PageQuery]):
    return page(request, Corpus.objects.visible_to(request.user), query)


@router.get("/corpora/{corpus_id}", response={200: CorpusOut, 404: Error})
def get_corpus(request, corpus_id: int):
    return corpus_for(request.user, corpus_id)


@router.get(
    "/corpora/{corpus_id}/notes",
    response={200: page_of(NoteRow), 404: Error},
    summary="A corpus's notes (ids and sizes; the text is in a note's detail)",
)
def list_notes(request, corpus_id: int, query: Query[PageQuery]):
    corpus = corpus_for(request.user, corpus_id)
    notes = Note.objects.visible_to(request.user).filter(corpus=corpus).only("pk", "external_id", "created")
    return page(request, notes, query)


@router.get("/corpora/{corpus_id}/notes/{note_id}", response={200: NoteOut, 404: Error})
def get_note(request, corpus_id: int, note_id: int):
    return note_for(request.user, corpus_id, note_id)


@router.get("/imports", response=page_of(ImportOut))
def list_imports(request, query: Query[PageQuery]):
    return page(request, ImportJob.objects.visible_to(request.user, Capability.IMPORT), query)


@router.get("/imports/{job_id}", response={200: ImportOut, 404: Error})
def get_import(request, job_id: int):
    return import_job_for(request.user, job_id)


@router.post(
    "/imports",
    summary="Import notes or gold labels (JSONL, CSV, or an annotation tool's files) as a background job",
    response={202: ImportOut, 400: Error, 404: Error},
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
    format: Form[str] = "",
    annotation_format: Form[str] = "",
    mapping: Form[str] = "",
    layer: Form[str] = "",
    feature: Form[str] = "",
    missing_feature: Form[str] = "refuse",
    feature_default: Form[str] = "",
    annotator: Form[str] = "",
    preview: Form[bool] = False,
):
    """The Import page's form: `format`, a name of the format table (webapp.lib.formats; the
    Import page's Format lists them), reads notes in that format (empty: told from the file's
    name) or gold labels from an annotation tool's files (`annotation_format`, its older name, is
    still taken), `mapping` one rule a line (LABEL=TASK:VALUE, ...),
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
        "format": format or annotation_format,
        "mapping": mapping,
        "layer": layer,
        "feature": feature,
        "missing_feature": missing_feature,
        "feature_default": feature_default,
        "annotator": annotator,
        "preview": preview,
    }
    job = validated(UploadForm(fields, {"file": file}, user=request.user)).launch(request.user)
    return Status(202, job)


@router.post(
    "/imports/{job_id}/import",
    response={202: ImportOut, 404: Error, 409: Conflict},
    summary="Import a finished preview's file, as previewed",
)
def import_previewed(request, job_id: int):
    job = import_job_for(request.user, job_id)
    try:
        new = import_jobs.import_previewed(job, actor=request.user)
    except import_jobs.NotPreviewed as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, new)
