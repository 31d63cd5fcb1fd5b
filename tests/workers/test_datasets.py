"""Dataset builds and exports through REAL workers (queue "default") on PostgreSQL + Redis,
including workers killed with SIGKILL in the middle of the work: the unit is shown stalled, a
worker started afterwards takes it over (its recovery sweeper queues it again within seconds:
workers run with WORK_STALL_SECONDS=4) and finishes it with exactly the expected rows."""

import pytest
from django.db import connection
from django.db.models import Count
from django.urls import reverse

from tests.projects import default_project
from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map, add_notes_with_maps
from tests.workers.conftest import wait_for
from webapp.corpus.models import Corpus, Note, Task
from webapp.datasets import export
from webapp.datasets.launch import launch_build, request_export
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.pipeline.models import JobStatus, ModelVersion, PeakProfile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

BULK_NOTES = 30_000  # 90,000 maps: a build of several seconds, long enough to be killed in its middle


@pytest.fixture
def inputs():
    # transactional tests flush the data-migration rows: make what the build needs here
    # de-identified: these are the workers' tests, the gate has its own (tests/webapp/datasets/test_gate.py)
    corpus = Corpus.objects.create(project=default_project(), name="ward-worker", language="en", deidentified=True)
    model = ModelVersion.objects.create(name="tiny-worker", family="llama", path="tiny-worker")
    profile = PeakProfile.objects.create(name="sharp-worker", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    tasks = {}
    for slug, peaked in PEAKS.items():
        tasks[slug] = Task.objects.create(
            slug=slug, description=f"{slug} described", options=["y", "n"], held_out=slug == "heldout"
        )
        add_map(note, tasks[slug], model, peaked)
    return {"corpus": corpus, "model_version": model, "profile": profile, "tasks": tasks}


def build_fields(inputs):
    return {k: inputs[k] for k in ("corpus", "model_version", "profile")}


def status_of(model, pk):
    return model.objects.filter(pk=pk).values_list("status", flat=True).get()


def test_a_worker_builds_the_dataset_then_exports_it(start_worker, inputs, settings, tmp_path):
    import datasets

    settings.DATA_DIR = tmp_path
    worker = start_worker("default", DATA_DIR=tmp_path)
    dataset = launch_build(name="via-worker", **build_fields(inputs))  # enqueued when the transaction commits
    wait_for(lambda: status_of(DatasetVersion, dataset.pk) in ("done", "failed"), timeout=90, message="the build")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE, dataset.error
    assert sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True)) == ["bp", "pacemaker"]
    assert dataset.stats["examples"] == 2 and dataset.maps_done == dataset.maps_total == 3
    assert dataset.attempts == 1 and dataset.worker.startswith("test-")

    job = request_export(dataset, "hf")
    wait_for(lambda: status_of(DatasetExport, job.pk) in ("done", "failed"), timeout=120, message="the export")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    loaded = datasets.load_from_disk(str(tmp_path / job.path))
    assert loaded.num_rows == 2 and sorted(loaded["label"]) == ["bp", "pacemaker"]
    assert "pacemaker" not in worker.log() and "alert" not in worker.log()  # no note text in the log


def test_a_failed_build_is_recorded_in_plain_words(start_worker, inputs):
    start_worker("default")
    dataset = launch_build(name="nothing", **{**build_fields(inputs), "template": "it"})
    wait_for(lambda: status_of(DatasetVersion, dataset.pk) in ("done", "failed"), timeout=90, message="the build")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED and "No relevance maps match" in dataset.error


