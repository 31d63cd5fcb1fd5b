"""Dataset builds and exports as units of long work (webapp.lifecycle): claim, re-claim after a
lost worker, cancel, build again, and a worker presumed dead that wakes up (in process; the
same paths with real killed workers are in tests/workers/test_datasets.py)."""

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from webapp.audit.models import AuditEvent
from webapp.datasets import building, export
from webapp.datasets.formats import FORMATS
from webapp.datasets.launch import LaunchError, build_again, cancel_build, cancel_export
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.lifecycle import queue
from webapp.lifecycle.heartbeat import Heartbeat
from webapp.lifecycle.status import JobStatus

from .fabricate import PEAKS, TEXT, add_map


class BeatOnReport(Heartbeat):
    """A heartbeat that beats at each report instead of from its thread: in-process tests hold
    their rows in a transaction that the thread's own connection cannot see."""

    def report(self, **fields):
        super().report(**fields)
        self._beat()  # on this thread and its connection, which sees the test's rows


def lose_worker(model, pk):
    """Its worker stopped beating longer ago than WORK_STALL_SECONDS (killed)."""
    from django.conf import settings

    stale = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 5)
    model.objects.filter(pk=pk).update(heartbeat=stale)


def rows(dataset):
    return [
        (e.note_id, e.tasks, e.masked_text, e.label, e.char_start, e.char_end, e.relevance_map_id)
        for e in MaskedExample.objects.filter(dataset=dataset).order_by("id")
    ]


@pytest.fixture
def five_notes(corpus, tasks, model, note):
    """Five notes with three maps each: 10 examples in a DSM build, 2 a note."""
    from webapp.corpus.models import Note

    notes = [note] + [Note.objects.create(corpus=corpus, external_id=f"b{i}", text=f"{TEXT} n{i}") for i in range(4)]
    for each in notes:
        for slug in ("heart", "pacemaker", "pressure"):
            add_map(each, tasks[slug], model, PEAKS[slug])
    return notes


@pytest.fixture
def small_batches(monkeypatch):
    """One note a batch of maps, three examples a write: a build crosses many batch boundaries."""
    monkeypatch.setattr(building, "BATCH_MAPS", 2)
    monkeypatch.setattr(building, "NOTE_BLOCK_START", 1)
    monkeypatch.setattr(building, "WRITE_BATCH", 3)


class Killed(BaseException):
    """SIGKILL, in process: nothing runs after it, no failure is recorded."""


def build_then_kill(dataset_id, worker, monkeypatch):
    """A build killed after writing all its examples, before its end: the worst case for duplicates."""

    def killed(model, at_least):
        if model is MaskedExample:
            raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(building, "refresh_planner_stats", killed)
        with pytest.raises(Killed):
            building.build(building.claim(dataset_id, worker=worker))


def on_batch(monkeypatch, number, action):
    """Run `action()` when the build reads its `number`-th batch of maps."""
    calls = []
    original = building.rejected_char_spans

    def hooked(note_ids, task_ids):
        calls.append(1)
        if len(calls) == number:
            action()
        return original(note_ids, task_ids)

    monkeypatch.setattr(building, "rejected_char_spans", hooked)


# ---------------------------------------------------------------- claim


def test_a_build_is_claimed_once_while_its_worker_beats(make_dataset, maps):
    dataset = make_dataset()
    first = building.claim(dataset.pk, worker="a")
    assert (first.status, first.attempts, first.worker, first.maps_done) == (JobStatus.RUNNING, 1, "a", 0)
    assert building.claim(dataset.pk, worker="b") is None  # a redelivered message finds it held


def test_a_build_whose_worker_was_lost_is_claimed_again(make_dataset, maps):
    dataset = make_dataset()
    building.claim(dataset.pk, worker="a")
    lose_worker(DatasetVersion, dataset.pk)
    again = building.claim(dataset.pk, worker="b")
    assert (again.status, again.attempts, again.worker) == (JobStatus.RUNNING, 2, "b")


def test_an_ended_or_cancelled_build_is_not_claimed(make_dataset, maps, built):
    assert building.claim(built.pk) is None
    cancelled = make_dataset("cancelled")
    cancel_build(cancelled)
    assert building.claim(cancelled.pk) is None


def test_a_build_claimed_again_after_a_killed_worker_gives_exactly_the_same_examples(
    make_dataset, five_notes, small_batches, monkeypatch
):
    reference = make_dataset("reference", mode="random", seed=3)
    building.build(building.claim(reference.pk))
    expected = [row[:6] for row in rows(reference)]

    dataset = make_dataset("killed", mode="random", seed=3)
    build_then_kill(dataset.pk, "a", monkeypatch)
    assert MaskedExample.objects.filter(dataset=dataset).count() == len(expected) == 10
    lose_worker(DatasetVersion, dataset.pk)

    stats = building.build(building.claim(dataset.pk, worker="b"))
    dataset.refresh_from_db()
    assert (dataset.status, dataset.attempts, dataset.worker) == (JobStatus.DONE, 2, "b")
    assert [row[:6] for row in rows(dataset)] == expected and stats["examples"] == 10  # no duplicates


