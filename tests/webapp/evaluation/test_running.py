"""The worker side of an evaluation, in this process: maps computed and stored per configuration,
skipped when already stored (resume, reuse), cancel between batches, scoring and the result.

Fake relevance (word tokens, scores chosen by the test) checks the scores and the recommendation
exactly; the tiny random Llama checks the real compute path with gradient x input and attention
(AttnLRP would patch the pytest process for good: the worker test runs it in a worker)."""

import re
import time

import numpy as np
import pytest

from ml.relevance import RelevanceConfig, RelevanceResult
from tests.webapp.evaluation.factories import annotated_pairs_count, make_annotated_corpus, spec
from webapp.corpus.models import Annotation
from webapp.evaluation import evaluations, running
from webapp.evaluation.evaluations import EvaluationError
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline import modelcache
from webapp.pipeline.models import JobStatus, RelevanceMap


def word_tokens(text):
    return np.array([m.span() for m in re.finditer(r"\S+", text)], dtype=np.int32)


class FakeRelevance:
    """compute_relevance's signature; scores 1 on the evidence words (`good`) or seeded noise."""

    def __init__(self, evidence: dict[str, str], good=True):
        self.evidence, self.good, self.calls, self.prompts = evidence, good, 0, 0
        self.rng = np.random.default_rng(0)

    def __call__(self, loaded, notes, tasks, config):
        self.calls += 1
        self.prompts += len(notes)
        out = []
        for note, task in zip(notes, tasks):
            offsets = word_tokens(note)
            if self.good:
                start = note.find(self.evidence[task])
                end = start + len(self.evidence[task])
                scores = ((offsets[:, 0] < end) & (offsets[:, 1] > start)).astype(np.float32)
            else:
                scores = self.rng.random(len(offsets)).astype(np.float32)
            out.append(RelevanceResult(offsets=offsets, raw_scores=scores, scores=scores, target_token="x"))
        return out


@pytest.fixture
def larger(db):
    """18 annotated pairs: enough for a recommendation (ml.localisation.MIN_PAIRS)."""
    return make_annotated_corpus(n_notes=15, n_tasks=2)


def evidence_by_description(tasks):
    from tests.webapp.evaluation.factories import EVIDENCE

    return {task.description: EVIDENCE[task.slug] for task in tasks}


def run(evaluation, compute, get_model=lambda: None):
    claimed = evaluations.claim(evaluation.pk, worker="test")
    return running.execute(claimed, get_model, compute), RelevanceEvaluation.objects.get(pk=evaluation.pk)


def test_perfect_relevance_is_scored_one_and_recommended(larger, model_version):
    corpus, tasks = larger
    evaluation = evaluations.launch(
        spec(corpus, model_version, methods=["attention"], explains=["next"]), enqueue=False
    )
    outcome, evaluation = run(evaluation, FakeRelevance(evidence_by_description(tasks)))
    assert outcome == "done" and evaluation.status == JobStatus.DONE and evaluation.done == evaluation.total == 18
    (group,) = evaluation.result["groups"]
    assert group["auc"] == 1.0 and group["auc_ci"] == [1.0, 1.0] and group["n_pairs"] == 18
    # the paper's smoothing (kernel 3) widens each peak by a word or so: every gold token found, some others too
    baselines = evaluation.result["baselines"]
    assert group["peak_recall"] == 1.0 and group["peak_precision"] > 2 * baselines["uniform"]["peak_precision"]
    assert baselines["uniform"]["auc"] == 0.5 and baselines["uniform"]["peak_recall"] == 1.0
    assert baselines["random"]["auc_ci"][1] < 1.0 and baselines["random"]["n_pairs"] == 18
    key = RelevanceConfig(method="attention", explain="next", template="en").key
    assert evaluation.recommendation["choice"] == {
        "method": "attention",
        "explain": "next",
        "template": "en",
        "config_key": key,
    }
    assert evaluation.result["configs"] == [{"key": key, **RelevanceConfig(method="attention").to_dict()}]
    assert evaluation.result["missing"] == {key: 0} and evaluation.result["problems"] == []
    assert RelevanceMap.objects.filter(config__config_key=key, job=None).count() == 18


