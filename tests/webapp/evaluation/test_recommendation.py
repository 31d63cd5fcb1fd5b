"""recommended_config and the relevance job form that preselects it."""

from datetime import timedelta

from django.utils import timezone

from ml.relevance import RelevanceConfig
from tests.webapp.evaluation.factories import finished, group
from webapp.evaluation.models import RelevanceEvaluation
from webapp.evaluation.recommendation import recommended_config
from webapp.pipeline.forms import LaunchForm
from webapp.pipeline.launch_initial import launch_initial
from webapp.pipeline.models import ModelVersion


def choice_of(g):
    return {k: g[k] for k in ("method", "explain", "template", "config_key")}


def test_the_latest_finished_evaluation_gives_the_recommended_configuration(annotated, model_version):
    corpus, _ = annotated
    assert recommended_config(corpus, model_version) is None
    old = group("attention", "next", 0.6, 0.56, 0.64)
    older = finished(corpus, model_version, [old], choice=choice_of(old))
    RelevanceEvaluation.objects.filter(pk=older.pk).update(finished=timezone.now() - timedelta(days=1))
    assert recommended_config(corpus, model_version) == RelevanceConfig(method="attention").to_dict()
    new = group("attnlrp", "span", 0.7, 0.66, 0.74)
    finished(corpus, model_version, [new], choice=choice_of(new))
    assert recommended_config(corpus, model_version) == RelevanceConfig(method="attnlrp", explain="span").to_dict()
    other = ModelVersion.objects.create(name="other", family="llama", path="x")
    assert recommended_config(corpus, other) is None


def test_a_latest_evaluation_where_nothing_beats_chance_recommends_nothing(annotated, model_version):
    corpus, _ = annotated
    old = group("attention", "next", 0.6, 0.56, 0.64)
    older = finished(corpus, model_version, [old], choice=choice_of(old))
    RelevanceEvaluation.objects.filter(pk=older.pk).update(finished=timezone.now() - timedelta(days=1))
    finished(corpus, model_version, [group("attnlrp", "next", 0.51, 0.47, 0.55)])
    assert recommended_config(corpus, model_version) is None


def test_an_evaluation_still_running_is_not_used(annotated, model_version):
    corpus, _ = annotated
    g = group("attnlrp", "span", 0.7, 0.66, 0.74)
    evaluation = finished(corpus, model_version, [g], choice=choice_of(g))
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(status="running")
    assert recommended_config(corpus, model_version) is None


def test_the_job_form_initial_takes_the_recommendation_for_the_corpus_and_model_asked_for(annotated, model_version):
    corpus, _ = annotated
    g = group("attention", "span", 0.7, 0.66, 0.74)
    finished(corpus, model_version, [g], choice=choice_of(g))
    initial = launch_initial({"corpus": str(corpus.pk), "model_version": str(model_version.pk)}, LaunchForm)
    assert initial["corpus"] == corpus.pk and initial["model_version"] == model_version.pk
    assert (initial["method"], initial["explain"], initial["template_choice"]) == ("attention", "span", "en")
    # no recommendation for the default model: only the defaults
    default = ModelVersion.objects.get(is_default=True)
    assert launch_initial({"corpus": str(corpus.pk)}, LaunchForm) == {"corpus": corpus.pk, "model_version": default.pk}
    assert launch_initial({"corpus": "nope"}, LaunchForm) == {}


def test_a_custom_recommended_template_goes_to_the_custom_field(annotated, model_version):
    corpus, _ = annotated
    text = "{note} In this patient we observe {task}"
    config = RelevanceConfig(method="attention", template=text)
    g = {**group("attention", "next", 0.7, 0.66, 0.74), "template": text, "config_key": config.key}
    evaluation = finished(corpus, model_version, [g], choice=choice_of(g))
    result = {**evaluation.result, "configs": [{"key": config.key, **config.to_dict()}]}
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(result=result)
    initial = launch_initial({"corpus": str(corpus.pk), "model_version": str(model_version.pk)}, LaunchForm)
    assert (initial["template_choice"], initial["custom_template"]) == ("custom", text)


def test_the_job_launch_page_preselects_the_recommended_configuration(client, researcher, annotated, model_version):
    corpus, _ = annotated
    g = group("grad_input", "contrastive", 0.7, 0.66, 0.74)
    config = RelevanceConfig(method="grad_input", explain="contrastive")
    g["config_key"] = config.key
    evaluation = finished(corpus, model_version, [g], choice=choice_of(g))
    RelevanceEvaluation.objects.filter(pk=evaluation.pk).update(
        result={**evaluation.result, "configs": [{"key": config.key, **config.to_dict()}]}
    )
    client.force_login(researcher)
    form = client.get(f"/jobs/new/?corpus={corpus.pk}&model_version={model_version.pk}").context["form"]
    assert form["method"].value() == "grad_input" and form["explain"].value() == "contrastive"
    assert form["neutral"].value() == "the patient" and form["model_version"].value() == model_version.pk
    plain = client.get("/jobs/new/").context["form"]
    assert plain["method"].value() == "attnlrp" and plain["explain"].value() == "next"