def test_a_worker_presumed_lost_writes_nothing_once_another_took_the_build_over(
    make_dataset, five_notes, small_batches, monkeypatch
):
    dataset = make_dataset()
    first = building.claim(dataset.pk, worker="a")

    def taken_over():
        lose_worker(DatasetVersion, dataset.pk)
        building.claim(dataset.pk, worker="b")

    on_batch(monkeypatch, 3, taken_over)  # "a" stalls in its third batch; "b" claims it meanwhile
    assert building.build(first, BeatOnReport(first)) is None
    dataset.refresh_from_db()
    assert (dataset.status, dataset.attempts, dataset.worker) == (JobStatus.RUNNING, 2, "b")
    assert not MaskedExample.objects.filter(dataset=dataset).exists()  # "a" wrote nothing after the claim


def test_a_late_worker_neither_ends_nor_rebuilds_a_build_another_finished(make_dataset, maps):
    dataset = make_dataset()
    late = building.claim(dataset.pk, worker="a")
    lose_worker(DatasetVersion, dataset.pk)
    building.build(building.claim(dataset.pk, worker="b"))
    kept = rows(dataset)
    assert building.build(late) is None
    building.fail(late, RuntimeError("late"))
    assert rows(dataset) == kept
    dataset.refresh_from_db()
    assert (dataset.status, dataset.error, dataset.stats["examples"]) == (JobStatus.DONE, "", 2)


def test_progress_goes_out_with_the_heartbeat(make_dataset, five_notes, small_batches, monkeypatch):
    dataset = building.claim(make_dataset().pk)
    seen = []
    on_batch(monkeypatch, 4, lambda: seen.append(DatasetVersion.objects.get(pk=dataset.pk).maps_done))
    building.build(dataset, BeatOnReport(dataset))
    dataset.refresh_from_db()
    assert seen == [9] and (dataset.maps_done, dataset.maps_total) == (15, 15)  # 3 batches of 1 note x 3 maps


# ---------------------------------------------------------------- cancel


def test_a_cancel_stops_the_build_at_a_batch_and_keeps_no_examples(
    make_dataset, five_notes, small_batches, monkeypatch, researcher
):
    dataset = building.claim(make_dataset().pk)
    heart = BeatOnReport(dataset)

    def cancel():
        assert MaskedExample.objects.filter(dataset=dataset).exists()  # examples were written already
        assert cancel_build(dataset, researcher) == JobStatus.CANCELLING

    on_batch(monkeypatch, 4, cancel)
    assert building.build(dataset, heart) is None
    assert heart.cancelling and dataset.maps_done < dataset.maps_total
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.CANCELLED and dataset.finished is not None
    assert not MaskedExample.objects.filter(dataset=dataset).exists()
    event = AuditEvent.objects.get(action=AuditEvent.Action.CANCEL_JOB)
    assert event.actor == researcher and event.object_id == str(dataset.pk) and event.details["status"] == "cancelling"


def test_a_queued_build_is_cancelled_at_once(make_dataset, maps):
    dataset = make_dataset()
    assert cancel_build(dataset) == JobStatus.CANCELLED
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.CANCELLED and not dataset.is_active


def test_a_build_whose_worker_was_lost_is_cancelled_at_once_without_its_examples(make_dataset, maps, monkeypatch):
    dataset = make_dataset()
    build_then_kill(dataset.pk, "a", monkeypatch)
    assert MaskedExample.objects.filter(dataset=dataset).exists()
    lose_worker(DatasetVersion, dataset.pk)
    assert cancel_build(dataset) == JobStatus.CANCELLED
    assert not MaskedExample.objects.filter(dataset=dataset).exists()


def test_an_ended_build_cannot_be_cancelled(built):
    with pytest.raises(LaunchError, match="Only a queued or running build"):
        cancel_build(built)
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB).exists()


# ---------------------------------------------------------------- build again


@pytest.fixture
def sent(monkeypatch):
    messages = []
    monkeypatch.setattr(queue, "send", lambda task, *ids: messages.append((task, *ids)) or len(ids))
    return messages


def test_a_stalled_build_is_built_again_at_once(
    make_dataset, maps, sent, django_capture_on_commit_callbacks, monkeypatch
):
    dataset = make_dataset()
    build_then_kill(dataset.pk, "a", monkeypatch)
    lose_worker(DatasetVersion, dataset.pk)
    dataset.refresh_from_db()
    assert dataset.is_stalled and dataset.status_text().startswith("stalled: worker lost at ")
    with django_capture_on_commit_callbacks(execute=True):
        queued = build_again(dataset)
    assert (queued.pk, queued.status, queued.attempts) == (dataset.pk, JobStatus.QUEUED, 1)
    assert sent == [("workers.datasets.build_dataset", dataset.pk)]
    building.build(building.claim(dataset.pk, worker="b"))
    assert MaskedExample.objects.filter(dataset=dataset).count() == 2