def test_noise_is_not_recommended_and_the_result_says_why(larger, model_version):
    corpus, tasks = larger
    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    _, evaluation = run(evaluation, FakeRelevance(evidence_by_description(tasks), good=False))
    assert evaluation.recommendation["choice"] is None
    assert "No configuration beats chance" in evaluation.recommendation["reason"]


def test_maps_already_stored_are_not_computed_again(larger, model_version):
    corpus, tasks = larger
    compute = FakeRelevance(evidence_by_description(tasks))
    first = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    run(first, compute)
    assert compute.prompts == 18
    before = {m.pk: bytes(m.data) for m in RelevanceMap.objects.all()}

    # a second evaluation of the same configuration reuses every map
    second = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    outcome, second = run(second, compute)
    assert outcome == "done" and compute.prompts == 18 and second.done == 18
    # one map lost: only it is computed again; the others are untouched
    lost = RelevanceMap.objects.order_by("pk").first().pk
    RelevanceMap.objects.filter(pk=lost).delete()
    third = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    run(third, compute)
    assert compute.prompts == 19
    after = {m.pk: bytes(m.data) for m in RelevanceMap.objects.all()}
    assert {pk: data for pk, data in after.items() if pk in before} == {k: v for k, v in before.items() if k != lost}
    assert RelevanceEvaluation.objects.get(pk=third.pk).result["groups"][0]["auc"] == 1.0


def test_cancel_stops_between_batches_and_resume_completes_without_recomputing(larger, model_version, monkeypatch):
    corpus, tasks = larger
    monkeypatch.setattr(running, "STORE_EVERY", 4)
    fake = FakeRelevance(evidence_by_description(tasks))
    evaluation = evaluations.launch(
        spec(corpus, model_version, methods=["attention"], explains=["next", "span"]), enqueue=False
    )

    def cancelling(*args):
        out = fake(*args)
        if fake.calls == 2:
            evaluations.cancel(RelevanceEvaluation.objects.get(pk=evaluation.pk))
        return out

    outcome, evaluation = run(evaluation, cancelling)
    assert outcome == "cancelled" and evaluation.status == JobStatus.CANCELLED
    assert RelevanceMap.objects.count() == 8 == fake.prompts and evaluation.done == 8 and evaluation.result == {}

    evaluations.resume(evaluation, enqueue=False)
    outcome, evaluation = run(evaluation, fake)
    assert outcome == "done" and evaluation.done == evaluation.total == 36
    assert fake.prompts == 36 and RelevanceMap.objects.count() == 36  # each prompt computed once
    assert [g["explain"] for g in evaluation.result["groups"]] == ["next", "span"]
    # span is compared with next pair by pair, although their configuration keys differ
    next_group, span_group = evaluation.result["groups"]
    assert next_group["auc_vs_next"] is None
    assert span_group["auc_vs_next"]["n"] == 18
    assert span_group["auc_vs_next"]["diff"] == pytest.approx(span_group["auc"] - next_group["auc"])


@pytest.mark.django_db(transaction=True)  # the heartbeat thread's own connection sees committed rows only
def test_a_batch_longer_than_the_stall_time_does_not_make_the_evaluation_look_lost(annotated, model_version, settings):
    from webapp.pipeline.models import PeakProfile

    settings.WORK_HEARTBEAT_SECONDS, settings.WORK_STALL_SECONDS = 0.2, 1
    corpus, tasks = annotated
    profile, _ = PeakProfile.objects.get_or_create(name="paper-default", version=1)  # flushed by transaction=True
    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention"], profile=profile), enqueue=False)
    fake, seen = FakeRelevance(evidence_by_description(tasks)), []

    def slow(*args):  # one batch, nothing reported for 3 x the stall time (AttnLRP on a CPU)
        for _ in range(6):
            time.sleep(0.5)
            seen.append(RelevanceEvaluation.objects.get(pk=evaluation.pk).status_text())
        return fake(*args)

    outcome, evaluation = run(evaluation, slow)
    assert outcome == "done" and evaluation.status == JobStatus.DONE
    assert seen == ["Running"] * 6


