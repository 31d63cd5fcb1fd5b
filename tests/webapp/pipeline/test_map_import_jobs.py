"""Maps computed elsewhere, uploaded in the app (webapp.pipeline.mapimport_jobs, kind "map import"):
the upload is stored and imported by its job; a refused file fails the job with each bad line and
its reason (never the note's text) and writes nothing; the same file again writes nothing; a cancel
at a progress report writes nothing and Resume imports from the stored file; the AttnLRP authors'
package's output (lxt: the prompt's input_ids and their relevance) is imported with its ids checked
against the product's prompt; another project's corpus, model version or import is refused."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from ml.relevance import IMPORTED, RelevanceConfig
from tests.projects import default_project
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import mapimport_jobs, modelcache
from webapp.pipeline.models import MapImport, MapImportJob, ModelVersion, RelevanceMap
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role

IMPORTED_CONFIG = RelevanceConfig(method=IMPORTED)
ROOT = Path(__file__).resolve().parents[3]


class FakeHeart:
    """What a Heartbeat would write with its next beat, and what the worker would be told."""

    def __init__(self, cancelling=False, lost=False):
        self.reports, self.cancelling, self.lost = [], cancelling, lost

    def report(self, **fields):
        self.reports.append(fields)


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    """A tiny random Llama and its tokenizer (no download)."""
    from tests.ml.conftest import build_model, build_tokenizer

    folder = tmp_path_factory.mktemp("tiny-llama-map-jobs")
    tokenizer = build_tokenizer("chatml")
    build_model("llama", len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def quiet_queue(settings, tmp_path, monkeypatch):
    settings.DATA_DIR = tmp_path
    monkeypatch.setattr(queue, "send", lambda task, *ids: len(ids))
    yield
    modelcache.clear()


@pytest.fixture
def ward(db, tiny_model_dir):
    corpus = make_corpus(4)
    tasks = make_tasks(2)
    return corpus, tasks, make_model_version(str(tiny_model_dir))


def spans_file(corpus, tasks, *, name="maps.jsonl") -> SimpleUploadedFile:
    lines = [
        {"note": note.external_id, "task": task.slug, "spans": [[0, 7, 0.5], [8, 10, -1.0 - i]]}
        for i, note in enumerate(corpus.notes.order_by("external_id"))
        for task in tasks
    ]
    return SimpleUploadedFile(name, "".join(json.dumps(line) + "\n" for line in lines).encode())


def launch(file, corpus, model_version, actor, **options) -> MapImportJob:
    return mapimport_jobs.launch(file, corpus=corpus, model_version=model_version, actor=actor, **options)


def run(job, heart=None) -> str | None:
    """What a worker does with the job's message (workers.runner: claim, then the kind's function)."""
    claimed = mapimport_jobs.claim(job.pk, worker="test")
    assert claimed is not None
    return mapimport_jobs.run_claimed(claimed, heart or FakeHeart())


def test_an_uploaded_file_is_imported_by_its_job_and_the_same_file_again_writes_nothing(ward, researcher, settings):
    corpus, tasks, model_version = ward
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher, source="captum IG")
    assert job.status == JobStatus.QUEUED and job.upload and (settings.DATA_DIR / "uploads" / job.upload).is_file()
    heart = FakeHeart()
    assert run(job, heart) == JobStatus.DONE
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.map_import.maps == 8 and job.lines_done == 8
    assert not job.imported_before and job.map_import.source == "captum IG"
    assert job.upload == "" and not any((settings.DATA_DIR / "uploads").iterdir())  # removed once done
    assert {"phase": MapImportJob.Phase.WRITING} in heart.reports
    assert RelevanceMap.objects.for_config(IMPORTED, "en", IMPORTED_CONFIG.key).count() == 8
    launched = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB, object_id=str(job.pk))
    assert launched.details["kind"] == "map import" and launched.details["file"] == "maps.jsonl"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.IMPORT_MAPS).count() == 1

    again = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    assert run(again) == JobStatus.DONE
    again.refresh_from_db()
    assert again.imported_before and again.map_import_id == job.map_import_id
    assert MapImport.objects.count() == 1 and RelevanceMap.objects.count() == 8  # nothing twice


def test_an_ended_import_is_announced_to_the_projects_webhooks_with_counts_only(ward, researcher):
    from webapp.integrations.events import unit_ended
    from webapp.integrations.models import Webhook, WebhookDelivery

    corpus, tasks, model_version = ward
    Webhook.objects.create(project=default_project(), url="https://hooks.example/x", secret="s", events=["map_import"])
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    assert unit_ended("map import", job) == 0  # not ended yet
    run(job)
    job.refresh_from_db()
    assert unit_ended("map import", job) == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.event == "map_import" and delivery.payload["status"] == "done"
    assert delivery.payload["counts"] == {"lines_done": 8, "problem_count": 0}
    assert delivery.payload["object"] == {"type": "pipeline.MapImportJob", "id": job.pk}


def test_a_refused_file_fails_its_job_with_each_line_and_reason_and_writes_nothing(ward, researcher, settings):
    corpus, tasks, model_version = ward
    first = corpus.notes.order_by("external_id").first()
    lines = [
        {"note": first.external_id, "task": tasks[0].slug, "spans": [[0, 7, 0.5]]},
        {"note": "no-such-note", "task": tasks[0].slug, "spans": [[0, 7, 0.5]]},
        {"note": first.external_id, "task": tasks[1].slug, "tokens": ["Patient", "x"], "scores": [0.1, 0.2]},
        {"note": first.external_id, "task": tasks[0].slug, "spans": [[0, 7, 0.5]]},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines) + "{not json\n"
    job = launch(SimpleUploadedFile("bad.jsonl", body.encode()), corpus, model_version, researcher)
    assert run(job) == JobStatus.FAILED
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.problem_count == 4
    assert job.error == "Nothing was imported: 4 problems."
    by_line = {line: reason for line, reason in job.problems}
    assert set(by_line) == {2, 3, 4, 5}
    assert by_line[2].startswith("unknown note")
    assert "tokens differ from the model's tokenizer at token" in by_line[3]
    assert by_line[4] == "the same note and task as line 1"
    text = json.dumps(job.problems) + job.error
    assert first.text[:20] not in text and "Patient" not in text  # lengths and positions, never the text
    assert not RelevanceMap.objects.exists() and not MapImport.objects.exists()
    assert job.upload == "" and not any((settings.DATA_DIR / "uploads").iterdir())  # it can never run again
    refused = AuditEvent.objects.filter(action=AuditEvent.Action.IMPORT_REFUSED).latest("pk")
    assert refused.details["problems"] == 4


def test_a_cancel_at_a_progress_report_writes_nothing_and_resume_imports_the_stored_file(ward, researcher, monkeypatch):
    corpus, tasks, model_version = ward
    monkeypatch.setattr(mapimport_jobs, "PROGRESS_EVERY", 1)  # a report (and a chance to stop) every line
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    claimed = mapimport_jobs.claim(job.pk, worker="test")
    assert mapimport_jobs.cancel(claimed, researcher) == JobStatus.CANCELLING
    assert mapimport_jobs.run_claimed(claimed, FakeHeart(cancelling=True)) == JobStatus.CANCELLED
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.upload  # kept, for Resume
    assert not RelevanceMap.objects.exists() and not MapImport.objects.exists()

    assert mapimport_jobs.resume(job, researcher) is True
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED
    assert run(job) == JobStatus.DONE
    job.refresh_from_db()
    assert job.attempts == 2 and job.map_import.maps == 8 and RelevanceMap.objects.count() == 8


def test_a_worker_that_lost_its_job_while_writing_rolls_its_maps_back(ward, researcher):
    """The job ends in the maps' own transaction: an attempt that no longer holds it writes nothing."""
    corpus, tasks, model_version = ward
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    claimed = mapimport_jobs.claim(job.pk, worker="first")
    MapImportJob.objects.filter(pk=job.pk).update(attempts=claimed.attempts + 1)  # taken over meanwhile
    assert mapimport_jobs.run_claimed(claimed, FakeHeart()) is None
    assert not RelevanceMap.objects.exists() and not MapImport.objects.exists()
    assert MapImportJob.objects.get(pk=job.pk).status == JobStatus.RUNNING


