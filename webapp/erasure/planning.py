"""What an erasure reaches, table by table, and the dry run's counts.

A target is resolved once to ids (`resolve`): the project, the corpus, the notes (notes and
patient scopes; a corpus or project reaches its notes through its corpora), the dataset
versions that held examples of those notes, and the trained models that saw them. Everything
else is found again from those ids whenever it is asked for, so the same plan serves the dry
run, the erasure, and a resumed erasure half of whose rows are gone.

`STEPS` lists every table the erasure deletes from, in the order it deletes (a row before the
rows it refers to: a PROTECT foreign key never blocks, no cascade deletes a row uncounted).
Rows that refer to notes only indirectly are reached through what they refer to: stored peaks
through their maps, round claims through their pairs, split items through annotations, a
training run's metrics through the run. tests/webapp/erasure/test_planning.py checks that every
model with a foreign key to a table erased here is itself erased (or is a mark of this app).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from webapp.api.models import ApiToken
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, ProjectTaskState, Task, TaskGuideline
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.deid.models import DeidJob, DeidPolicy, SurrogateMapping
from webapp.deid.policy import patient_hash
from webapp.erasure import described_text
from webapp.erasure.models import DatasetWithdrawal, ErasureRequest
from webapp.evaluation.models import RelevanceEvaluation
from webapp.integrations.models import Webhook, WebhookDelivery
from webapp.pipeline.models import (
    MapImport,
    MapImportJob,
    ModelVersion,
    NoteTokens,
    PeakProfile,
    RelevanceChunk,
    RelevanceJob,
    RelevanceMap,
)
from webapp.projects.models import Membership, Project
from webapp.review.models import (
    AddedSpan,
    Adjudication,
    MapPeaks,
    MapSample,
    PeakDecision,
    ReportSnapshot,
    ReviewRound,
    RoundClaim,
    RoundPair,
    RoundReviewer,
    SpanAdjudication,
    StoredPeak,
    ValidationJudgement,
    ValidationSet,
    ValidationVerdict,
)
from webapp.training.models import LabeledSplit, RunLog, RunMetric, RunPrediction, SplitItem, TrainingRun

Scope = ErasureRequest.Scope
WHOLE = frozenset({Scope.CORPUS, Scope.PROJECT})
EVERY = frozenset(Scope)

# A metadata key is used in a JSON lookup: letters, digits, "_" and "-" only, never "__".
PATIENT_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")


class PlanError(ValueError):
    """The target cannot be erased as asked; the message says why, in plain words."""


@dataclass(frozen=True)
class Target:
    """The ids an erasure works from (ErasureRequest.target)."""

    scope: str
    project_id: int
    corpus_id: int | None = None
    note_ids: tuple[int, ...] = ()
    dataset_ids: tuple[int, ...] = ()  # versions that held examples of the notes when requested
    model_ids: tuple[int, ...] = ()  # trained models that saw the notes
    mapping_ids: tuple[int, ...] = ()  # the patients' kept de-identification mappings (patient scope)

    @property
    def whole(self) -> bool:
        return self.scope in WHOLE

    def corpora(self) -> QuerySet:
        if self.scope == Scope.PROJECT:
            return Corpus.objects.filter(project_id=self.project_id)
        if self.scope == Scope.CORPUS:
            return Corpus.objects.filter(pk=self.corpus_id)
        return Corpus.objects.none()

    def notes(self) -> QuerySet:
        if self.whole:
            return Note.objects.filter(corpus__in=self.corpora())
        return Note.objects.filter(pk__in=self.note_ids)

    def datasets_deleted(self) -> QuerySet:
        """Versions built on an erased corpus: deleted with it."""
        return DatasetVersion.objects.filter(corpus__in=self.corpora())

    def datasets_withdrawn(self) -> QuerySet:
        """Versions that held examples of erased notes and stay, withdrawn."""
        return DatasetVersion.objects.filter(pk__in=self.dataset_ids).exclude(corpus__in=self.corpora())

    def runs_deleted(self) -> QuerySet:
        corpora = self.corpora()
        return TrainingRun.objects.filter(Q(dataset__corpus__in=corpora) | Q(split__corpus__in=corpora))

    def as_json(self) -> dict:
        return {
            "scope": self.scope,
            "project_id": self.project_id,
            "corpus_id": self.corpus_id,
            "note_ids": list(self.note_ids),
            "dataset_ids": list(self.dataset_ids),
            "model_ids": list(self.model_ids),
            "mapping_ids": list(self.mapping_ids),
        }

    @classmethod
    def from_json(cls, data: dict) -> Target:
        return cls(
            scope=data["scope"],
            project_id=data["project_id"],
            corpus_id=data.get("corpus_id"),
            note_ids=tuple(data.get("note_ids", ())),
            dataset_ids=tuple(data.get("dataset_ids", ())),
            model_ids=tuple(data.get("model_ids", ())),
            mapping_ids=tuple(data.get("mapping_ids", ())),
        )


@dataclass(frozen=True)
class Step:
    rows: Callable[[Target], QuerySet]
    scopes: frozenset = EVERY

    def queryset(self, target: Target) -> QuerySet:
        return self.rows(target).order_by()

    def table(self, target: Target) -> str:
        return self.rows(target).model._meta.label


def _through(model, field_name: str):
    return getattr(model, field_name).through


def withdrawn_or_deleted(t: Target) -> QuerySet:
    return DatasetVersion.objects.filter(Q(pk__in=t.datasets_withdrawn()) | Q(pk__in=t.datasets_deleted()))


def _rounds(t: Target) -> QuerySet:
    return ReviewRound.objects.filter(corpus__in=t.corpora())


def _validation_sets(t: Target) -> QuerySet:
    return ValidationSet.objects.filter(corpus__in=t.corpora())


def _jobs(t: Target) -> QuerySet:
    return RelevanceJob.objects.filter(corpus__in=t.corpora())


def imports(t: Target) -> QuerySet:
    if t.scope == Scope.PROJECT:
        return ImportJob.objects.filter(project_id=t.project_id)
    if t.scope == Scope.CORPUS:
        return ImportJob.objects.filter(project_id=t.project_id, corpus_name__in=t.corpora().values("name"))
    return ImportJob.objects.none()


def map_import_jobs(t: Target) -> QuerySet:
    """Uploads of maps computed elsewhere into the erased corpora (their stored file names note ids)."""
    return MapImportJob.objects.filter(corpus__in=t.corpora())


def _deid_jobs(t: Target) -> QuerySet:
    """De-identification jobs (and residual scans) of the erased corpora: those whose every corpus
    still named is erased. A job that made a corpus that stays is kept (its source goes null)."""
    if t.scope == Scope.PROJECT:
        return DeidJob.objects.filter(project_id=t.project_id)
    erased = t.corpora()
    return DeidJob.objects.filter(
        Q(source__in=erased) | Q(target__in=erased),
        Q(source__in=erased) | Q(source__isnull=True),
        Q(target__in=erased) | Q(target__isnull=True),
    )


def _mappings(t: Target) -> QuerySet:
    """Kept original -> surrogate pairs (webapp.deid.mapping): the erased patients', or a whole
    project's. A corpus's erasure keeps them: they are per patient, whose other notes may stay."""
    if t.scope == Scope.PROJECT:
        return SurrogateMapping.objects.filter(project_id=t.project_id)
    return SurrogateMapping.objects.filter(pk__in=t.mapping_ids)


def _report_snapshots(t: Target) -> QuerySet:
    """The review report's stored figures of an erased corpus or project (counts and coefficients,
    no note text: caches, computed again when next asked for). A note's or a patient's erasure
    changes the decisions they counted, so they show as stale and are computed again."""
    erased = set(t.corpora().values_list("pk", flat=True))
    kept = ReportSnapshot.objects.only("pk", "corpus_id", "project_ids")
    ids = [
        row.pk
        for row in kept
        if row.corpus_id in erased
        or (t.scope == Scope.PROJECT and row.corpus_id is None and t.project_id in (row.project_ids or ()))
    ]
    return ReportSnapshot.objects.filter(pk__in=ids)


def _project_tasks(t: Target) -> QuerySet:
    return Task.objects.filter(project_id=t.project_id)


STEPS: tuple[Step, ...] = (
    # A patient's kept de-identification mapping (no row refers to it)
    Step(_mappings),
    # What a corpus's training runs and datasets hold (they PROTECT notes, annotations, corpora)
    Step(lambda t: RunMetric.objects.filter(run__in=t.runs_deleted()), WHOLE),
    Step(lambda t: RunLog.objects.filter(run__in=t.runs_deleted()), WHOLE),
    Step(lambda t: RunPrediction.objects.filter(Q(run__in=t.runs_deleted()) | Q(note__in=t.notes()))),
    Step(lambda t: t.runs_deleted(), WHOLE),
    Step(lambda t: SplitItem.objects.filter(Q(split__corpus__in=t.corpora()) | Q(annotation__note__in=t.notes()))),
    Step(lambda t: LabeledSplit.objects.filter(corpus__in=t.corpora()), WHOLE),
    Step(lambda t: DatasetExport.objects.filter(dataset__in=withdrawn_or_deleted(t))),
    Step(lambda t: MaskedExample.objects.filter(Q(dataset__in=withdrawn_or_deleted(t)) | Q(note__in=t.notes()))),
    Step(lambda t: _through(DatasetVersion, "jobs").objects.filter(datasetversion__in=t.datasets_deleted()), WHOLE),
    Step(lambda t: DatasetWithdrawal.objects.filter(dataset__in=t.datasets_deleted()), WHOLE),
    Step(lambda t: t.datasets_deleted(), WHOLE),
    # Peaks, review and relevance maps of the notes
    # through their maps (the peaks index), never by note: StoredPeak.note has no index
    Step(lambda t: StoredPeak.objects.filter(peaks__map__note__in=t.notes())),
    Step(lambda t: MapPeaks.objects.filter(map__note__in=t.notes())),
    Step(lambda t: RoundClaim.objects.filter(Q(pair__note__in=t.notes()) | Q(round__in=_rounds(t)))),
    Step(lambda t: RoundPair.objects.filter(Q(note__in=t.notes()) | Q(round__in=_rounds(t)))),
    Step(lambda t: PeakDecision.objects.filter(note__in=t.notes())),
    Step(lambda t: Adjudication.objects.filter(note__in=t.notes())),
    # the spans reviewers added and a curator's choice among them (gold made in the app)
    Step(lambda t: SpanAdjudication.objects.filter(Q(note__in=t.notes()) | Q(round__in=_rounds(t)))),
    Step(lambda t: AddedSpan.objects.filter(note__in=t.notes())),
    Step(
        lambda t: ValidationJudgement.objects.filter(Q(note__in=t.notes()) | Q(validation_set__in=_validation_sets(t)))
    ),
    Step(lambda t: ValidationVerdict.objects.filter(Q(note__in=t.notes()) | Q(validation_set__in=_validation_sets(t)))),
    Step(lambda t: RelevanceMap.objects.filter(note__in=t.notes())),
    Step(lambda t: NoteTokens.objects.filter(note__in=t.notes())),
    Step(lambda t: Annotation.objects.filter(note__in=t.notes())),
    # the stored samples of map ids are caches: drawn again on their next use
    Step(lambda t: MapSample.objects.filter(Q(corpus_id=t.corpus_id) | Q(corpus__in=t.corpora()))),
    Step(lambda t: t.notes()),
    # What else a corpus holds
    Step(lambda t: RoundReviewer.objects.filter(round__in=_rounds(t)), WHOLE),
    Step(lambda t: _through(ReviewRound, "tasks").objects.filter(reviewround__in=_rounds(t)), WHOLE),
    Step(_report_snapshots, WHOLE),
    Step(_rounds, WHOLE),
    Step(_validation_sets, WHOLE),
    Step(
        lambda t: _through(RelevanceEvaluation, "tasks").objects.filter(relevanceevaluation__corpus__in=t.corpora()),
        WHOLE,
    ),
    Step(lambda t: RelevanceEvaluation.objects.filter(corpus__in=t.corpora()), WHOLE),
    Step(lambda t: RelevanceChunk.objects.filter(job__in=_jobs(t)), WHOLE),
    Step(lambda t: _through(RelevanceJob, "tasks").objects.filter(relevancejob__in=_jobs(t)), WHOLE),
    Step(_jobs, WHOLE),
    Step(map_import_jobs, WHOLE),
    Step(lambda t: MapImport.objects.filter(corpus__in=t.corpora()), WHOLE),
    Step(imports, WHOLE),
    Step(_deid_jobs, WHOLE),
    Step(lambda t: t.corpora(), WHOLE),
    # What else a project holds
    # its tasks' guidelines, and its own guideline versions and state of catalog tasks
    Step(
        lambda t: TaskGuideline.objects.filter(Q(task__in=_project_tasks(t)) | Q(project_id=t.project_id)),
        {Scope.PROJECT},
    ),
    Step(lambda t: ProjectTaskState.objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(_project_tasks, {Scope.PROJECT}),
    Step(lambda t: PeakProfile.objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: DeidPolicy.objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: Membership.objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: WebhookDelivery.objects.filter(webhook__project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: Webhook.objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: _through(ApiToken, "projects").objects.filter(project_id=t.project_id), {Scope.PROJECT}),
    Step(lambda t: Project.objects.filter(pk=t.project_id), {Scope.PROJECT}),
)


def steps_for(target: Target) -> list[Step]:
    return [step for step in STEPS if target.scope in step.scopes]


@dataclass
class Plan:
    """The dry run: rows per table (in deletion order, tables with none left out), the files,
    the dataset versions withdrawn and the trained models listed. Ids and names only."""

    target: Target
    described: str
    tables: dict[str, int] = field(default_factory=dict)
    export_folders: int = 0
    uploads: int = 0
    mlflow_runs: int = 0
    active: dict[str, int] = field(default_factory=dict)  # long work that must end first
    withdrawn: list[str] = field(default_factory=list)
    models_listed: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(self.tables.values())

    @property
    def files(self) -> dict[str, int]:
        return {
            described_text.EXPORT_FOLDERS: self.export_folders,
            described_text.UPLOADS: self.uploads,
            described_text.MLFLOW_RUNS: self.mlflow_runs,
        }

    def as_json(self) -> dict:
        return {
            "target": self.described,
            "tables": self.tables,
            "rows": self.rows,
            "files": self.files,
            "datasets withdrawn": self.withdrawn,
            "models trained on erased data": self.models_listed,
            "work still running": self.active,
        }


def count(target: Target, described: str) -> Plan:
    plan = Plan(target, described)
    for step in steps_for(target):
        rows = step.queryset(target).count()
        if rows:
            table = step.table(target)
            plan.tables[table] = plan.tables.get(table, 0) + rows
    plan.export_folders = (
        DatasetExport.objects.filter(dataset__in=withdrawn_or_deleted(target)).exclude(path="").count()
    )
    plan.uploads = imports(target).exclude(upload="").count() + map_import_jobs(target).exclude(upload="").count()
    plan.mlflow_runs = (
        target.runs_deleted().filter(provenance__has_key="mlflow").count()
        + RelevanceEvaluation.objects.filter(corpus__in=target.corpora(), result__has_key="mlflow").count()
    )
    plan.withdrawn = [str(d) for d in target.datasets_withdrawn().order_by("name", "version")]
    plan.active = active_work(target)
    plan.models_listed = list(
        ModelVersion.objects.filter(pk__in=target.model_ids).order_by("name").values_list("name", flat=True)
    )
    return plan


def active_work(target: Target) -> dict[str, int]:
    """Long work that still reads or writes what the target reaches (queued, running, being
    cancelled): an erasure waits until it has ended or been cancelled, or the work would write
    rows of erased notes again, or fail on them."""
    from webapp.lifecycle.status import ACTIVE

    corpora = Corpus.objects.filter(Q(pk=target.corpus_id) | Q(pk__in=target.corpora()))
    datasets = DatasetVersion.objects.filter(Q(corpus__in=corpora) | Q(pk__in=target.dataset_ids))
    found = {
        "relevance jobs": RelevanceJob.objects.filter(corpus__in=corpora),
        "dataset builds": datasets,
        "exports": DatasetExport.objects.filter(dataset__in=datasets),
        "training runs": TrainingRun.objects.filter(Q(dataset__in=datasets) | Q(split__corpus__in=corpora)),
        "evaluations": RelevanceEvaluation.objects.filter(corpus__in=corpora),
        "imports": ImportJob.objects.filter(project_id=target.project_id, corpus_name__in=corpora.values("name"))
        if target.scope != Scope.PROJECT
        else ImportJob.objects.filter(project_id=target.project_id),
        # a job copying a corpus de-identified would copy an erased note again
        "de-identification jobs": DeidJob.objects.filter(Q(source__in=corpora) | Q(target__in=corpora))
        if target.scope != Scope.PROJECT
        else DeidJob.objects.filter(project_id=target.project_id),
    }
    counts = {what: rows.filter(status__in=ACTIVE).count() for what, rows in found.items()}
    return {what: n for what, n in counts.items() if n}


# ---------------------------------------------------------------- resolving a target


def resolve(
    project: Project,
    scope: str,
    *,
    corpus: Corpus | None = None,
    note_external_ids=(),
    patient_key: str = "",
    patient_values=(),
) -> Target:
    """The ids of what an erasure of `scope` reaches now. Raises PlanError in plain words."""
    if scope != Scope.PROJECT and corpus is None:
        raise PlanError(_("Name the corpus."))
    if corpus is not None and corpus.project_id != project.pk:
        raise PlanError(
            _("Corpus %(corpus)s is not in project %(project)s.") % {"corpus": corpus.name, "project": project.slug}
        )
    if scope == Scope.NOTES:
        wanted = {str(i) for i in note_external_ids if str(i).strip()}
        if not wanted:
            raise PlanError(_("Name at least one note."))
        found = dict(corpus.notes.filter(external_id__in=wanted).values_list("external_id", "pk"))
        if missing := len(wanted - found.keys()):
            raise PlanError(
                _("%(missing)s of the %(named)s notes named are not in corpus %(corpus)s.")
                % {"missing": missing, "named": len(wanted), "corpus": corpus.name}
            )
        note_ids = tuple(sorted(found.values()))
    elif scope == Scope.PATIENT:
        note_ids = tuple(sorted(patient_notes(corpus, patient_key, patient_values).values_list("pk", flat=True)))
        if not note_ids:
            raise PlanError(
                _("No note of corpus %(corpus)s has one of these values under '%(key)s'.")
                % {"corpus": corpus.name, "key": patient_key}
            )
        mapping_ids = tuple(
            sorted(
                SurrogateMapping.objects.filter(
                    project=project, patient_hash__in=_hashes(patient_key, patient_values)
                ).values_list("pk", flat=True)
            )
        )
    elif scope in WHOLE:
        note_ids = ()
    else:
        raise PlanError(
            _("Unknown scope %(scope)s; choose one of %(scopes)s.")
            % {"scope": repr(scope), "scopes": ", ".join(Scope.values)}
        )
    if scope != Scope.PATIENT:
        mapping_ids = ()
    partial = Target(scope, project.pk, corpus.pk if corpus else None, note_ids)
    notes = partial.notes()
    dataset_ids = tuple(
        sorted(set(MaskedExample.objects.filter(note__in=notes).values_list("dataset_id", flat=True).distinct()))
    )
    used = TrainingRun.objects.filter(
        Q(dataset_id__in=dataset_ids)
        | Q(dataset__corpus__in=partial.corpora())
        | Q(split__items__annotation__note__in=notes)
        | Q(split__corpus__in=partial.corpora()),
        produced_model__isnull=False,
    )
    model_ids = tuple(sorted(set(used.values_list("produced_model_id", flat=True))))
    return Target(scope, project.pk, partial.corpus_id, note_ids, dataset_ids, model_ids, mapping_ids)


def _hashes(key: str, values) -> list[str]:
    """The keyed hashes of a patient's values (webapp.deid.policy.patient_hash): what a
    de-identified note's patient field and a kept mapping name the patient by."""
    return [patient_hash(key, str(v)) for v in values if str(v).strip()]


def patient_notes(corpus: Corpus, key: str, values) -> QuerySet:
    """The notes of `corpus` whose metadata[key] is one of `values` (a string or a number in the
    metadata matches its text); in a de-identified corpus, whose metadata[key] is the keyed hash of
    one of them (the de-identifier writes the patient field so: webapp.deid.policy)."""
    from django.db.models import TextField
    from django.db.models.fields.json import KT
    from django.db.models.functions import Cast

    if not PATIENT_KEY.match(key or "") or "__" in key:
        raise PlanError(_("The patient key is a metadata key: letters, digits, '_' and '-' only."))
    wanted = [str(v).strip() for v in values if str(v).strip()]
    if not wanted:
        raise PlanError(_("Give at least one patient value."))
    if corpus.deidentified:
        wanted += _hashes(key, wanted)
    # cast: the value as plain text on both databases (SQLite's JSON "in" would read the values as JSON)
    return corpus.notes.annotate(patient=Cast(KT(f"metadata__{key}"), TextField())).filter(patient__in=wanted)
