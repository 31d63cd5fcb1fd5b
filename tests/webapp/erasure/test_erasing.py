"""Erasures run in process (webapp.erasure.erasing): every table counted before and after, the
marks (dataset withdrawn, model trained on erased data), the receipt, and a second attempt that
finishes what a first one left."""

import json

import pytest

from tests.webapp.erasure.helpers import ADDED_BY_THE_ERASURE, changes, erase_here, erased_by_table
from tests.webapp.erasure.world import every_table
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.datasets.models import DatasetVersion, MaskedExample
from webapp.deid.policy import patient_hash
from webapp.erasure import erasing, planning
from webapp.erasure.models import ErasureRequest, TrainedOnErasedData
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.pipeline.models import ModelVersion
from webapp.review.models import ValidationSet

Scope = ErasureRequest.Scope
pytestmark = pytest.mark.django_db


def test_a_patients_notes_go_with_every_row_made_from_them(world, admin_user, settings):
    erasure, before, after = erase_here(
        world.project, Scope.PATIENT, corpus=world.ward, patient_key="patient_id", patients=["P1"], actor=admin_user
    )
    expected = {
        **erased_by_table(erasure),
        **ADDED_BY_THE_ERASURE,
        "erasure.DatasetWithdrawal": 1,
        "erasure.TrainedOnErasedData": 1,
        "erasure.TrainedOnErasedData_erasures": 1,
    }
    assert changes(before, after) == expected
    assert erasure.erased["corpus.Note"] == 2 and erasure.rows_erased == erasure.rows_planned
    assert erasure.erased["files: export folders"] == 1
    assert not (settings.DATA_DIR / "exports" / f"dataset-{world.dataset.pk}").exists()
    assert set(Note.objects.values_list("external_id", flat=True)) == {"n3", "o1"}
    # marks: the version stays, withdrawn, empty; the model stays, listed
    dataset = DatasetVersion.objects.get(pk=world.dataset.pk)
    assert dataset.withdrawal.erasure == erasure and dataset.example_count == 0
    assert not MaskedExample.objects.filter(dataset=dataset).exists()
    assert TrainedOnErasedData.objects.get(model_version=world.trained).erasures.get() == erasure
    assert ValidationSet.objects.get().items == [[world.notes["n3"].pk, ValidationSet.objects.get().items[0][1]]]
    receipt = AuditEvent.objects.get(action=AuditEvent.Action.ERASURE)
    assert receipt.actor == admin_user and receipt.project == world.project
    assert receipt.details["tables"] == {k: v for k, v in erasure.erased.items() if not k.startswith("files")}
    assert receipt.details["models_trained_on_erased_data"] == ["tiny-dsm"]
    assert receipt.details["patient_hashes"] == [patient_hash("patient_id", "P1")]
    text = json.dumps(receipt.details) + json.dumps(erasure.planned) + erasure.described
    assert "P1" not in text and "n1" not in text and "pacemaker in situ" not in text


def test_a_whole_corpus_goes_and_its_trained_model_stays_listed_in_its_project(world, admin_user, researcher):
    erasure, before, after = erase_here(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user)
    expected = {
        **erased_by_table(erasure),
        **ADDED_BY_THE_ERASURE,
        "erasure.TrainedOnErasedData": 1,
        "erasure.TrainedOnErasedData_erasures": 1,
    }
    assert changes(before, after) == expected
    assert {k: v for k, v in erasure.erased.items() if not k.startswith("files")} == erasure.planned["tables"]
    assert list(Note.objects.values_list("external_id", flat=True)) == ["o1"]
    # the run that produced the model is gone; the model is the project's still, never a base model
    assert ModelVersion.objects.visible_to(admin_user).filter(pk=world.trained.pk).exists()
    assert not ModelVersion.objects.visible_to(researcher).filter(pk=world.trained.pk).exists()


def test_a_whole_project_goes_and_its_receipt_stays(world, admin_user):
    erasure, before, after = erase_here(world.project, Scope.PROJECT, actor=admin_user)
    expected = {
        **erased_by_table(erasure),
        **ADDED_BY_THE_ERASURE,
        "erasure.TrainedOnErasedData": 1,
        "erasure.TrainedOnErasedData_erasures": 1,
    }
    assert changes(before, after) == expected
    assert (
        after["corpus.Note"] == after["corpus.Corpus"] == 0
        and after["projects.Project"] == before["projects.Project"] - 1
    )
    erasure.refresh_from_db()
    assert erasure.project is None and erasure.project_slug == "erasure-study"
    assert AuditEvent.objects.get(action=AuditEvent.Action.ERASURE).details["project"] == "erasure-study"


def test_an_attempt_cut_short_is_finished_by_the_next_with_nothing_counted_twice(world, admin_user):
    erasure = erasing.request(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user, send=False)
    first = erasing.claim(erasure.pk, worker="first")
    target = planning.Target.from_json(first.target)
    steps = planning.steps_for(target)
    with Heartbeat(first) as heart:  # the first worker erases three tables, one batch of a fourth, and is lost
        for step in steps[:3]:
            while erasing._erase_batch(first, step, target, 1, heart):
                pass
        assert erasing._erase_batch(first, steps[3], target, 1, heart) == 1  # 1 of the 2 training runs
    ErasureRequest.objects.filter(pk=erasure.pk).update(heartbeat=units.before(3600))  # its heartbeat went stale
    second = erasing.claim(erasure.pk, worker="second")
    assert second.attempts == 2
    before = every_table()
    assert erasing.run(second, batch=2) == "done"
    with pytest.raises(erasing.Stopped):  # the first worker, waking up, can write nothing more
        erasing._erase_batch(first, steps[0], target, 1, Heartbeat(first))
    second.refresh_from_db()
    assert {k: v for k, v in second.erased.items() if not k.startswith("files")} == second.planned["tables"]
    assert before["corpus.Note"] - every_table()["corpus.Note"] == 3


def test_a_cancelled_erasure_stops_between_batches_and_resumes(world, admin_user):
    erasure = erasing.request(world.project, Scope.CORPUS, corpus=world.ward, actor=admin_user, send=False)
    claimed = erasing.claim(erasure.pk, worker="test")
    units.request_cancel(ErasureRequest, erasure.pk)
    assert erasing.run(claimed) == "cancelled"
    erasure.refresh_from_db()
    assert erasure.status == "cancelled" and erasure.rows_erased == 0
    assert erasing.resume(erasure)
    assert erasing.run(erasing.claim(erasure.pk, worker="test")) == "done"
    assert not Note.objects.filter(corpus__name="ward").exists()


def test_rebuild_makes_the_next_version_once_without_the_erased_notes(world, admin_user):
    erasure, _, _ = erase_here(
        world.project,
        Scope.NOTES,
        corpus=world.ward,
        notes=["n1"],
        datasets=ErasureRequest.Datasets.REBUILD,
        actor=admin_user,
    )
    rebuilt = DatasetVersion.objects.get(name="e-ds", version=2)
    assert erasure.rebuilt == [[world.dataset.pk, rebuilt.pk]] and rebuilt.status == "queued"
    from django.utils import timezone

    from webapp.datasets import building

    ValidationSet.objects.update(retired=timezone.now())  # else its notes are held out of every build
    building.build(building.claim(rebuilt.pk))
    notes = set(MaskedExample.objects.filter(dataset=rebuilt).values_list("note__external_id", flat=True))
    assert notes == {"n2", "n3"}
    erasing.rebuild(erasure, planning.Target.from_json(erasure.target))  # ended: this attempt holds nothing
    assert DatasetVersion.objects.filter(name="e-ds").count() == 2
