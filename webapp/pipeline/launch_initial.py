"""The relevance job form's `initial` for a GET request: the corpus and model version asked for
(?corpus=ID&model_version=ID, as the evaluation page links) or the form's defaults (the first
corpus, the default model), and the configuration suggested for them: method, explain variant,
normalisation, neutral text and template (a template that is not one of the form's choices goes to
its custom template), keeping only fields the form has and values its choices accept.

Which configuration to suggest is known above this app: an app registers, when it starts, a
function `(corpus, model_version) -> RelevanceConfig dict or None` with `suggest_with`; the
evaluation app registers the configuration its latest finished evaluation recommends
(webapp.evaluation.recommendation). The first suggestion given is taken; with none, the form keeps
its own defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from webapp.corpus.models import Corpus
from webapp.pipeline.models import ModelVersion

Suggest = Callable[[Corpus, ModelVersion], dict | None]
_SUGGESTERS: list[Suggest] = []


def suggest_with(suggest: Suggest) -> None:
    """Register a source of suggested configurations (once, from an AppConfig.ready)."""
    if suggest not in _SUGGESTERS:
        _SUGGESTERS.append(suggest)


def suggested_config(corpus, model_version) -> dict | None:
    return next((config for suggest in _SUGGESTERS if (config := suggest(corpus, model_version))), None)


def launch_initial(query: Mapping, form_class) -> dict:
    """Initial values for the relevance job form (see the module docstring)."""
    corpus = _by_id(Corpus.objects.order_by("name"), query.get("corpus"))
    model_version = _by_id(ModelVersion.objects.order_by("-is_default", "name"), query.get("model_version"))
    if corpus is None or model_version is None:
        return {}
    initial = {"corpus": corpus.pk, "model_version": model_version.pk}
    fields = form_class.base_fields
    config = suggested_config(corpus, model_version)
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
