"""Evaluations beyond gold: pairs drawn from any corpus (notes x every chosen task), task-specificity
in every result, faithfulness on request (its forward passes in the estimate and the result), and
the recommendation that says which measurements it weighed."""

import re

import numpy as np
import pytest

from ml.faithfulness import PASSES_PER_PAIR
from ml.relevance import RelevanceResult
from tests.webapp.evaluation.factories import make_annotated_corpus, spec
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks
from webapp.evaluation import estimates, evaluations, running
from webapp.evaluation.evaluations import EvaluationError
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.status import JobStatus
from webapp.pipeline import modelcache
from webapp.pipeline.models import PeakProfile


def run(evaluation, compute, get_model=lambda: None):
    claimed = evaluations.claim(evaluation.pk, worker="test")
    return running.execute(claimed, get_model, compute), RelevanceEvaluation.objects.get(pk=evaluation.pk)


class FirstWord:
    """compute_relevance's signature: every task's map peaks on the note's first word (like a map
    that peaks on the age whatever the task), or (`own`) on a word that depends on the task."""

    def __init__(self, own=False):
        self.own = own

    def __call__(self, loaded, notes, tasks, config):
        out = []
        for note, task in zip(notes, tasks):
            offsets = np.array([m.span() for m in re.finditer(r"\S+", note)], dtype=np.int32)
            scores = np.zeros(len(offsets), np.float32)
            scores[(3 + 5 * len(task)) % len(offsets) if self.own else 0] = 1.0
            out.append(RelevanceResult(offsets=offsets, raw_scores=scores, scores=scores, target_token="x"))
        return out


@pytest.fixture
def unannotated(db):
    """A corpus with no annotation at all, and two tasks."""
    return make_corpus(5, name="no-gold"), make_tasks(2)


def test_drawn_notes_are_asked_about_every_chosen_task_and_need_tasks(unannotated, model_version):
    corpus, tasks = unannotated
    evaluation = evaluations.launch(
        spec(corpus, model_version, pairs_from="notes", tasks=tasks, max_pairs=7, seed=3), enqueue=False
    )
    notes = {n for n, _ in evaluation.pairs}
    assert len(notes) == 3 and evaluation.pairs == sorted(evaluation.pairs)  # 7 // 2 notes x both tasks
    assert {tuple(p) for p in evaluation.pairs} == {(n, t.pk) for n in notes for t in tasks}
    assert evaluation.pairs_from == "notes"
    problems = spec(corpus, model_version, pairs_from="notes").problems()
    assert problems == {"tasks": "Choose the tasks to ask about each drawn note."}
    with pytest.raises(EvaluationError, match="no annotation with evidence"):
        evaluations.launch(spec(corpus, model_version, tasks=tasks), enqueue=False)


def test_faithfulness_refuses_the_contrastive_variant(annotated, model_version):
    corpus, _ = annotated
    problems = spec(corpus, model_version, explains=["contrastive"], faithfulness=True).problems()
    assert "Faithfulness explains one prompt" in problems["explains"]


def test_the_estimate_adds_the_forward_passes_of_a_pair_and_configuration(unannotated, db):
    corpus, tasks = unannotated
    model = make_model_version(name="estimated")
    asked = spec(corpus, model, pairs_from="notes", tasks=tasks, methods=["grad_input", "attention"], faithfulness=True)
    estimate = estimates.evaluation(asked)
    assert PASSES_PER_PAIR == 1 + 10 + 100  # the full row, the map's 10 rows, 10 random rankings' 10 each
    assert (estimate.prompts, estimate.passes) == (5 * 2 * 2, 5 * 2 * 2 * 111)
    assert estimate.size == "20 prompts + 2,220 forward passes for faithfulness (111 a pair and configuration)"
    assert estimate.seconds is None
    profile = PeakProfile.objects.create(name="p", version=1)
    RelevanceEvaluation.objects.create(
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=JobStatus.DONE,
        done=10,
        total=10,
        seconds_per_prompt=0.5,
        seconds_per_pass=0.05,
    )
    assert estimates.evaluation(asked).seconds == pytest.approx(20 * 0.5 + 2220 * 0.05)
    assert estimates.evaluation(spec(corpus, model, pairs_from="notes", tasks=tasks)).size == "10 prompts"


@pytest.mark.parametrize("own, same", [(False, True), (True, False)])
def test_specificity_counts_pairs_whose_peaks_are_every_tasks(unannotated, model_version, own, same):
    corpus, tasks = unannotated
    evaluation = evaluations.launch(spec(corpus, model_version, pairs_from="notes", tasks=tasks), enqueue=False)
    outcome, evaluation = run(evaluation, FirstWord(own=own))
    assert outcome == "done"
    (key,) = [c["key"] for c in evaluation.result["configs"]]
    result = evaluation.result["specificity"][key]
    assert result["notes"] == 5 and result["pairs"] == 10 and result["pairs_with_peaks"] == 10
    assert result["same_for_every_task"] == (10 if same else 0)
    assert result["tasks"]["heart rate"]["peaks"] == 5  # one peak a note
    recommended = evaluation.result["recommended"]
    assert recommended["choice"] is None and recommended["used"] == ["specificity"]
    assert "Task-specificity alone does not" in recommended["reason"]


@pytest.fixture
def real_model():
    yield
    modelcache.clear()


@pytest.mark.slow
def test_faithfulness_without_gold_on_a_tiny_model_costs_its_passes_a_pair(unannotated, model_version, real_model):
    import torch

    torch.set_num_threads(1)
    corpus, tasks = unannotated
    evaluation = evaluations.launch(
        spec(corpus, model_version, pairs_from="notes", tasks=tasks, faithfulness=True, max_pairs=6), enqueue=False
    )
    outcome, evaluation = run(evaluation, None, lambda: modelcache.loaded_model(model_version))
    assert outcome == "done", evaluation.error
    (key,) = [c["key"] for c in evaluation.result["configs"]]
    faithful = evaluation.result["faithfulness"][key]
    assert faithful["n_pairs"] == 6 and faithful["forward_passes"] == 6 * PASSES_PER_PAIR
    assert faithful["random"]["draws"] == 10 and "paired" in faithful["methods"]["grad_input"]
    assert faithful["verdict"]["comprehensiveness"]["reason"] == "no verdict: 6 pairs, fewer than 10"
    assert len(faithful["methods"]["grad_input"]["deletion"]) == 5 and evaluation.seconds_per_pass > 0
    assert faithful["verdict"] is not None and evaluation.result["groups"] == []
    recommended = evaluation.result["recommended"]
    assert "faithfulness" in recommended["used"] and "localisation" in recommended["not_used"]
    assert evaluation.result["specificity"][key]["notes"] == 3


def test_with_gold_the_recommendation_weighs_localisation_and_specificity(model_version, db):
    corpus, tasks = make_annotated_corpus(n_notes=15, n_tasks=2)
    from tests.webapp.evaluation.test_running import FakeRelevance, evidence_by_description

    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    outcome, evaluation = run(evaluation, FakeRelevance(evidence_by_description(tasks)))
    recommended = evaluation.result["recommended"]
    assert outcome == "done" and recommended["choice"]["method"] == "attention"
    assert recommended["used"][0] == "localisation" and "faithfulness" in recommended["not_used"]
    assert evaluation.result["localisation_recommended"]["choice"]["method"] == "attention"
