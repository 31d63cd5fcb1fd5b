"""No note text nor metadata value reaches a log, on any failure path.

A marker word stands for what must never be logged (note text, a patient's name, a record
number). Each test puts it where a user puts data, makes one failure path fail, and searches
everything that was logged for it:
* in-process: every record at DEBUG on the root logger (pytest's caplog, which sees each record
  after the root handlers' filter, webapp.logs), rendered and as its attributes, and what the
  configured handlers printed;
* processes: the whole output of a real Celery worker (its log file, stdout and stderr) and of
  `manage.py` (stdout and stderr).
The database is made to refuse any row holding the marker (a CHECK constraint added for the
test), so its errors quote the row: "DETAIL:  Failing row contains (..., <marker> ...)".

The paths: the command-line imports, the Import page and its background task, a relevance chunk
(a missing model, a compute error quoting the note), a dataset build, an export, an unexpected
error in a view (the 500 page), and a task failing in a real worker process, including a compute
error that quotes a single word of the note.
"""

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse

from tests.projects import default_project
from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
from tests.webapp.pipeline.factories import make_model_version, make_tasks, spec
from tests.workers.conftest import wait_for
from webapp.corpus import import_jobs
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.lifecycle import queue
from webapp.lifecycle.status import ENDED, JobStatus
from webapp.pipeline import jobs, planning
from webapp.pipeline.models import PeakProfile, RelevanceChunk

ROOT = Path(__file__).resolve().parents[2]
MARKER = "QUOKKAMARKER"
NOTE = f"Paziente {MARKER} Rossi, 71 anni: FC 130 bpm, PA 90/60, afebbrile; portatore di pacemaker."
METADATA = {"patient": f"{MARKER} Rossi", "record_number": f"MRN-{MARKER}", "ward": "cardiologia"}
REFUSED_COLUMNS = {Note: "text", Annotation: "label", MaskedExample: "masked_text"}


def leaked(text: str) -> bool:
    return MARKER.lower() in text.lower()


@pytest.fixture
def logs(caplog):
    """Everything logged in this process during the test; `.assert_clean()` after the failure."""
    caplog.set_level(logging.DEBUG)
    printed = io.StringIO()
    handlers = [
        h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.StreamHandler) and not type(h).__module__.startswith("_pytest")
    ]
    previous = [h.setStream(printed) for h in handlers]

    class Logs:
        @staticmethod
        def text() -> str:
            return "\n".join([printed.getvalue(), caplog.text, *(repr(vars(r)) for r in caplog.records)])

        @staticmethod
        def assert_clean(logs_something=True) -> None:
            assert caplog.records or not logs_something, "the failure logged nothing: is it the path under test?"
            assert not leaked(Logs.text()), Logs.text()[-3000:]
            assert all(getattr(r, "row_content_withheld", False) for r in caplog.records), "a record missed the filter"

    yield Logs
    for handler, stream in zip(handlers, previous):
        handler.setStream(stream)


