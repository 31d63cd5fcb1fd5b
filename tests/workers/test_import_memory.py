"""A REAL import worker (queue "default") given the security review's zip: about 1 MB holding a
1 GiB brat .ann. Before IMPORT_MAX_FILE_BYTES the worker unpacked the member and read it whole
(285 MB -> 2.2 GB resident before it was refused); now both the notes import and the
annotation-tool import refuse the member by its declared size, before reading a byte of it, and
the worker's peak resident memory barely moves."""

import zipfile
from pathlib import Path

import pytest
from django.core.files import File

from tests.projects import default_project
from tests.workers.conftest import wait_for
from webapp.corpus import import_jobs
from webapp.corpus.models import ImportJob
from webapp.lifecycle.status import ENDED, JobStatus

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MEMBER_BYTES = 1024**3  # the .ann inside: 1 GiB of line ends, which deflate packs ~1000 to 1
# What the two refused imports may add to the worker's peak resident memory. The member read
# whole would add at least its 1 GiB (the reader held it twice, bytes then text); refused by its
# declared size it adds only what a small import allocates (a zip directory, a few queries).
MOST_ADDED_BYTES = 64 * 1024**2


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """gold.zip: n1.txt and a 1 GiB n1.ann, written 1 MiB at a time (this test stays small too)."""
    path = tmp_path_factory.mktemp("bomb") / "gold.zip"
    chunk = b"\n" * 1024**2
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr("gold/n1.txt", "Pt reports fever.")
        with zf.open("gold/n1.ann", "w", force_zip64=True) as member:
            for _ in range(MEMBER_BYTES // len(chunk)):
                member.write(chunk)
    assert path.stat().st_size < 2 * 1024**2
    return path


def peak_resident_bytes(pid: int) -> int:
    """The process's peak resident set (VmHWM, what getrusage's ru_maxrss reports once it has
    been waited for), read while it still runs: ru_maxrss of RUSAGE_CHILDREN would be the largest
    of every child this test session ever waited for."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def launch(bomb: Path, researcher, kind: str) -> ImportJob:
    with bomb.open("rb") as stored:
        uploaded = File(stored, name="gold.zip")
        if kind == "annotations":
            uploaded.import_options = {
                "format": "brat",
                "mapping": ["SYMPTOM=fever:present"],
                "layer": "",
                "feature": "",
                "dry_run": False,
            }
        return import_jobs.launch(
            uploaded,
            project=default_project(),
            kind=kind,
            corpus="ward",
            language="en" if kind == "notes" else "",
            update=False,
            actor=researcher,
        )


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the worker's peak memory from /proc")
def test_a_zip_holding_a_huge_member_is_refused_before_the_worker_reads_it(
    bomb, start_worker, researcher, settings, tmp_path
):
    settings.DATA_DIR = tmp_path
    worker = start_worker("default", DATA_DIR=tmp_path, IMPORT_MAX_FILE_BYTES=512 * 1024**2)  # the default
    before = peak_resident_bytes(worker.process.pid)
    jobs = [launch(bomb, researcher, kind) for kind in ("notes", "annotations")]
    for job in jobs:
        wait_for(lambda job=job: ImportJob.objects.get(pk=job.pk).status in ENDED, timeout=60, message="the import")
    after = peak_resident_bytes(worker.process.pid)

    for job in jobs:
        job.refresh_from_db()
        assert job.status == JobStatus.FAILED and job.problem_count == 1, (job.kind, job.error, job.problems)
        assert job.problem_lines == [
            "gold.zip: entry 'gold/n1.ann' has 1,073,741,824 bytes, more than the 536,870,912 one file "
            "may have (IMPORT_MAX_FILE_BYTES); it was not read"
        ]
    added = after - before
    print(f"worker peak resident memory: {before / 1024**2:.0f} MiB ready, {after / 1024**2:.0f} MiB after")
    assert added < MOST_ADDED_BYTES, f"the imports added {added / 1024**2:.0f} MiB to the worker's peak"
    assert worker.process.poll() is None  # alive: nothing killed it for its memory
