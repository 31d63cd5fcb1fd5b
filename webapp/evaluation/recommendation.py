"""The configuration the evaluations recommend, for the relevance job form.

`recommended_config(corpus, model_version)`: the RelevanceConfig dict that the LATEST finished
evaluation of that corpus and model version recommends (ml.localisation.recommend: the highest
AUC whose interval beats the random baseline's), or None when there is no finished evaluation or
the latest says that no configuration beats chance (the latest is the best knowledge: an older
recommendation it contradicts is not used).

The job form (webapp.pipeline, below this app) preselects it: the app registers it when it starts
(webapp.evaluation.apps: webapp.pipeline.launch_initial.suggest_with).
"""

from __future__ import annotations

from ml.relevance import RelevanceConfig
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus


def recommended_config(corpus, model_version) -> dict | None:
    latest = (
        RelevanceEvaluation.objects.filter(corpus=corpus, model_version=model_version, status=JobStatus.DONE)
        .order_by("-finished", "-pk")
        .only("result")
        .first()
    )
    if latest is None:
        return None
    choice = latest.recommendation.get("choice")
    if not choice:
        return None
    for config in latest.result.get("configs", []):
        if config.get("key") == choice.get("config_key"):
            return RelevanceConfig.from_dict({k: v for k, v in config.items() if k != "key"}).to_dict()
    return None
