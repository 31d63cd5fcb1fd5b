"""The configuration the evaluations recommend, for the relevance job form.

`recommended_config(corpus, model_version)`: the RelevanceConfig dict that the LATEST finished
evaluation of that corpus and model version recommends (ml.localisation.recommend: the highest
AUC whose interval beats the random baseline's), or None when there is no finished evaluation or
the latest says that no configuration beats chance (the latest is the best knowledge: an older
recommendation it contradicts is not used).

`launch_initial(query, form_class)`: the job form's `initial` for a GET request: the corpus and
model version asked for (?corpus=ID&model_version=ID, as the evaluation page links) or the form's
defaults (the first corpus, the default model), and the recommended method, explain variant,
normalisation, neutral text and template for them (a template that is not one of the form's
choices goes to its custom template), keeping only fields the form has and values its choices
accept.
"""

from __future__ import annotations

from collections.abc import Mapping

from ml.relevance import RelevanceConfig
from webapp.corpus.models import Corpus
from webapp.evaluation.models import RelevanceEvaluation
from webapp.pipeline.models import JobStatus, ModelVersion


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


def launch_initial(query: Mapping, form_class) -> dict:
    """Initial values for the relevance job form (see the module docstring)."""
    corpus = _by_id(Corpus.objects.order_by("name"), query.get("corpus"))
    model_version = _by_id(ModelVersion.objects.order_by("-is_default", "name"), query.get("model_version"))
    if corpus is None or model_version is None:
        return {}
    initial = {"corpus": corpus.pk, "model_version": model_version.pk}
    fields = form_class.base_fields
    config = recommended_config(corpus, model_version)
    if config is not None:
        initial.update(method=config["method"], explain=config["explain"], normalise=config["normalise"])
        if config["neutral"]:
            initial["neutral"] = config["neutral"]
        if "template_choice" in fields and not _accepts(fields["template_choice"], config["template"]):
            initial.update(template_choice="custom", custom_template=config["template"])
        else:
            initial["template_choice"] = config["template"]
    return {name: value for name, value in initial.items() if name in fields and _accepts(fields[name], value)}


def _by_id(queryset, value):
    """The row with this id, or (no id given) the first row; None for an id that is not there."""
    if value in (None, ""):
        return queryset.first()
    return queryset.filter(pk=int(value)).first() if str(value).isdigit() else None


def _accepts(field, value) -> bool:
    choices = getattr(field, "choices", None)
    if choices is None or hasattr(field, "queryset"):
        return True
    return any(str(key) == str(value) for key, _ in choices)
