"""Two projects: A (the default test project, where the fixtures' users are members) and B
("zebra", with one object of every kind the API serves), and tokens made the way the page makes
them (webapp.api.tokens.create)."""

import os

import pytest

from tests.webapp.datasets.fabricate import PEAKS, TEXT, add_map
from webapp.api import tokens
from webapp.corpus.models import Annotation, Corpus, ImportJob, Note, Task
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import ModelVersion, PeakProfile, RelevanceJob
from webapp.projects.models import Membership, Project
from webapp.projects.roles import Role
from webapp.training.models import LabeledSplit, TrainingRun

SECRET = "Zebra-ward-secret"


@pytest.fixture(params=["redis", "locmem"])
def cache_kind(request, settings):
    """The test runs with a shared cache (Redis: the rate limit counts there) and with a
    per-process one (LocMem, the embedded default: the token's row counts)."""
    if request.param == "redis":
        if not os.environ.get("REDIS_URL"):
            pytest.skip("REDIS_URL is not set")
        backend = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": os.environ["REDIS_URL"]}
        settings.CACHES = {"default": {**backend, "KEY_PREFIX": "dsm"}}
    else:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "t"}}
    return request.param


@pytest.fixture
def bearer():
    """bearer(secret) -> the Authorization header of a request with that token."""
    return lambda secret: {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def make_token():
    def make(user, projects, ceiling="roles", days=30):
        return tokens.create(user, name="t", projects=projects, ceiling=ceiling, days=days)

    return make


@pytest.fixture
def own(db, test_project):
    """Project A's corpus with two notes, a catalog task and a base model."""
    # de-identified: its data may leave (the gate's API tests: tests/webapp/api/test_gate.py)
    corpus = Corpus.objects.create(project=test_project, name="ward A", language="en", deidentified=True)
    notes = [Note.objects.create(corpus=corpus, external_id=f"a{i}", text=f"HR {100 + i} bpm.") for i in range(2)]
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"], origin="catalog")
    model = ModelVersion.objects.create(name="base", family="llama", path="/nowhere")
    return {"project": test_project, "corpus": corpus, "notes": notes, "task": task, "model": model}


@pytest.fixture
def mapped(own):
    """A note of project A with hand-made maps whose DSM build gives two examples."""
    note = Note.objects.create(corpus=own["corpus"], external_id="mapped", text=TEXT)
    tasks = {slug: Task.objects.create(slug=slug, description=slug, options=["y", "n"]) for slug in PEAKS}
    for slug, peaked in PEAKS.items():
        add_map(note, tasks[slug], own["model"], peaked)
    profile = PeakProfile.objects.create(name="sharp-api", kernel_size=1, sigma=1.0, lower=0.2, upper=0.4)
    return {**own, "note": note, "tasks": tasks, "profile": profile}


@pytest.fixture
def gold(own):
    """Both notes of project A labeled for the heart-rate task, with evidence."""
    for note, label in zip(own["notes"], ("y", "n")):
        Annotation.objects.create(note=note, task=own["task"], label=label, annotator_name="gold", evidence=[[0, 2]])
    return own


@pytest.fixture
def other(db, django_user_model):
    """Project B with one of everything, made by B's own researcher."""
    project = Project.objects.create(name=f"{SECRET} study", slug="zebra")
    owner = django_user_model.objects.create_user(username="zed")
    Membership.objects.create(project=project, user=owner, role=Role.RESEARCHER)
    corpus = Corpus.objects.create(project=project, name=f"{SECRET} corpus", language="en", deidentified=True)
    note = Note.objects.create(corpus=corpus, external_id="z1", text=f"{SECRET}: HR 130 bpm.")
    task = Task.objects.create(
        project=project, slug="zebra-task", description=f"{SECRET} task", options=["y", "n"], origin="app"
    )
    Annotation.objects.create(note=note, task=task, label="y", annotator_name="gold", evidence=[[0, 4]])
    model = ModelVersion.objects.create(name="shared base", family="llama", path="/nowhere")
    profile = PeakProfile.objects.create(name="zebra-profile")
    job = RelevanceJob.objects.create(corpus=corpus, model_version=model, created_by=owner)
    dataset = DatasetVersion.objects.create(
        name=f"{SECRET} dataset", corpus=corpus, model_version=model, profile=profile, status="done"
    )
    export = DatasetExport.objects.create(dataset=dataset, format="jsonl", status="done", created_by=owner)
    evaluation = RelevanceEvaluation.objects.create(corpus=corpus, model_version=model, profile=profile)
    split = LabeledSplit.objects.create(corpus=corpus, seed=0, test_ratio=0.5)
    run = TrainingRun.objects.create(name=f"{SECRET} run", kind="sft", model_version=model, split=split)
    ImportJob.objects.create(project=project, kind="notes", corpus_name=corpus.name, file_name="z.jsonl")
    return {
        "project": project,
        "owner": owner,
        "corpus_id": corpus.pk,
        "note_id": note.pk,
        "job_id": job.pk,
        "dataset_id": dataset.pk,
        "export_id": export.pk,
        "evaluation_id": evaluation.pk,
        "run_id": run.pk,
        "fmt": "jsonl",
    }
