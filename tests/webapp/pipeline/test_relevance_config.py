"""A job stores its RelevanceConfig, every map the key of the configuration that made it, and
maps of two configurations never meet in one selection."""

import numpy as np
import pytest

from ml.relevance import RelevanceConfig, default_config_key
from tests.webapp.pipeline.factories import make_corpus, make_model_version, make_tasks, spec
from webapp.audit.models import AuditEvent
from webapp.pipeline import jobs
from webapp.pipeline.models import RelevanceJob, RelevanceMap

SPAN = RelevanceConfig(explain="span")
OFFSETS = np.array([[0, 7], [8, 10]], np.int32)


def add_map(note, task, model, config=None, scores=(0.2, 1.0)):
    config = config or RelevanceConfig()
    return RelevanceMap.objects.store_one(
        note, task, model, OFFSETS, scores, method=config.method, template=config.template, config_key=config.key
    )


# ---- the job's configuration ----


def test_a_job_stores_its_whole_configuration_and_its_key(launched, researcher):
    job = RelevanceJob.objects.get(pk=launched(explain="contrastive", normalise="clip").pk)
    expected = RelevanceConfig(explain="contrastive", normalise="clip")
    assert job.config == expected.to_dict() and job.config_key == expected.key
    assert (job.method, job.template, job.explain) == ("attnlrp", "en", "contrastive")
    assert job.relevance_config == expected and job.relevance_config.neutral == "the patient"
    event = AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB)
    assert event.details["explain"] == "contrastive" and event.details["config"] == expected.key


def test_a_default_job_has_the_reference_codes_configuration(launched):
    job = launched()
    assert job.relevance_config == RelevanceConfig()
    assert job.config_key == default_config_key("attnlrp", "en") == RelevanceConfig().key


def test_a_custom_template_equal_to_a_builtin_is_stored_by_name(launched):
    from ml.prompts import ES

    job = launched(template=ES, explain="span")
    assert job.template == "es" and job.config_key == RelevanceConfig(template="es", explain="span").key


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"explain": "everything"}, "explain", "Unknown explain 'everything'"),
        ({"normalise": "minmax"}, "normalise", "Unknown normalise 'minmax'"),
        ({"truncate": "middle"}, "truncate", "Unknown truncate 'middle'"),
        ({"explain": "next", "neutral": "the patient"}, "neutral", "applies only to explain='contrastive'"),
        (
            {"explain": "contrastive", "template": "Note: {note}. Finding: {task}"},
            "neutral",
            "needs a neutral description",
        ),
    ],
)
def test_a_bad_configuration_is_a_problem_of_its_field(corpus, tasks, model_version, changes, field, words):
    problems = spec(corpus, model_version, tasks, **changes).problems()
    assert words in problems[field]
    with pytest.raises(jobs.JobError, match=words.split("'")[0]):
        jobs.launch(spec(corpus, model_version, tasks, **changes))
    assert not RelevanceJob.objects.exists()


def test_a_job_created_without_a_configuration_gets_its_columns_default(corpus, model_version):
    job = RelevanceJob.objects.create(corpus=corpus, model_version=model_version, method="grad_input", template="it")
    assert job.config == RelevanceConfig(method="grad_input", template="it").to_dict()
    assert job.config_key == default_config_key("grad_input", "it")


def test_a_job_whose_columns_contradict_its_configuration_is_refused(launched):
    job = launched(explain="span")
    job.explain = "next"
    with pytest.raises(ValueError, match="differ from its config"):
        job.save()


# ---- maps record their configuration and never mix ----


@pytest.fixture
def two_configs(db):
    """One note x task, two models, with maps of the default configuration and of "span"."""
    corpus, (task,), base = make_corpus(1), make_tasks(1), make_model_version()
    dsm = make_model_version(name="dsm")
    note = corpus.notes.get()
    return {
        "note": note,
        "task": task,
        "base": base,
        "dsm": dsm,
        "corpus": corpus,
        "base_next": add_map(note, task, base, scores=(0.1, 1.0)),  # saved without a key: the default
        "base_span": add_map(note, task, base, SPAN, scores=(1.0, 0.5)),
        "dsm_span": add_map(note, task, dsm, SPAN, scores=(1.0, 0.7)),
    }


