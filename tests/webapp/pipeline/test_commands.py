"""register_model, launch_relevance_job and relevance_job."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from webapp.pipeline import jobs
from webapp.pipeline.models import JobStatus, ModelVersion, RelevanceJob


def run(*args):
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def model_folder(tmp_path):
    from transformers import LlamaConfig

    LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4).save_pretrained(
        tmp_path
    )
    return tmp_path


def test_register_model_records_a_local_folder_with_its_family(db, model_folder):
    assert "Registered model version mine (llama)" in run("register_model", "mine", str(model_folder))
    version = ModelVersion.objects.get(name="mine")
    assert (version.family, version.path, version.is_default) == ("llama", str(model_folder), False)


def test_register_model_can_make_the_new_model_the_default(db, model_folder):
    run("register_model", "mine", str(model_folder), "--default")
    assert list(ModelVersion.objects.filter(is_default=True).values_list("name", flat=True)) == ["mine"]


def test_register_model_refuses_a_folder_that_is_not_a_model(db, tmp_path):
    with pytest.raises(CommandError, match="no config.json"):
        run("register_model", "mine", str(tmp_path))
    assert not ModelVersion.objects.filter(name="mine").exists()


def test_launch_relevance_job_plans_a_sampled_job(corpus, tasks, model_version, monkeypatch):
    monkeypatch.setattr(jobs, "enqueue_chunks", lambda job_id: 0)
    out = run("launch_relevance_job", "ward", "--model", "tiny-llama", "--k", "2", "--limit", "3", "--chunk-size", "5")
    job = RelevanceJob.objects.get()
    assert f"Job {job.pk}: 6 prompts in 2 chunks" in out
    assert (job.sample_k, job.note_filter, job.created_by) == (2, {"limit": 3}, None)


def test_launch_relevance_job_accepts_the_prediction_explained(corpus, tasks, model_version, monkeypatch):
    from ml.relevance import RelevanceConfig

    monkeypatch.setattr(jobs, "enqueue_chunks", lambda job_id: 0)
    out = run(
        "launch_relevance_job",
        "ward",
        "--model",
        "tiny-llama",
        "--k",
        "2",
        "--explain",
        "contrastive",
        "--neutral",
        "a person",
        "--normalise",
        "clip",
        "--truncate",
        "left",
        "--dtype",
        "float32",
    )
    job = RelevanceJob.objects.get()
    expected = RelevanceConfig(
        explain="contrastive", neutral="a person", normalise="clip", truncate="left", dtype="float32"
    )
    assert job.relevance_config == expected and f"configuration {expected.key}" in out
    with pytest.raises(CommandError, match="applies only to explain='contrastive'"):
        run("launch_relevance_job", "ward", "--model", "tiny-llama", "--explain", "span", "--neutral", "a person")
    with pytest.raises(CommandError, match="invalid choice: 'middle'"):
        run("launch_relevance_job", "ward", "--explain", "middle")


def test_launch_relevance_job_explains_a_bad_request(corpus, tasks, model_version):
    with pytest.raises(CommandError, match="k must be between 1 and 4"):
        run("launch_relevance_job", "ward", "--model", "tiny-llama", "--k", "7")
    with pytest.raises(CommandError, match="no corpus named 'nope'"):
        run("launch_relevance_job", "nope")


def test_relevance_job_shows_and_cancels_a_job(launched, django_capture_on_commit_callbacks):
    job = launched()
    assert json.loads(run("relevance_job", "status", str(job.pk)))["total"] == 24
    with django_capture_on_commit_callbacks(execute=True):  # settle() runs after the commit
        assert json.loads(run("relevance_job", "cancel", str(job.pk)))["status"] == JobStatus.CANCELLING
    assert RelevanceJob.objects.get(pk=job.pk).status == JobStatus.CANCELLED
