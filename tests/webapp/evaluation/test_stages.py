"""An evaluation's progress by stage (issue 38, item 6): the maps, then the faithfulness passes,
then the scoring, each with its own done/total and time left, never 100% while a stage still runs
(the page said "100% · about 0:00:00 left" for the minutes of faithfulness passes after the last
map); the launch estimate counts the passes, at the rate the last evaluation measured."""

import re
import time
from datetime import timedelta
from types import SimpleNamespace

import numpy as np
import pytest
from django.utils import timezone

from ml.faithfulness import PASSES_PER_PAIR
from tests.webapp.evaluation.factories import spec
from tests.webapp.evaluation.test_faithfulness_and_specificity import FirstWord, run
from tests.webapp.pipeline.factories import make_corpus, make_tasks
from webapp.evaluation import estimates, evaluations, running
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import PeakProfile

SECONDS_A_PAIR = 0.3  # the fake scorer's cost of a pair's passes


class FakeScorer:
    """ml.faithfulness.ModelScorer's face: the note's words as tokens (those FirstWord's maps are
    over), a value per row that drops with the tokens replaced, and some time spent."""

    def __init__(self, loaded, text, description, config, *, neutral_id, quantity):
        self.enc = SimpleNamespace(offsets=np.array([m.span() for m in re.finditer(r"\S+", text)], dtype=np.int32))

    def __call__(self, replace):
        time.sleep(SECONDS_A_PAIR)
        return -np.asarray(replace, dtype=np.float64).sum(1)


@pytest.fixture
def unannotated(db):
    return make_corpus(5, name="no-gold"), make_tasks(2)  # 10 pairs (5 notes x 2 tasks)


@pytest.fixture
def faithful_worker(monkeypatch):
    """The faithfulness passes without a model; snapshots of the evaluation (and of its page, when
    a client is given) taken as each batch of passes begins."""
    monkeypatch.setattr(running, "ModelScorer", FakeScorer)
    monkeypatch.setattr(running, "neutral_token_id", lambda tokenizer, how: 0)
    monkeypatch.setattr(running, "FAITH_BATCH", 4)  # whole notes: batches of 4, 4 and 2 pairs
    seen = SimpleNamespace(rows=[], pages=[], client=None)
    evaluate = running.faithfulness_evaluate

    def snapshot(inputs, fconfig):
        row = RelevanceEvaluation.objects.get(pk=seen.evaluation_id)
        seen.rows.append(row)
        if seen.client is not None:
            page = seen.client.get(f"/evaluations/{row.pk}/", HTTP_HX_REQUEST="true").content.decode()
            seen.pages.append(re.sub(r"\s+", " ", page))
        return evaluate(inputs, fconfig)

    monkeypatch.setattr(running, "faithfulness_evaluate", snapshot)
    return seen


def launch(corpus, tasks, model_version):
    asked = spec(corpus, model_version, pairs_from="notes", tasks=tasks, faithfulness=True)
    return asked, evaluations.launch(asked, enqueue=False)


def test_during_the_faithfulness_passes_the_evaluation_shows_that_stage_not_100_percent(
    unannotated, model_version, faithful_worker, client, researcher
):
    corpus, tasks = unannotated
    _, evaluation = launch(corpus, tasks, model_version)
    faithful_worker.evaluation_id = evaluation.pk
    client.force_login(researcher)
    faithful_worker.client = client
    outcome, evaluation = run(evaluation, FirstWord(), get_model=lambda: SimpleNamespace(tokenizer=None))
    assert outcome == "done", evaluation.error

    first, second, third = faithful_worker.rows
    for row in faithful_worker.rows:  # every map is stored, and the evaluation is still far from done
        assert row.done == row.total == 10 and row.status == JobStatus.RUNNING
        assert row.stage == RelevanceEvaluation.Stage.FAITHFULNESS and row.stage_total == 10
        assert row.percent < 100
    assert (first.stage_done, second.stage_done, third.stage_done) == (0, 4, 8)
    assert first.stage_text == "Faithfulness: 0 of 10 pairs" and first.eta_seconds is None  # not measured yet
    assert second.stage_text == "Faithfulness: 4 of 10 pairs" and second.percent == 40
    # the stage's own rate (4 pairs in at least 4 x 0.3 s): 6 pairs left, at least about 1.8 s, never 0 left
    assert second.eta_seconds >= 1
    assert third.eta_seconds > 0

    page = faithful_worker.pages[1]
    assert re.search(r"Faithfulness: 4 of 10 pairs</strong> · about \d+:\d\d:\d\d left", page)
    assert "0:00:00 left" not in page
    assert "(40%)" in page and "100%" not in page
    assert "10 of 10 prompts" in page  # the maps, done, beside the stage in hand

    # the end: scored, 100%
    assert evaluation.stage == RelevanceEvaluation.Stage.SCORING and evaluation.percent == 100
    assert evaluation.seconds_per_pass > 0


