"""An import job run in-process (webapp.corpus.import_jobs.run) with a stand-in heartbeat: the phase
and the records done go to the heartbeat, the job's end commits with the notes, and a cancel or a
lost job rolls everything back."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F

from tests.projects import default_project
from tests.webapp.corpus.conftest import notes
from webapp.corpus import import_jobs
from webapp.corpus.models import Corpus, ImportJob, Note
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus


class FakeHeart:
    """Collects the reports a Heartbeat would write with its next beat."""

    def __init__(self, cancelling=False, lost=False):
        self.reports = []
        self.cancelling, self.lost = cancelling, lost

    def report(self, **fields):
        self.reports.append(fields)


@pytest.fixture(autouse=True)
def quiet_queue(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))


def launch(researcher, body: bytes, *, name="notes.jsonl", kind="notes", corpus="ward", language="en") -> ImportJob:
    job = import_jobs.launch(
        SimpleUploadedFile(name, body),
        project=default_project(),
        kind=kind,
        corpus=corpus,
        language=language,
        update=False,
        actor=researcher,
    )
    return units.claim(ImportJob, job.pk, "test-worker", select_related=("created_by",))


def jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_the_phase_and_records_go_to_the_heartbeat_then_the_counts_to_the_job(researcher):
    job = launch(researcher, jsonl(notes(4500)))
    heart = FakeHeart()
    assert import_jobs.run(job, heart) == JobStatus.DONE
    assert heart.reports == [
        {"phase": "validating", "records_done": 2000},
        {"phase": "validating", "records_done": 4000},
        {"phase": "validating", "records_done": 4500},
        {"phase": "writing", "records_done": 2000, "records_total": 4500},
        {"phase": "writing", "records_done": 4000, "records_total": 4500},
        {"phase": "writing", "records_done": 4500, "records_total": 4500},
    ]
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.phase == "" and job.created_count == 4500
    assert (job.records_done, job.records_total) == (4500, 4500)  # the last report never beats: the end says it
    assert Note.objects.filter(corpus__name="ward").count() == 4500


def test_annotations_report_their_progress_too(researcher, corpus, tasks):
    for i in range(3):
        Note.objects.create(corpus=corpus, external_id=f"n{i}", text="HR 130 bpm")
    rows = [{"note_id": f"n{i}", "task": "heart-rate", "label": "tachycardic", "evidence": [[0, 6]]} for i in range(3)]
    job = launch(researcher, jsonl(rows), kind="annotations", language="")
    heart = FakeHeart()
    assert import_jobs.run(job, heart) == JobStatus.DONE
    assert heart.reports == [
        {"phase": "validating", "records_done": 3},
        {"phase": "writing", "records_done": 3, "records_total": 3},
    ]


def test_a_cancel_asked_during_the_import_rolls_it_back(researcher):
    job = launch(researcher, jsonl(notes(10)))
    assert import_jobs.run(job, FakeHeart(cancelling=True)) == JobStatus.CANCELLED
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert not Corpus.objects.filter(name="ward").exists() and not Note.objects.exists()


def test_a_job_another_worker_took_over_writes_nothing(researcher):
    job = launch(researcher, jsonl(notes(10)))
    ImportJob.objects.filter(pk=job.pk).update(attempts=F("attempts") + 1)  # claimed again elsewhere
    assert import_jobs.run(job, FakeHeart()) is None
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.RUNNING  # the other attempt's to end
    assert not Corpus.objects.filter(name="ward").exists() and not Note.objects.exists()


def test_a_lost_heartbeat_stops_the_import_and_writes_nothing(researcher):
    job = launch(researcher, jsonl(notes(10)))
    assert import_jobs.run(job, FakeHeart(lost=True)) is None
    assert not Note.objects.exists()


def test_importing_again_from_the_stored_upload_changes_nothing(researcher):
    job = launch(researcher, jsonl(notes(5)))
    assert import_jobs.run(job, FakeHeart()) == JobStatus.DONE
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.QUEUED)  # as if the worker died before the end
    again = units.claim(ImportJob, job.pk, "other-worker", select_related=("created_by",))
    assert import_jobs.run(again, FakeHeart()) == JobStatus.DONE
    again.refresh_from_db()
    assert (again.created_count, again.unchanged_count) == (0, 5) and Note.objects.count() == 5


def test_leftover_uploads_of_ended_jobs_are_removed_at_the_next_launch(researcher, tmp_path):
    job = launch(researcher, jsonl(notes(1)))
    ImportJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)  # its worker died before removing it
    assert (tmp_path / "uploads" / job.upload).exists()
    launch(researcher, jsonl(notes(1)), corpus="other")
    assert not (tmp_path / "uploads" / job.upload).exists() and ImportJob.objects.get(pk=job.pk).upload == ""


class StopsWhileReading:
    """A heartbeat on which a cancel (or a takeover: `lost`) arrives while the file is read, once
    the import has looked `after` times: it looks before each document."""

    def __init__(self, after: int, why: str):
        self.reports, self.after, self.why, self.looked = [], after, why, 0

    def report(self, **fields):
        self.reports.append(fields)

    @property
    def cancelling(self) -> bool:
        return self._look("cancelling")

    @property
    def lost(self) -> bool:
        return self._look("lost")

    def _look(self, flag: str) -> bool:
        if flag != self.why:
            return False
        self.looked += 1
        return self.looked > self.after


@pytest.mark.parametrize("why, ends", [("cancelling", JobStatus.CANCELLED), ("lost", None)])
def test_a_cancel_or_a_takeover_stops_the_reading_between_documents(researcher, why, ends):
    job = launch(researcher, jsonl(notes(5000)))  # progress is reported every 2,000 notes
    heart = StopsWhileReading(after=10, why=why)
    assert import_jobs.run(job, heart) == ends
    assert heart.reports == []  # stopped before the first batch was done
    assert heart.looked <= 12  # at the 11th note, not after all 5,000
    assert not Corpus.objects.filter(name="ward").exists() and not Note.objects.exists()