@pytest.mark.slow
def test_the_attnlrp_authors_package_output_is_imported_with_its_ids_checked(ward, researcher, tmp_path):
    """A file made as lxt's users make it (a child process patches the tiny model with lxt 2.1 and
    saves input_ids and relevance per pair, tests/webapp/pipeline/lxt_output.py) imports; the
    stored map is the note tokens' relevance, normalised as the product's (|r| / max |r|), within
    float16's rounding (stored as float16: relative error <= 2^-11 of values in [0, 1], so 1e-3)."""
    corpus, tasks, model_version = ward
    pairs = [
        {"note": n.external_id, "task": t.slug, "text": n.text, "description": t.description}
        for n in corpus.notes.order_by("external_id")[:2]
        for t in tasks
    ]
    (tmp_path / "pairs.json").write_text(json.dumps(pairs))
    out = tmp_path / "lxt.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.webapp.pipeline.lxt_output",
            model_version.path,
            str(tmp_path / "pairs.json"),
            str(out),
        ],
        cwd=ROOT,
        check=True,
        env={**__import__("os").environ, "OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    saved = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(saved) == 4 and len(saved[0]["input_ids"]) == 1  # a batch of one, as .tolist() gives it
    assert np.isfinite(saved[0]["relevance"][0]).all() and np.abs(saved[0]["relevance"][0]).max() > 0

    job = launch(SimpleUploadedFile("lxt.jsonl", out.read_bytes()), corpus, model_version, researcher, source="lxt 2.1")
    assert run(job) == JobStatus.DONE, MapImportJob.objects.get(pk=job.pk).problems
    job.refresh_from_db()
    assert job.map_import.maps == 4

    from ml.relevance.imported import note_tokens
    from webapp.pipeline.mapimport import tokenizer_of

    tokenizer = tokenizer_of(model_version)
    stored = {
        (external, slug): arrays
        for external, slug, arrays in RelevanceMap.objects.for_config(IMPORTED, "en", IMPORTED_CONFIG.key).with_arrays(
            "note__external_id", "task__slug"
        )
    }
    for pair, line in zip(pairs, saved):
        expected = note_tokens(
            tokenizer.tokenizer,
            pair["text"],
            pair["description"],
            IMPORTED_CONFIG,
            max_note_tokens=tokenizer.max_note_tokens,
            chat_template_kwargs=tokenizer.chat_template_kwargs,
        )
        relevance = np.asarray(line["relevance"][0])[expected.note_index]
        want = np.abs(relevance) / np.abs(relevance).max()
        offsets, scores = stored[(pair["note"], pair["task"])]
        np.testing.assert_allclose(np.asarray(scores, dtype=np.float64), want, atol=1e-3)
        assert np.array_equal(offsets, expected.offsets)

    # the same output with one id changed inside the note: refused, naming the position
    bad = saved[0]
    first_note = note_tokens(
        tokenizer.tokenizer,
        pairs[0]["text"],
        pairs[0]["description"],
        IMPORTED_CONFIG,
        max_note_tokens=tokenizer.max_note_tokens,
        chat_template_kwargs=tokenizer.chat_template_kwargs,
    )
    position = int(first_note.note_index[2])
    bad["input_ids"][0][position] = (bad["input_ids"][0][position] + 1) % 300
    bad["task"] = tasks[0].slug
    refused = launch(
        SimpleUploadedFile("lxt-bad.jsonl", (json.dumps(bad) + "\n").encode()),
        corpus,
        model_version,
        researcher,
        replace=True,
    )
    assert run(refused) == JobStatus.FAILED
    refused.refresh_from_db()
    ((line, reason),) = refused.problems
    assert line == 1 and f"input_ids differ from the product's prompt at position {position}" in reason


# ---------------------------------------------------------------- pages and access


@pytest.fixture
def elsewhere(db, django_user_model, tiny_model_dir):
    """Project B: its corpus, a model version trained in it, and an import of its own."""
    from webapp.corpus.models import Task

    project = Project.objects.create(name="Zebra study", slug="zebra")
    owner = django_user_model.objects.create_user(username="zed")
    Membership.objects.create(project=project, user=owner, role=Role.RESEARCHER)
    corpus = Corpus.objects.create(project=project, name="zebra ward", language="en")
    Note.objects.create(corpus=corpus, external_id="z1", text="Zebra note: HR 130 bpm.")
    from webapp.training.models import LabeledSplit, TrainingRun

    base = ModelVersion.objects.create(name="zebra base", family="llama", path=str(tiny_model_dir))
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name="zebra run", kind="sft", model_version=base, split=split)
    # a model trained in B is B's (a base model is shared by every project)
    model = ModelVersion.objects.create(name="zebra tuned", family="llama", path=str(tiny_model_dir))
    TrainingRun.objects.filter(pk=run.pk).update(produced_model=model)
    job = MapImportJob.objects.create(corpus=corpus, model_version=model, file_name="z.jsonl", created_by=owner)
    Task.objects.get_or_create(slug="heart-rate", defaults={"description": "heart rate", "options": ["y", "n"]})
    return {"project": project, "corpus": corpus, "model": model, "job": job}


