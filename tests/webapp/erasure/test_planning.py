"""What an erasure reaches (webapp.erasure.planning): per-table counts of the dry run for each
scope, no table left out, and the command's dry run, which deletes nothing and prints no text."""

import io
import json

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import models

from tests.webapp.erasure.world import every_table
from webapp.erasure import erasing, planning
from webapp.erasure.models import ErasureRequest

Scope = ErasureRequest.Scope
pytestmark = pytest.mark.django_db

# Rows that refer to an erased table and stay, on purpose: the proof of the erasure itself.
KEPT = {
    "audit.AuditEvent": "receipts stay; their project goes to null",
    "erasure.ErasureRequest": "the request stays, with its counts",
    "erasure.TrainedOnErasedData": "the listing of models that saw erased data",
    "erasure.TrainedOnErasedData_erasures": "which erasures reached a listed model",
}


def erased_tables(scope) -> set[str]:
    target = planning.Target(scope, project_id=0, corpus_id=0)
    return {step.table(target) for step in planning.steps_for(target)}


@pytest.mark.parametrize("scope", list(Scope))
def test_every_table_that_refers_to_an_erased_one_is_erased_too(scope):
    erased = erased_tables(scope)
    missing = []
    for model in apps.get_models(include_auto_created=True):
        label = model._meta.label
        if label in erased or label in KEPT:
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, models.ForeignKey) and field.related_model._meta.label in erased:
                if field.remote_field.on_delete is models.SET_NULL and field.related_model._meta.label != "corpus.Note":
                    continue  # a link that goes null (the user who made a row, a dataset's job)
                missing.append(f"{label}.{field.name} -> {field.related_model._meta.label}")
    assert not missing, missing


def test_a_patients_notes_reach_their_rows_and_no_other_patients(world):
    counted, hashes = erasing.plan(
        world.project, Scope.PATIENT, corpus=world.ward, patient_key="patient_id", patients=["P1"]
    )
    tables = counted.tables
    assert tables["corpus.Note"] == 2  # n1 and n2; o1 is P1's too but in another corpus
    assert tables["corpus.Annotation"] == 2 and tables["training.SplitItem"] == 2
    assert tables["pipeline.RelevanceMap"] == 6 and tables["review.MapPeaks"] == 6
    assert tables["review.StoredPeak"] == 2 * 6  # "120" and "pacemaker" / "bp": every stored peak of their maps
    assert tables["review.RoundPair"] == tables["review.RoundClaim"] == 2
    assert tables["review.PeakDecision"] == tables["review.Adjudication"] == 2
    assert tables["review.ValidationJudgement"] == tables["review.ValidationVerdict"] == 2
    assert tables["training.RunPrediction"] == 2
    assert tables["datasets.MaskedExample"] == 6  # the whole withdrawn version, not only their 4
    assert tables["datasets.DatasetExport"] == 1 and counted.export_folders == 1
    assert counted.withdrawn == ["e-ds v1"] and counted.models_listed == ["tiny-dsm"]
    assert "corpus.Corpus" not in tables and "training.TrainingRun" not in tables
    assert len(hashes) == 1 and "P1" not in json.dumps(counted.as_json())


def test_notes_by_id_and_an_unknown_note(world):
    counted, _ = erasing.plan(world.project, Scope.NOTES, corpus=world.ward, notes=["n3"])
    assert counted.tables["corpus.Note"] == 1 and counted.described == "1 note of corpus ward"
    with pytest.raises(planning.PlanError, match="1 of the 2 notes named are not in corpus ward"):
        erasing.plan(world.project, Scope.NOTES, corpus=world.ward, notes=["n3", "nope"])


def test_a_whole_corpus_reaches_its_runs_datasets_rounds_and_jobs(world):
    counted, _ = erasing.plan(world.project, Scope.CORPUS, corpus=world.ward)
    tables = counted.tables
    assert tables["corpus.Note"] == 3 and tables["corpus.Corpus"] == 1
    for table in (
        "training.TrainingRun",
        "training.LabeledSplit",
        "datasets.DatasetVersion",
        "review.ReviewRound",
        "review.ValidationSet",
        "evaluation.RelevanceEvaluation",
        "pipeline.RelevanceJob",
        "corpus.ImportJob",
    ):
        assert table in tables, table
    assert tables["training.TrainingRun"] == 2 and counted.withdrawn == []
    assert counted.models_listed == ["tiny-dsm"]


def test_a_whole_project_reaches_everything_of_it(world):
    before = every_table()
    counted, _ = erasing.plan(world.project, Scope.PROJECT)
    assert counted.tables["corpus.Note"] == 4 and counted.tables["corpus.Corpus"] == 2
    assert counted.tables["projects.Project"] == 1 and counted.tables["corpus.Task"] == 3
    assert counted.tables["pipeline.PeakProfile"] == 1
    # its guideline versions (of its own task and of the catalog task it adopted) and that task's state
    assert counted.tables["corpus.TaskGuideline"] == 2 and counted.tables["corpus.ProjectTaskState"] == 1
    assert every_table() == before  # a plan deletes nothing


def test_the_commands_dry_run_prints_counts_and_deletes_nothing(world):
    before = every_table()
    out = io.StringIO()
    call_command(
        "erase", "--project", "erasure-study", "--corpus", "ward", "--patient", "P1", "--dry-run", "--json", stdout=out
    )
    printed = out.getvalue()
    report = json.loads(printed)
    assert report["tables"]["corpus.Note"] == 2 and report["rows"] == sum(report["tables"].values())
    assert "pacemaker" not in printed and "P1" not in printed and "n1" not in printed
    assert every_table() == before and not ErasureRequest.objects.exists()
    table = io.StringIO()
    call_command("erase", "--project", "erasure-study", "--corpus", "ward", "--whole-corpus", "--dry-run", stdout=table)
    assert "corpus.Corpus" in table.getvalue() and "dry run: nothing was erased" in table.getvalue()


def test_an_erasure_waits_for_the_work_still_running_on_its_data(world, admin_user):
    from webapp.datasets.models import DatasetExport

    DatasetExport.objects.filter(pk=world.export.pk).update(status="running")
    counted, _ = erasing.plan(world.project, Scope.NOTES, corpus=world.ward, notes=["n1"])
    assert counted.active == {"exports": 1}  # the dry run says so
    with pytest.raises(planning.PlanError, match=r"still running \(1 exports\)"):
        erasing.request(world.project, Scope.NOTES, corpus=world.ward, notes=["n1"], actor=admin_user, send=False)
    assert not ErasureRequest.objects.exists()