def test_the_launch_estimate_counts_the_passes_at_the_rate_the_last_evaluation_measured(
    unannotated, model_version, faithful_worker
):
    corpus, tasks = unannotated
    asked, evaluation = launch(corpus, tasks, model_version)
    before = estimates.evaluation(asked)
    assert (before.prompts, before.passes) == (10, 10 * PASSES_PER_PAIR) and before.seconds is None
    faithful_worker.evaluation_id = evaluation.pk
    outcome, evaluation = run(evaluation, FirstWord(), get_model=lambda: SimpleNamespace(tokenizer=None))
    assert outcome == "done", evaluation.error
    after = estimates.evaluation(asked)
    assert after.amount == 10 + 10 * PASSES_PER_PAIR
    assert after.seconds == pytest.approx(
        10 * evaluation.seconds_per_prompt + 10 * PASSES_PER_PAIR * evaluation.seconds_per_pass
    )
    # the passes are most of it: about SECONDS_A_PAIR a pair
    assert after.seconds >= 10 * SECONDS_A_PAIR * 0.8


@pytest.fixture
def running_evaluation(unannotated, model_version):
    corpus, _ = unannotated
    return RelevanceEvaluation.objects.create(
        corpus=corpus,
        model_version=model_version,
        profile=PeakProfile.objects.create(name="p", version=1),
        status=JobStatus.RUNNING,
        heartbeat=timezone.now(),
        started=timezone.now() - timedelta(minutes=5),
        done=40,
        total=40,
        seconds_per_prompt=0.5,
        seconds_per_pass=0.1,
    )


def test_a_stage_reports_its_own_progress_and_time_left(running_evaluation):
    evaluation = running_evaluation
    assert evaluation.stage == "" and evaluation.stage_text == "Maps: 40 of 40 prompts"
    assert evaluation.percent == 99  # every prompt done, but the evaluation has not ended
    evaluation.stage, evaluation.stage_done, evaluation.stage_total = "faithfulness", 12, 40
    assert evaluation.eta_seconds is None  # the stage's rate is not measured yet
    evaluation.stage_seconds = 60.0  # 12 pairs in 60 s: 28 left, 140 s
    assert evaluation.stage_text == "Faithfulness: 12 of 40 pairs" and evaluation.percent == 30
    assert evaluation.eta_seconds == pytest.approx(140)
    evaluation.heartbeat = timezone.now() - timedelta(hours=1)  # a lost worker: no live estimate
    assert evaluation.eta_seconds is None
    evaluation.status = JobStatus.DONE
    assert evaluation.percent == 100


def test_resume_starts_again_from_the_maps_not_from_the_stage_an_earlier_attempt_left(running_evaluation):
    evaluation = running_evaluation
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(
        status=JobStatus.FAILED, stage="faithfulness", stage_done=12, stage_total=40, stage_seconds=60.0
    )
    evaluations.resume(evaluation, enqueue=False)
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.stage, evaluation.stage_done) == (JobStatus.QUEUED, "", 0)
    assert evaluation.stage_text == "Maps: 40 of 40 prompts" and evaluation.percent == 99


def test_the_api_gives_the_stage_its_progress_and_time_left(running_evaluation):
    from webapp.evaluation.api import EvaluationOut

    evaluation = running_evaluation
    evaluation.stage, evaluation.stage_done, evaluation.stage_total, evaluation.stage_seconds = (
        "faithfulness",
        12,
        40,
        60.0,
    )
    body = EvaluationOut.from_orm(evaluation).dict()
    assert (body["stage"], body["stage_done"], body["stage_total"]) == ("faithfulness", 12, 40)
    assert body["stage_seconds_left"] == pytest.approx(140)