def test_the_upload_page_refuses_another_projects_corpus_in_the_body_and_starts_nothing(
    ward, elsewhere, researcher, client
):
    corpus, tasks, model_version = ward
    client.force_login(researcher)
    page = client.get(reverse("pipeline:map_import_new"), {"corpus": corpus.pk})
    assert page.status_code == 200 and b"zebra ward" not in page.content
    for field, value in (("corpus", elsewhere["corpus"].pk), ("model_version", elsewhere["model"].pk)):
        body = {"corpus": corpus.pk, "model_version": model_version.pk, "template": "en", "explain": "next"}
        body[field] = value
        body["file"] = spans_file(corpus, tasks)
        answer = client.post(reverse("pipeline:map_import_new"), body)
        assert answer.status_code == 200 and b"Select a valid choice" in answer.content, field
    assert MapImportJob.objects.filter(corpus__project=default_project()).count() == 0


def test_another_projects_import_is_a_404_on_every_page_and_its_actions(elsewhere, researcher, client):
    client.force_login(researcher)
    job = elsewhere["job"]
    for name in ("map_import_detail",):
        assert client.get(reverse(f"pipeline:{name}", args=[job.pk])).status_code == 404
    for name in ("map_import_cancel", "map_import_resume"):
        assert client.post(reverse(f"pipeline:{name}", args=[job.pk])).status_code == 404
    assert MapImportJob.objects.get(pk=job.pk).status == JobStatus.QUEUED
    listing = client.get(reverse("pipeline:map_import_list"))
    assert listing.status_code == 200 and b"z.jsonl" not in listing.content