def test_a_build_whose_worker_beats_is_not_built_again(make_dataset, maps, sent):
    dataset = building.claim(make_dataset().pk)
    with pytest.raises(LaunchError, match="still being built"):
        build_again(dataset)
    assert sent == []


def test_a_cancelled_build_is_built_again_from_nothing(make_dataset, maps, sent, django_capture_on_commit_callbacks):
    dataset = make_dataset()
    cancel_build(dataset)
    with django_capture_on_commit_callbacks(execute=True):
        build_again(dataset)
    building.build(building.claim(dataset.pk))
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE and dataset.stats["examples"] == 2


def test_an_unreachable_queue_is_said_on_the_build(make_dataset, maps, monkeypatch, django_capture_on_commit_callbacks):
    from webapp.datasets.launch import launch_build

    def unreachable(task, *ids):
        raise queue.QueueUnavailable("The task queue could not be reached (ConnectionError).")

    monkeypatch.setattr(queue, "send", unreachable)
    dataset = make_dataset()
    with django_capture_on_commit_callbacks(execute=True):
        dataset = launch_build(
            name="offline", corpus=dataset.corpus, model_version=dataset.model_version, profile=dataset.profile
        )
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.QUEUED and "could not be reached" in dataset.error
    assert dataset.heartbeat is not None  # so the recovery sweeper sends it again later


# ---------------------------------------------------------------- exports


@pytest.fixture
def exported_to(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def test_an_export_claimed_again_after_a_killed_worker_writes_its_folder_from_scratch(built, exported_to):
    job = DatasetExport.objects.create(dataset=built, format="hf")
    first = export.claim_export(job.pk, worker="a")
    left = export.scratch_space(first)  # what the killed attempt left
    (left / "attempt-1").mkdir(parents=True)
    (left / "attempt-1" / "data-00000-of-00001.arrow").write_bytes(b"half")
    (left / ".dsm-export-x" / "cache").mkdir(parents=True)
    lose_worker(DatasetExport, job.pk)

    result = export.run_export(export.claim_export(job.pk, worker="b"))
    job.refresh_from_db()
    assert (job.status, job.attempts, job.rows, result.rows) == (JobStatus.DONE, 2, 2, 2)
    assert not left.exists()
    folder = exported_to / job.path
    assert result.path == folder and "data-00000-of-00001.arrow" in {p.name for p in folder.iterdir()}
    assert json.loads((folder / "manifest.json").read_text())["rows"] == 2


def test_a_late_export_worker_never_overwrites_the_folder_another_finished(built, exported_to):
    job = DatasetExport.objects.create(dataset=built, format="jsonl")
    late = export.claim_export(job.pk, worker="a")
    lose_worker(DatasetExport, job.pk)
    export.run_export(export.claim_export(job.pk, worker="b"))
    job.refresh_from_db()
    manifest = (exported_to / job.path / "manifest.json").read_text()
    assert export.run_export(late) is None
    export.fail_export(late, OSError("late"))
    job.refresh_from_db()
    assert (job.status, job.error) == (JobStatus.DONE, "")
    assert (exported_to / job.path / "manifest.json").read_text() == manifest
    assert not export.scratch_space(job).exists()


def test_a_cancelled_export_stops_after_a_batch_and_removes_its_files(built, exported_to, monkeypatch, researcher):
    monkeypatch.setattr(export.iter_batches, "__defaults__", (1,))  # one example a batch
    monkeypatch.setattr("webapp.lifecycle.heartbeat.Heartbeat", BeatOnReport)  # run_export beats by it
    job = export.claim_export(DatasetExport.objects.create(dataset=built, format="jsonl").pk)
    original = FORMATS["jsonl"]

    def cancel_after_the_first_batch(batches, sink, counter, describe):
        for step in original.steps(batches, sink, counter, describe):
            if counter.rows == 1:
                assert cancel_export(job, researcher) == JobStatus.CANCELLING
            yield step

    monkeypatch.setitem(FORMATS, "jsonl", replace(original, steps=cancel_after_the_first_batch))
    assert export.run_export(job) is None
    job.refresh_from_db()
    assert (job.status, job.path) == (JobStatus.CANCELLED, "")
    assert not export.scratch_space(job).exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, object_id=str(job.pk)).exists()


def test_a_cancel_stops_an_hf_export_too(built, exported_to, monkeypatch):
    monkeypatch.setattr(export.iter_batches, "__defaults__", (1,))
    monkeypatch.setattr("webapp.lifecycle.heartbeat.Heartbeat", BeatOnReport)  # run_export beats by it
    job = export.claim_export(DatasetExport.objects.create(dataset=built, format="hf").pk)
    cancel_export(job)  # running: the worker notices at its first batch
    assert export.run_export(job) is None
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and not export.scratch_space(job).exists()


def test_a_queued_export_is_cancelled_at_once(built):
    job = DatasetExport.objects.create(dataset=built, format="hf")
    assert cancel_export(job) == JobStatus.CANCELLED
    assert export.claim_export(job.pk) is None