def test_a_pair_whose_prompt_fails_is_skipped_and_listed_by_id(larger, model_version):
    from ml.relevance import PromptError

    corpus, tasks = larger
    fake = FakeRelevance(evidence_by_description(tasks))
    bad_note = corpus.notes.order_by("pk").first()

    def picky(loaded, notes, descriptions, config):
        if bad_note.text in notes:
            raise PromptError("note produced no tokens before the task description")  # as ml.relevance does
        return fake(loaded, notes, descriptions, config)

    evaluation = evaluations.launch(spec(corpus, model_version, methods=["attention"]), enqueue=False)
    _, evaluation = run(evaluation, picky)
    bad_pairs = Annotation.objects.filter(note=bad_note).exclude(evidence=[]).count()
    assert bad_pairs and evaluation.status == JobStatus.DONE and evaluation.done == 18
    assert len(evaluation.result["problems"]) == bad_pairs
    assert f"Note {bad_note.pk} x task" in evaluation.result["problems"][0]
    assert "note produced no tokens" in evaluation.result["problems"][0]
    assert evaluation.result["groups"][0]["n_pairs"] == 18 - bad_pairs
    assert list(evaluation.result["missing"].values()) == [bad_pairs]


def test_gradient_x_input_in_a_process_patched_by_attnlrp_stops_with_advice(larger, model_version, monkeypatch):
    import ml.lrp

    corpus, tasks = larger
    monkeypatch.setattr(ml.lrp, "is_patched", lambda: True)
    evaluation = evaluations.launch(spec(corpus, model_version, methods=["grad_input"]), enqueue=False)
    with pytest.raises(EvaluationError, match="Restart the relevance worker, then press Resume"):
        run(evaluation, FakeRelevance(evidence_by_description(tasks)))


@pytest.fixture
def real_model():
    yield
    modelcache.clear()


@pytest.mark.slow
def test_a_tiny_model_computes_every_configuration_into_maps_and_a_result(annotated, model_version, real_model):
    corpus, _ = annotated
    evaluation = evaluations.launch(
        spec(corpus, model_version, methods=["grad_input", "attention"], explains=["next", "span"]), enqueue=False
    )
    outcome, evaluation = run(evaluation, None, lambda: modelcache.loaded_model(model_version))
    n = annotated_pairs_count(corpus)
    assert outcome == "done", evaluation.error
    assert evaluation.done == evaluation.total == 4 * n and evaluation.seconds_per_prompt > 0
    keys = [c["key"] for c in evaluation.result["configs"]]
    assert len(set(keys)) == 4
    for key in keys:
        maps = RelevanceMap.objects.filter(config__config_key=key)
        assert maps.count() == n
        for relevance_map in maps:
            offsets, scores = relevance_map.arrays()
            assert len(scores) == relevance_map.n_tokens > 0 and 0 <= scores.min() and scores.max() <= 1
    groups = evaluation.result["groups"]
    assert {(g["method"], g["explain"]) for g in groups} == {
        ("grad_input", "next"),
        ("grad_input", "span"),
        ("attention", "next"),
        ("attention", "span"),
    }
    for group in groups:
        assert group["n_pairs"] == n and 0 <= group["auc"] <= 1
        assert group["auc_ci"][0] <= group["auc"] <= group["auc_ci"][1]
    assert evaluation.recommendation["reason"]  # 8 pairs: too few to recommend, and it says so