def test_a_clinician_may_read_an_import_but_not_upload(ward, clinician, researcher, client):
    corpus, tasks, model_version = ward
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    client.force_login(clinician)
    assert client.get(reverse("pipeline:map_import_detail", args=[job.pk])).status_code == 200
    assert client.get(reverse("pipeline:map_import_new")).status_code == 403
    assert client.post(reverse("pipeline:map_import_cancel", args=[job.pk])).status_code == 403


def test_the_api_uploads_reads_and_cancels_an_import_and_refuses_another_projects_ids(
    ward, elsewhere, researcher, client
):
    from webapp.api import tokens

    corpus, tasks, model_version = ward
    _, secret = tokens.create(researcher, name="t", projects=[default_project()], ceiling="roles", days=30)
    headers = {"Authorization": f"Bearer {secret}"}
    form = {"corpus": corpus.pk, "model_version": model_version.pk, "source": "captum IG"}
    answer = client.post("/api/map-imports", {**form, "file": spans_file(corpus, tasks)}, headers=headers)
    assert answer.status_code == 202, answer.content
    body = answer.json()
    assert body["status"] == "queued" and body["file_name"] == "maps.jsonl" and body["maps"] is None
    for field, value in (("corpus", elsewhere["corpus"].pk), ("model_version", elsewhere["model"].pk)):
        refused = client.post(
            "/api/map-imports", {**form, field: value, "file": spans_file(corpus, tasks)}, headers=headers
        )
        assert refused.status_code == 404, field
    assert client.get(f"/api/map-imports/{elsewhere['job'].pk}", headers=headers).status_code == 404
    assert client.post(f"/api/map-imports/{elsewhere['job'].pk}/cancel", headers=headers).status_code == 404
    listed = client.get("/api/map-imports", headers=headers).json()
    assert [row["id"] for row in listed["items"]] == [body["id"]]
    cancelled = client.post(f"/api/map-imports/{body['id']}/cancel", headers=headers)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert MapImportJob.objects.count() == 2


