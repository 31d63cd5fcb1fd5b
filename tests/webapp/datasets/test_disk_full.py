"""An export that fills its disk says so ("no space left on device") on its page and in the worker
log, on a real full filesystem: a 1 MiB tmpfs mounted as the data folder."""

import errno
import logging
import subprocess

import pytest
from django.urls import reverse

from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.lib.disk import disk_full
from webapp.pipeline.models import JobStatus

ROWS = 600  # of about 4 KB each: far more than the 1 MiB filesystem holds


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs, unmounted after the test; skipped where mounting is not allowed."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture
def large_dataset(built, note):
    dataset = DatasetVersion.objects.create(
        name="large",
        status=JobStatus.DONE,
        corpus=built.corpus,
        model_version=built.model_version,
        profile=built.profile,
        stats={"examples": ROWS},
    )
    MaskedExample.objects.bulk_create(
        MaskedExample(dataset=dataset, note=note, tasks=[], masked_text=f"{i} " + "x" * 4000, label="x")
        for i in range(ROWS)
    )
    return dataset


@pytest.mark.parametrize("fmt", ["hf", "jsonl"])
def test_a_full_disk_is_named_on_the_page_and_in_the_log(
    fmt, full_disk, large_dataset, settings, caplog, client, researcher
):
    from workers.datasets import export_dataset

    settings.DATA_DIR = full_disk
    job = DatasetExport.objects.create(dataset=large_dataset, format=fmt, created_by=researcher)
    with caplog.at_level(logging.ERROR, logger="workers.runner"):
        export_dataset(job.pk)  # the task itself, in this process
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "no space left on device" in job.error
    logged = [r.getMessage() for r in caplog.records if r.name == "workers.runner"]
    assert any("no space left on device" in line for line in logged), logged
    client.force_login(researcher)
    page = client.get(reverse("datasets:detail", args=[large_dataset.pk])).content.decode()
    assert "no space left on device" in page


def test_a_full_disk_is_found_behind_the_errors_that_wrap_it():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/data/exports/x")
        except OSError as exc:
            raise RuntimeError("An error occurred while generating the dataset") from exc
    except RuntimeError as wrapped:
        assert disk_full(wrapped) == "no space left on device"
    assert disk_full(OSError(errno.EACCES, "denied")) == ""
    assert disk_full(ValueError("x")) == ""