def test_a_build_whose_worker_is_killed_shows_stalled_then_the_next_worker_finishes_it_without_duplicates(
    start_worker, inputs, settings, client, clinician
):
    settings.WORK_STALL_SECONDS = 4  # as the workers: this process judges "stalled" like them
    add_notes_with_maps(inputs["corpus"], inputs["tasks"], inputs["model_version"], BULK_NOTES)
    expected = 2 * (BULK_NOTES + 1)  # "pacemaker" and "bp" from every note
    first = start_worker("default")
    dataset = launch_build(name="killed-build", **build_fields(inputs))

    def well_under_way():
        row = DatasetVersion.objects.values("status", "maps_done", "maps_total").get(pk=dataset.pk)
        assert row["status"] not in ("done", "failed"), f"the build ended before the kill: {row}"
        return row["status"] == "running" and row["maps_done"] >= 6_000  # examples written in committed batches

    wait_for(well_under_way, timeout=90, interval=0.1, message="the build to be under way")
    first.kill()
    dataset.refresh_from_db()
    written = MaskedExample.objects.filter(dataset=dataset).count()
    assert dataset.status == JobStatus.RUNNING and 0 < written < expected and dataset.maps_done < dataset.maps_total

    # No worker is alive: nothing recovers it, and it says so instead of "running".
    wait_for(lambda: DatasetVersion.objects.get(pk=dataset.pk).is_stalled, timeout=30, message="the stalled status")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.RUNNING and dataset.status_text().startswith("stalled: worker lost at ")
    client.force_login(clinician)
    page = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert dataset.status_text() in page and "stopped answering" in page and "<progress" not in page

    second = start_worker("default")  # its sweeper queues the lost build again and a worker claims it
    wait_for(lambda: status_of(DatasetVersion, dataset.pk) in ("done", "failed"), timeout=180, message="the rebuild")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE, dataset.error
    assert dataset.attempts == 2 and dataset.worker != "" and dataset.maps_done == dataset.maps_total
    examples = MaskedExample.objects.filter(dataset=dataset)
    assert examples.count() == dataset.stats["examples"] == expected
    assert not examples.values("note_id", "label").annotate(n=Count("id")).filter(n__gt=1).exists()  # no duplicates
    assert dict(examples.values_list("label").annotate(n=Count("id"))) == {
        "pacemaker": expected // 2,
        "bp": expected // 2,
    }
    assert "pacemaker" not in second.log() and "alert" not in second.log()


def finished_dataset_with_examples(inputs, count: int) -> DatasetVersion:
    """A DONE dataset of `count` examples (2 a note) written by SQL: an export long enough to be killed."""
    notes = count // 2
    add_notes_with_maps(inputs["corpus"], inputs["tasks"], inputs["model_version"], notes, prefix="ex")
    dataset = DatasetVersion.objects.create(
        name="to-export", status=JobStatus.DONE, stats={"examples": count}, **build_fields(inputs)
    )
    heart, pacemaker = inputs["tasks"]["heart"].pk, inputs["tasks"]["pacemaker"].pk
    with connection.cursor() as cursor:
        for label, tasks, masked in (("pacemaker", [heart, pacemaker], "<mask>"), ("bp", [pacemaker], "<mask>")):
            start = TEXT.index(f" {label} ") + 1
            cursor.execute(
                f"INSERT INTO {MaskedExample._meta.db_table} "
                "(dataset_id, note_id, tasks, masked_text, label, char_start, char_end) "
                f"SELECT %s, id, %s::jsonb, overlay(text placing %s from %s for %s), %s, %s, %s "
                f"FROM {Note._meta.db_table} WHERE corpus_id = %s AND external_id LIKE 'ex%%' ORDER BY id",
                [
                    dataset.pk,
                    str(tasks),
                    masked,
                    start + 1,
                    len(label),
                    label,
                    start,
                    start + len(label),
                    inputs["corpus"].pk,
                ],
            )
    assert MaskedExample.objects.filter(dataset=dataset).count() == count
    return dataset


def test_an_export_whose_worker_is_killed_is_written_again_from_scratch_by_the_next_worker(
    start_worker, inputs, settings, tmp_path
):
    import datasets

    settings.DATA_DIR = tmp_path
    settings.WORK_STALL_SECONDS = 4
    count = 40_000  # 20 batches: a kill after the third lands well inside the export
    dataset = finished_dataset_with_examples(inputs, count)
    first = start_worker("default", DATA_DIR=tmp_path)
    job = request_export(dataset, "hf")

    def well_under_way():
        row = DatasetExport.objects.values("status", "rows").get(pk=job.pk)
        assert row["status"] not in ("done", "failed"), f"the export ended before the kill: {row}"
        return row["status"] == "running" and (row["rows"] or 0) >= 6_000

    wait_for(well_under_way, timeout=120, interval=0.1, message="the export to be under way")
    first.kill()
    job.refresh_from_db()
    scratch = export.scratch_space(job)
    assert job.rows < count and (scratch / "attempt-1").is_dir()  # the killed attempt's unfinished files

    start_worker("default", DATA_DIR=tmp_path)
    wait_for(lambda: status_of(DatasetExport, job.pk) in ("done", "failed"), timeout=180, message="the export")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    assert (job.attempts, job.rows) == (2, count)
    loaded = datasets.load_from_disk(str(tmp_path / job.path))
    ids = loaded["example_id"]
    assert loaded.num_rows == count and len(set(ids)) == count
    assert set(ids) == set(MaskedExample.objects.filter(dataset=dataset).values_list("pk", flat=True))
    assert not scratch.exists()  # the killed attempt's files were removed
