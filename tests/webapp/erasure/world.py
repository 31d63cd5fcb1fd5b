"""A project with a row in every table an erasure reaches, made without a model or a worker.

Corpus "ward" holds 3 notes: n1 and n2 of patient P1, n3 of patient P2 (metadata patient_id);
corpus "other" in the same project holds 1 note that nothing erases except the whole project.
Every note has an annotation, maps of three tasks (with stored peaks), a review decision, an
adjudication, a round pair with a claim, validation answers (a judgement and a verdict) and
training predictions; a dataset built from ward's maps has examples of every note and an
exported folder; a DSM run on it produced a model; a labeled split holds ward's annotations.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from django.apps import apps
from django.utils import timezone

from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, ProjectTaskState, Task, TaskGuideline
from webapp.datasets import building
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceChunk, RelevanceJob, RelevanceMap
from webapp.projects.models import Membership, Project
from webapp.review import peakstore
from webapp.review.models import (
    Adjudication,
    MapSample,
    PeakDecision,
    ReviewRound,
    RoundClaim,
    RoundPair,
    RoundReviewer,
    ValidationJudgement,
    ValidationSet,
    ValidationVerdict,
)
from webapp.training.models import LabeledSplit, RunLog, RunMetric, RunPrediction, SplitItem, TrainingRun


@dataclass
class World:
    project: Project
    ward: Corpus
    other: Corpus
    notes: dict[str, Note]
    dataset: DatasetVersion
    export: DatasetExport
    run: TrainingRun
    trained: ModelVersion
    base: ModelVersion


def every_table() -> dict[str, int]:
    """Rows of every model of the project's apps (through tables included), for before/after."""
    counts = {}
    for model in apps.get_models(include_auto_created=True):
        if model._meta.app_label in ("sessions", "admin", "contenttypes", "auth", "axes"):
            continue
        counts[model._meta.label] = model._default_manager.count()
    return counts


