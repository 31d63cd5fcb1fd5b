"""manage.py evaluate_relevance: queue, wait, or run here with a tiny model."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.webapp.evaluation.factories import annotated_pairs_count
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline import modelcache
from webapp.pipeline.models import JobStatus, RelevanceMap


def run(*args):
    out = StringIO()
    call_command("evaluate_relevance", *args, stdout=out)
    return out.getvalue()


def test_it_queues_an_evaluation_of_every_method_and_variant(
    annotated, model_version, no_queue, django_capture_on_commit_callbacks
):
    corpus, tasks = annotated
    with django_capture_on_commit_callbacks(execute=True):
        out = run(
            "--corpus",
            "ward",
            "--model",
            model_version.name,
            "--methods",
            "attnlrp,grad_input",
            "--explain",
            "next,span,contrastive",
            "--max-pairs",
            "4",
            "--task",
            tasks[0].slug,
        )
    evaluation = RelevanceEvaluation.objects.get()
    assert f"Evaluation {evaluation.pk}: 4 pairs x 6 configurations = 24 prompts, queued." in out
    assert no_queue == [evaluation.pk] and evaluation.created_by is None
    assert [c["method"] for c in evaluation.configs] == ["grad_input"] * 3 + ["attnlrp"] * 3
    assert {t for _, t in evaluation.pairs} == {tasks[0].pk}
    assert [t.pk for t in evaluation.tasks.all()] == [tasks[0].pk]


def test_it_explains_a_bad_request(annotated, model_version):
    with pytest.raises(CommandError, match="no corpus named 'nope'"):
        run("--corpus", "nope")
    with pytest.raises(CommandError, match="Choose methods among"):
        run("--corpus", "ward", "--model", model_version.name, "--methods", "lime")
    with pytest.raises(CommandError, match="no task unknown-task"):
        run("--corpus", "ward", "--model", model_version.name, "--task", "unknown-task")
    with pytest.raises(CommandError, match="no peak profile named 'x'"):
        run("--corpus", "ward", "--model", model_version.name, "--profile", "x")
    assert not RelevanceEvaluation.objects.exists()


@pytest.fixture
def clear_model():
    yield
    modelcache.clear()


@pytest.mark.slow
def test_inline_computes_and_prints_the_result(annotated, model_version, clear_model):
    corpus, _ = annotated
    out = run(
        "--corpus",
        "ward",
        "--model",
        model_version.name,
        "--methods",
        "grad_input",
        "--explain",
        "next,span",
        "--inline",
    )
    evaluation = RelevanceEvaluation.objects.get()
    n = annotated_pairs_count(corpus)
    assert evaluation.status == JobStatus.DONE and evaluation.done == evaluation.total == 2 * n
    assert RelevanceMap.objects.count() == 2 * n
    printed = json.loads(out[out.index("{") : out.rindex("}") + 1])
    assert [g["explain"] for g in printed["groups"]] == ["next", "span"]
    assert set(printed["baselines"]) == {"uniform", "random"} and "Recommended:" in out
    # again: every map is reused, nothing is computed
    run("--corpus", "ward", "--model", model_version.name, "--methods", "grad_input", "--explain", "next", "--inline")
    second = RelevanceEvaluation.objects.latest("pk")
    assert second.status == JobStatus.DONE and second.done == n and second.seconds_per_prompt is None
    assert RelevanceMap.objects.count() == 2 * n