def test_every_reason_a_refused_file_stores_is_recognised_for_its_page_and_reads_as_stored_in_english(ward, researcher):
    """The page shows each stored reason in the reader's language (webapp.pipeline.map_problem_text):
    every reason the import writes for these bad lines is recognised, and in English the page reads
    exactly as stored (the message mirrors the worker's words)."""
    from webapp.pipeline.map_problem_text import _PATTERNS, shown

    corpus, tasks, model_version = ward
    first = corpus.notes.order_by("external_id").first()
    note, task = first.external_id, tasks[0].slug
    lines = [
        {"note": "nope", "task": task, "spans": [[0, 1, 1.0]]},
        {"note": note, "task": "no-such-task", "spans": [[0, 1, 1.0]]},
        {"note": note, "task": tasks[1].slug, "tokens": ["x"], "scores": [1.0]},
        {"note": note, "task": tasks[1].slug, "tokens": ["x", "y"], "scores": [1.0]},
        {"note": note, "task": tasks[1].slug, "input_ids": [1, 2], "relevance": [1.0]},
        {"note": note, "task": tasks[1].slug, "input_ids": [999999, 2], "relevance": [1.0, 2.0]},
        {"note": note, "task": task, "spans": [[0, 1, "x"]]},
        {"note": note, "task": task, "spans": [[0, len(first.text) + 5, 1.0]]},
        {"task": task, "spans": [[0, 1, 1.0]]},
        {"note": note, "spans": [[0, 1, 1.0]]},
        {"note": note, "task": task, "spans": [[0, 1, 1.0]], "tokens": ["a"], "scores": [1.0]},
        {"note": note, "task": task, "spans": [[0, 7, 1.0]]},
        {"note": note, "task": task, "spans": [[0, 7, 1.0]]},
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines) + "{oops\n"
    body = body.replace('"x"]]}', "NaN]]}", 0)
    body += json.dumps({"note": note, "task": tasks[1].slug, "spans": [[0, 7, 1.0]]}).replace("1.0]]", "NaN]]") + "\n"
    job = launch(SimpleUploadedFile("many.jsonl", body.encode()), corpus, model_version, researcher)
    assert run(job) == JobStatus.FAILED
    job.refresh_from_db()
    reasons = [reason for _, reason in job.problems]
    assert len(reasons) == job.problem_count == 14  # every line but the 12th
    for reason in reasons:
        assert any(pattern.fullmatch(reason) for pattern, _ in _PATTERNS), reason
        assert shown(reason) == reason
    assert shown("a reason written before this page knew it") == "a reason written before this page knew it"


def test_a_file_left_by_a_worker_lost_after_its_jobs_end_is_removed_at_the_next_launch(ward, researcher, settings):
    corpus, tasks, model_version = ward
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    assert run(job) == JobStatus.DONE
    job.refresh_from_db()
    kept = launch(spans_file(corpus, tasks, name="kept.jsonl"), corpus, model_version, researcher)
    claimed = mapimport_jobs.claim(kept.pk, worker="test")
    assert mapimport_jobs.run(claimed, FakeHeart()) == JobStatus.DONE  # ended, but its file not yet removed
    kept.refresh_from_db()
    assert kept.upload and (settings.DATA_DIR / "uploads" / kept.upload).is_file()
    later = launch(spans_file(corpus, tasks, name="later.jsonl"), corpus, model_version, researcher)
    kept.refresh_from_db()
    assert kept.upload == ""
    assert [p.name for p in (settings.DATA_DIR / "uploads").iterdir()] == [Path(later.upload).parent.name]


def test_erasing_the_corpus_erases_its_map_imports_and_their_stored_files(ward, researcher, admin_user, settings):
    from tests.webapp.erasure.helpers import erase_here
    from webapp.erasure.models import ErasureRequest

    corpus, tasks, model_version = ward
    done = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    run(done)
    cancelled = launch(spans_file(corpus, tasks, name="kept.jsonl"), corpus, model_version, researcher)
    mapimport_jobs.cancel(cancelled, researcher)
    cancelled.refresh_from_db()
    assert cancelled.status == JobStatus.CANCELLED and cancelled.upload  # kept for Resume: it names note ids
    erasure, _, _ = erase_here(default_project(), ErasureRequest.Scope.CORPUS, corpus=corpus, actor=admin_user)
    assert erasure.erased["pipeline.MapImportJob"] == 2 and erasure.erased["files: uploads"] == 1
    assert not MapImportJob.objects.exists() and not MapImport.objects.exists() and not RelevanceMap.objects.exists()
    assert not any((settings.DATA_DIR / "uploads").iterdir())


def test_a_model_whose_tokenizer_cannot_be_read_fails_the_job_but_keeps_the_file_for_resume(
    ward, researcher, tiny_model_dir
):
    from webapp.pipeline.map_problem_text import shown

    corpus, tasks, model_version = ward
    ModelVersion.objects.filter(pk=model_version.pk).update(path=str(tiny_model_dir / "not-here"))
    model_version.refresh_from_db()
    job = launch(spans_file(corpus, tasks), corpus, model_version, researcher)
    assert run(job) == JobStatus.FAILED
    job.refresh_from_db()
    assert job.error.startswith("cannot read model tiny-llama's tokenizer") and job.problem_count == 0
    assert job.upload and job.resumable and shown(job.error) == job.error
    modelcache.clear()
    ModelVersion.objects.filter(pk=model_version.pk).update(path=str(tiny_model_dir))  # the model comes back
    assert mapimport_jobs.resume(job, researcher) is True
    assert run(job) == JobStatus.DONE
    job.refresh_from_db()
    assert job.map_import.maps == 8 and job.upload == ""