@pytest.fixture
def refused_by_the_database(db):
    """From now on, PostgreSQL refuses a new note, annotation or masked example holding the marker,
    with an error that quotes the whole row (metadata included)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's error texts")
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no ALTER TABLE while deferred checks are pending
        for model, column in REFUSED_COLUMNS.items():
            cursor.execute(
                f"ALTER TABLE {model._meta.db_table} ADD CONSTRAINT no_marker_{model._meta.db_table} "
                f"CHECK (strpos({column}, '{MARKER}') = 0) NOT VALID"
            )  # new rows only
    yield
    if not connection.in_atomic_block:  # a transactional test committed it: take it away again
        with connection.cursor() as cursor:
            for model in REFUSED_COLUMNS:
                cursor.execute(
                    f"ALTER TABLE {model._meta.db_table} DROP CONSTRAINT IF EXISTS no_marker_{model._meta.db_table}"
                )


def notes_file(*, nul_in_metadata=False) -> bytes:
    metadata = {**METADATA, "note": "a\u0000b"} if nul_in_metadata else METADATA
    rows = [
        {"id": "n1", "text": "FC 80 bpm.", "metadata": {"ward": "A"}},
        {"id": "n2", "text": NOTE, "metadata": metadata},
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def no_marker_in(*texts) -> None:
    for text in texts:
        assert not leaked(str(text)), text


# ---------------------------------------------------------------- the command line


def run_command(name, *args, **options) -> tuple[str, BaseException | None]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=err, **options)
    except CommandError as exc:
        return out.getvalue() + err.getvalue() + str(exc), exc
    return out.getvalue() + err.getvalue(), None


@pytest.mark.parametrize("nul_in_metadata", [False, True], ids=["refused by the database", "NUL in metadata"])
def test_import_notes_on_the_command_line(refused_by_the_database, logs, tmp_path, nul_in_metadata):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(notes_file(nul_in_metadata=nul_in_metadata))
    printed, refused = run_command("import_notes", str(path), corpus="ward", language="it", create=True)
    assert refused is not None and not Note.objects.exists()
    no_marker_in(printed)
    logs.assert_clean(logs_something=False)  # a refusal is said to the user, not logged


def test_import_annotations_on_the_command_line(refused_by_the_database, logs, tmp_path):
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="it")
    Note.objects.create(corpus=corpus, external_id="n1", text="FC 130 bpm")
    Task.objects.create(slug="heart-rate", description="heart rate", options=[MARKER, "normocardic"])
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"note_id": "n1", "task": "heart-rate", "label": MARKER, "evidence": [[0, 6]]}) + "\n")
    printed, refused = run_command("import_annotations", str(path), corpus="ward")
    assert refused is not None and not Annotation.objects.exists()
    no_marker_in(printed)
    logs.assert_clean(logs_something=False)


# ---------------------------------------------------------------- the Import page and its task


@pytest.mark.parametrize("nul_in_metadata", [False, True], ids=["refused by the database", "NUL in metadata"])
def test_an_upload_imported_in_the_background(
    refused_by_the_database,
    logs,
    client,
    researcher,
    settings,
    tmp_path,
    monkeypatch,
    django_capture_on_commit_callbacks,
    nul_in_metadata,
):
    from workers.imports import run_import

    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("corpus:upload"),
            {
                "kind": "notes",
                "corpus": "ward",
                "language": "it",
                "file": SimpleUploadedFile("notes.jsonl", notes_file(nul_in_metadata=nul_in_metadata)),
            },
        )
    assert response.status_code == 302
    job = ImportJob.objects.get()
    run_import.apply(args=[job.pk])  # in-process, through Celery's tracer (which logs what a task raises)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and not Note.objects.exists()
    no_marker_in(job.error, job.problems, client.get(reverse("corpus:import_detail", args=[job.pk])).content.decode())
    logs.assert_clean()


# ---------------------------------------------------------------- relevance chunks


@pytest.fixture
def chunk(db, researcher):
    """A queued chunk of a relevance job over notes that hold the marker."""
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="it")
    for i in range(2):
        Note.objects.create(corpus=corpus, external_id=f"n{i}", text=f"{NOTE} Letto {i}.", metadata=METADATA)
    job = jobs.launch(
        spec(corpus, make_model_version(path="/nonexistent/model"), make_tasks(1)), actor=researcher, enqueue=False
    )
    planning.plan_now(job)
    return RelevanceChunk.objects.filter(job=job).first()


def run_chunk_here(chunk) -> RelevanceChunk:
    from workers.relevance import run_chunk

    run_chunk.apply(args=[chunk.pk])
    chunk.refresh_from_db()
    assert chunk.status == RelevanceChunk.Status.FAILED
    return chunk


def test_a_relevance_chunk_whose_model_is_missing(chunk, logs, settings):
    # A worker that cannot load the model releases the chunk for another; with a limit of one
    # release and no other worker, this first release fails it (webapp.pipeline.chunks).
    settings.RELEVANCE_RELEASE_LIMIT = 1
    no_marker_in(run_chunk_here(chunk).error)
    logs.assert_clean()


@pytest.fixture
def compute_fails(monkeypatch):
    """compute_fails(message(texts)) -> relevance computing raises RuntimeError(message)."""
    from webapp.pipeline import chunks

    monkeypatch.setattr(chunks, "loaded_model", lambda *args: object())

    def failing(message):
        def compute(loaded, texts, descriptions, config, **options):  # options: e.g. share_prefix
            raise RuntimeError(message(texts))

        monkeypatch.setattr("ml.relevance.compute_relevance", compute)

    return failing


def test_a_relevance_chunk_whose_compute_error_quotes_the_note(chunk, logs, compute_fails):
    compute_fails(lambda texts: f"sequence too long: {texts[0]!r}")
    no_marker_in(run_chunk_here(chunk).error)
    logs.assert_clean()


def test_a_relevance_chunk_whose_compute_error_quotes_one_word_of_the_note(chunk, logs, compute_fails):
    compute_fails(lambda texts: f"unknown token {MARKER!r}")
    no_marker_in(run_chunk_here(chunk).error)
    logs.assert_clean()


# ---------------------------------------------------------------- datasets


@pytest.fixture
def dataset_inputs(db):
    """A note holding the marker, its hand-made maps (tests/webapp/datasets/fabricate.py)."""
    corpus = Corpus.objects.create(project=default_project(), name="ward", language="en")
    model = make_model_version(path="tiny-test", name="tiny-test")
    profile = PeakProfile.objects.create(name="sharp-test", version=1, kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    note = Note.objects.create(corpus=corpus, external_id="n1", text=f"{TEXT} {MARKER}", metadata=METADATA)
    for slug, peaked in PEAKS.items():
        task = Task.objects.create(
            slug=slug, description=f"{slug} described", options=["y", "n"], held_out=slug == "heldout"
        )
        add_map(note, task, model, peaked)
    return {"corpus": corpus, "model_version": model, "profile": profile}


def test_a_dataset_build_refused_by_the_database(dataset_inputs, refused_by_the_database, logs):
    from workers.datasets import build_dataset

    dataset = DatasetVersion.objects.create(name="ds", version=1, **dataset_inputs)
    build_dataset.apply(args=[dataset.pk])
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.FAILED and not MaskedExample.objects.exists()
    no_marker_in(dataset.error)
    logs.assert_clean()


def test_an_export_whose_writer_fails_quoting_an_example(dataset_inputs, logs, settings, tmp_path, monkeypatch):
    from webapp.datasets import building, rows
    from workers.datasets import export_dataset

    settings.DATA_DIR = tmp_path
    dataset = DatasetVersion.objects.create(name="ds", version=1, **dataset_inputs)
    building.build(building.claim(dataset.pk))
    assert MaskedExample.objects.filter(dataset=dataset, masked_text__contains=MARKER).exists()

    def fails(example):
        raise ValueError(f"cannot format the prompt of {example.masked_text!r}")

    monkeypatch.setattr(rows, "format_dsm_prompt", fails)
    job = DatasetExport.objects.create(dataset=dataset, format="jsonl")
    export_dataset.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    no_marker_in(job.error)
    logs.assert_clean()


# ---------------------------------------------------------------- an unexpected error in a view


def insert_the_note(*args, **kwargs):
    """A write that the database refuses, quoting the row."""
    with transaction.atomic():
        Note.objects.create(
            corpus=Corpus.objects.create(project=default_project(), name="ward", language="it"),
            external_id="n1",
            text=NOTE,
            metadata=METADATA,
        )


def quote_the_note(*args, **kwargs):
    raise ValueError(f"could not read the upload: {NOTE}")


@pytest.mark.parametrize("launch", [insert_the_note, quote_the_note], ids=["database", "library"])
def test_the_500_page(refused_by_the_database, logs, researcher, settings, tmp_path, monkeypatch, launch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(import_jobs, "launch", launch)
    client = Client(raise_request_exception=False)
    client.force_login(researcher)
    response = client.post(
        reverse("corpus:upload"),
        {
            "kind": "notes",
            "corpus": f"ward {MARKER}",
            "language": "it",
            "file": SimpleUploadedFile("notes.jsonl", notes_file()),
        },
    )
    assert response.status_code == 500
    no_marker_in(response.content.decode())
    logs.assert_clean()
    assert "ERROR django.request Internal Server Error: /corpora/import/" in logs.text()


# ---------------------------------------------------------------- processes: a real worker, manage.py


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_logs_no_note_text(refused_by_the_database, start_worker, researcher, settings, tmp_path):
    from workers.celery_app import app

    settings.DATA_DIR = tmp_path
    worker = start_worker("default", DATA_DIR=tmp_path)
    launched = [
        import_jobs.launch(
            SimpleUploadedFile(f"notes-{nul}.jsonl", notes_file(nul_in_metadata=nul)),
            project=default_project(),
            kind="notes",
            corpus=f"ward-{nul}",
            language="it",
            update=False,
            actor=researcher,
        )
        for nul in (False, True)
    ]
    app.send_task("workers.imports.run_import", args=[MARKER], queue="default")  # a task that raises, quoting it
    for job in launched:
        wait_for(lambda job=job: ImportJob.objects.get(pk=job.pk).status in ENDED, timeout=90, message="the import")
    wait_for(lambda: b"raised unexpected" in worker.log_path.read_bytes(), timeout=60, message="the task's failure")
    worker.stop()
    for job in ImportJob.objects.all():
        assert job.status == JobStatus.FAILED
        no_marker_in(job.error, job.problems)
    log = worker.log_path.read_text(errors="replace")
    assert "workers.imports.run_import" in log and "<ValueError: message withheld>" in log
    no_marker_in(log)
    assert not Note.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("nul_in_metadata", [False, True], ids=["refused by the database", "NUL in metadata"])
def test_manage_py_import_notes_prints_no_note_text(refused_by_the_database, worker_env, tmp_path, nul_in_metadata):
    path = tmp_path / "notes.jsonl"
    path.write_bytes(notes_file(nul_in_metadata=nul_in_metadata))
    result = subprocess.run(
        [sys.executable, "manage.py", "import_notes", str(path), "--corpus", "ward", "--language", "it", "--create"],
        cwd=ROOT,
        env={**worker_env, "LOG_LEVEL": "DEBUG"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and not Note.objects.exists()
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    no_marker_in(output)
