"""The estimate of an evaluation: prompts = annotated pairs x configurations, timed by the seconds
per prompt earlier evaluations of the same model measured."""

import pytest

from tests.webapp.evaluation.factories import annotated_pairs_count, make_annotated_corpus, spec
from tests.webapp.pipeline.factories import make_model_version
from webapp.evaluation import estimates
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import PeakProfile


def test_an_evaluation_is_pairs_times_configurations_timed_by_earlier_evaluations(db):
    corpus, _ = make_annotated_corpus()
    model = make_model_version()  # a name, no files: an estimate never loads the model
    pairs = annotated_pairs_count(corpus)
    two_configs = spec(corpus, model, methods=["grad_input", "attnlrp"])
    estimate = estimates.evaluation(two_configs)
    assert (estimate.amount, estimate.unit, estimate.seconds) == (2 * pairs, "prompts", None)
    assert estimates.evaluation(spec(corpus, model, max_pairs=1)).amount == 1
    profile = PeakProfile.objects.create(name="p", version=1)
    RelevanceEvaluation.objects.create(
        corpus=corpus,
        model_version=model,
        profile=profile,
        status=JobStatus.DONE,
        done=40,
        total=40,
        seconds_per_prompt=0.5,
    )
    assert estimates.evaluation(two_configs).seconds == pytest.approx(pairs * 2 * 0.5)