def test_a_map_saved_without_a_key_gets_the_default_configuration_of_its_method_and_template(two_configs):
    assert two_configs["base_next"].config_key == RelevanceConfig().key


def test_the_unique_key_allows_one_map_per_configuration(two_configs):
    from django.db import IntegrityError, transaction

    again = RelevanceMap.objects.get(pk=two_configs["base_span"].pk)
    again.pk = None
    with pytest.raises(IntegrityError), transaction.atomic():
        again.save()


def test_for_config_selects_one_configuration_only(two_configs):
    maps = RelevanceMap.objects
    assert set(maps.for_config("attnlrp", "en")) == {two_configs["base_next"]}
    assert set(maps.for_config("attnlrp", "en", SPAN.key)) == {two_configs["base_span"], two_configs["dsm_span"]}
    assert not maps.for_config("attnlrp", "it").exists()
    assert not maps.for_config("grad_input", "en", SPAN.key).exists()  # a key of another method matches nothing


def test_for_config_of_jobs_takes_their_configuration_and_refuses_two(two_configs):
    corpus, model = two_configs["corpus"], two_configs["base"]
    span_job = RelevanceJob.objects.create(corpus=corpus, model_version=model, explain="span", config=SPAN.to_dict())
    next_job = RelevanceJob.objects.create(corpus=corpus, model_version=model)
    assert set(RelevanceMap.objects.for_config("attnlrp", "en", jobs=[span_job.pk])) == {
        two_configs["base_span"],
        two_configs["dsm_span"],
    }
    assert set(RelevanceMap.objects.for_config("attnlrp", "en", jobs=[next_job])) == {two_configs["base_next"]}
    with pytest.raises(ValueError, match="different configurations"):
        RelevanceMap.objects.for_config("attnlrp", "en", jobs=[span_job.pk, next_job.pk])


def test_a_comparison_never_pairs_maps_of_two_configurations(two_configs):
    """The base vs DSM comparison of the default configuration: the DSM model has a "span" map
    only, which must not stand in for its missing default map."""
    from webapp.review.comparison import compare_note

    note, task, base, dsm = (two_configs[k] for k in ("note", "task", "base", "dsm"))
    out = compare_note(note, task, base, dsm, "attnlrp", "en")
    assert out.found_first and not out.found_second
    add_map(note, task, dsm, scores=(0.3, 1.0))
    assert compare_note(note, task, base, dsm, "attnlrp", "en").found_second


def test_a_dataset_selection_keeps_one_configuration(two_configs):
    """Never a mix of configurations: one named is kept alone, and with none named while maps of
    two exist the selection is refused, naming both (a default would silently pick one)."""
    from webapp.datasets.building import maps_matching
    from webapp.datasets.models import BuildError

    corpus, model = two_configs["corpus"], two_configs["base"]
    default, span = two_configs["base_next"], two_configs["base_span"]
    assert set(maps_matching(corpus.pk, model.pk, "attnlrp", "en", config_key=default.config_key)) == {default}
    assert set(maps_matching(corpus.pk, model.pk, "attnlrp", "en", config_key=span.config_key)) == {span}
    with pytest.raises(BuildError, match="2 relevance configurations") as refused:
        maps_matching(corpus.pk, model.pk, "attnlrp", "en")
    assert default.config_key in str(refused.value) and span.config_key in str(refused.value)


def test_the_job_choices_are_the_librarys_explain_variants_and_methods():
    from ml.relevance import EXPLAIN, METHODS

    assert tuple(RelevanceJob.Explain.values) == tuple(EXPLAIN)
    assert set(RelevanceJob.Method.values) == set(METHODS)