def make_world(user, data_dir=None) -> World:
    project = Project.objects.create(name="Erasure study", slug="erasure-study")
    Membership.objects.create(project=project, user=user, role="admin")
    ward = Corpus.objects.create(project=project, name="ward", language="en")
    other = Corpus.objects.create(project=project, name="other", language="en")
    base = ModelVersion.objects.create(name="tiny-base", family="llama", path="tiny-base")
    sharp = PeakProfile.objects.create(
        project=project, name="sharp-e", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4
    )
    tasks = {
        slug: Task.objects.create(slug=f"e-{slug}", description=f"e {slug}", options=["y", "n"], project=project)
        for slug in ("heart", "pacemaker", "pressure")
    }
    TaskGuideline.objects.create(task=tasks["heart"], version=1, text="look for a rate")
    # a catalog task the project adopted: retired there, with its own guideline (the catalog's stays)
    catalog_task = Task.objects.create(slug="e-catalog", description="e catalog", options=["y", "n"])
    ProjectTaskState.objects.create(project=project, task=catalog_task, retired=True)
    TaskGuideline.objects.create(task=catalog_task, version=1, text="the catalog's")
    TaskGuideline.objects.create(task=catalog_task, version=2, text="the project's", project=project)
    patients = {"n1": "P1", "n2": "P1", "n3": "P2"}
    notes = {
        name: Note.objects.create(
            corpus=ward, external_id=name, text=f"{TEXT} {name}", metadata={"patient_id": patient}
        )
        for name, patient in patients.items()
    }
    notes["o1"] = Note.objects.create(corpus=other, external_id="o1", text=f"{TEXT} o1", metadata={"patient_id": "P1"})
    job = RelevanceJob.objects.create(corpus=ward, model_version=base, status="done")
    job.tasks.set(tasks.values())
    RelevanceChunk.objects.create(job=job, index=0, pairs=[[n.pk, tasks["heart"].pk] for n in notes.values()], size=3)
    for note in notes.values():
        for slug in ("heart", "pacemaker", "pressure"):
            add_map(note, tasks[slug], base, PEAKS[slug], job=job if note.corpus_id == ward.pk else None)
    peakstore.ensure(RelevanceMap.objects.all(), sharp.params)
    dataset = DatasetVersion.objects.create(name="e-ds", corpus=ward, model_version=base, profile=sharp)
    dataset.jobs.set([job])
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    export = DatasetExport.objects.create(dataset=dataset, format="jsonl", status="done", rows=1)
    if data_dir is not None:
        folder = data_dir / "exports" / f"dataset-{dataset.pk}" / f"export-{export.pk}-jsonl"
        folder.mkdir(parents=True)
        (folder / "examples.jsonl").write_text('{"masked": "x"}\n')
        DatasetExport.objects.filter(pk=export.pk).update(path=str(folder.relative_to(data_dir)))
    split = LabeledSplit.objects.create(corpus=ward, tasks=["e-heart"], train_count=3)
    round_ = ReviewRound.objects.create(
        corpus=ward, name="r1", model_version=base, method="attnlrp", template="en", k=1
    )
    round_.tasks.set([tasks["heart"]])
    RoundReviewer.objects.create(round=round_, reviewer=user)
    vset = ValidationSet.objects.create(
        corpus=ward,
        model_version=base,
        method="attnlrp",
        template="en",
        name="v1",
        items=[[n.pk, tasks["heart"].pk] for n in notes.values() if n.corpus_id == ward.pk],
        grid=[{"kernel_size": 3, "sigma": 1.0, "lower": 0.2, "upper": 0.4}],
    )
    MapSample.objects.create(
        corpus=ward, model_version=base, method="attnlrp", template="en", size=3, population=3, map_ids=[1, 2, 3]
    )
    evaluation = RelevanceEvaluation.objects.create(corpus=ward, model_version=base, profile=sharp, status="done")
    evaluation.tasks.set([tasks["heart"]])
    trained = ModelVersion.objects.create(name="tiny-dsm", family="llama", path="trained/tiny-dsm")
    run = TrainingRun.objects.create(
        kind="dsm", model_version=base, dataset=dataset, produced_model=trained, status="done"
    )
    heads = TrainingRun.objects.create(kind="heads", model_version=base, split=split, status="done")
    RunMetric.objects.create(run=run, step=1, loss=1.0)
    RunLog.objects.create(run=run, message="step 1")
    now = timezone.now()
    for position, note in enumerate(n for n in notes.values() if n.corpus_id == ward.pk):
        annotation = Annotation.objects.create(note=note, task=tasks["heart"], label="y", annotator_name="import:t")
        SplitItem.objects.create(split=split, annotation=annotation, part="train")
        PeakDecision.objects.create(
            note=note,
            task=tasks["heart"],
            model_version=base,
            method="attnlrp",
            template="en",
            start=0,
            end=2,
            decision="accept",
            reviewer=user,
        )
        Adjudication.objects.create(note=note, task=tasks["heart"], start=0, end=2, decision="accept", curator=user)
        pair = RoundPair.objects.create(round=round_, position=position, note=note, task=tasks["heart"], peaks=[[0, 2]])
        RoundClaim.objects.create(
            round=round_, pair=pair, reviewer=user, claimed=now, expires=now + datetime.timedelta(hours=1)
        )
        ValidationJudgement.objects.create(
            validation_set=vset, note=note, task=tasks["heart"], setting=0, reviewer=user, reasonable=True
        )
        ValidationVerdict.objects.create(
            validation_set=vset, note=note, task=tasks["heart"], setting=0, reasonable=True, curator=user
        )
        RunPrediction.objects.create(run=heads, note=note, task=tasks["heart"], gold="y", predicted="y")
    Annotation.objects.create(note=notes["o1"], task=tasks["heart"], label="n", annotator_name="import:t")
    ImportJob.objects.create(
        kind="notes", project=project, corpus_name="ward", file_name="ward.jsonl", status="done", created_by=user
    )
    return World(project, ward, other, notes, dataset, export, run, trained, base)
