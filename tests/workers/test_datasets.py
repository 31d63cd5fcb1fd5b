"""A dataset build and an export through a REAL worker (queue "default") on PostgreSQL + Redis."""
import pytest

from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
from tests.workers.conftest import wait_for
from webapp.corpus.models import Corpus, Note, Task
from webapp.datasets.launch import launch_build, request_export
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.pipeline.models import JobStatus, ModelVersion, PeakProfile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def inputs():
    # transactional tests flush the data-migration rows: make what the build needs here
    corpus = Corpus.objects.create(name="ward-worker", language="en")
    model = ModelVersion.objects.create(name="tiny-worker", family="llama", path="tiny-worker")
    profile = PeakProfile.objects.create(name="sharp-worker", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=TEXT)
    for slug, peaked in PEAKS.items():
        task = Task.objects.create(slug=slug, description=f"{slug} described", options=["y", "n"],
                                   held_out=slug == "heldout")
        add_map(note, task, model, peaked)
    return {"corpus": corpus, "model_version": model, "profile": profile}


def test_a_worker_builds_the_dataset_then_exports_it(start_worker, inputs, settings, tmp_path):
    import datasets

    settings.DATA_DIR = tmp_path
    worker = start_worker("default", DATA_DIR=tmp_path)
    dataset = launch_build(name="via-worker", **inputs)  # enqueued when the transaction commits
    wait_for(lambda: DatasetVersion.objects.get(pk=dataset.pk).status in ("done", "failed"), timeout=90,
             message="the build")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.DONE, dataset.error
    assert sorted(MaskedExample.objects.filter(dataset=dataset).values_list("label", flat=True)) == ["bp", "pacemaker"]
    assert dataset.stats["examples"] == 2 and dataset.maps_done == dataset.maps_total == 3

    job = request_export(dataset, "hf")
    wait_for(lambda: DatasetExport.objects.get(pk=job.pk).status in ("done", "failed"), timeout=120,
             message="the export")
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.error
    loaded = datasets.load_from_disk(str(tmp_path / job.path))
    assert loaded.num_rows == 2 and sorted(loaded["label"]) == ["bp", "pacemaker"]
    assert "pacemaker" not in worker.log() and "alert" not in worker.log()  # no note text in the log


def test_a_failed_build_is_recorded_in_plain_words(start_worker, inputs):
    start_worker("default")
    dataset = launch_build(name="nothing", **{**inputs, "template": "it"})
    wait_for(lambda: DatasetVersion.objects.get(pk=dataset.pk).status in ("done", "failed"), timeout=90,
             message="the build")
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED and "No relevance maps match" in dataset.error
