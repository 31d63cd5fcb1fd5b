"""ml.relevance.RelevanceConfig: defaults, validation, canonical form, dict round trip, key."""

from __future__ import annotations

import dataclasses

import pytest

from ml.prompts import EN, PromptTemplate
from ml.relevance import EXPLAIN, ConfigError, RelevanceConfig, config_key, default_config_key

CUSTOM = "Clinical note:\n{note}\nFinding: {task}"


def test_the_defaults_are_the_reference_codes_behaviour():
    config = RelevanceConfig()
    assert config.to_dict() == {
        "method": "attnlrp",
        "explain": "next",
        "normalise": "abs",
        "template": "en",
        "truncate": "right",
        "max_note_tokens": None,
        "dtype": "auto",
        "neutral": "",
    }
    assert EXPLAIN == ("next", "max", "target", "span", "contrastive")


def test_it_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RelevanceConfig().explain = "span"


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"method": "shap"}, "method", "unknown method 'shap'; choose one of attnlrp, attention, grad_input"),
        (
            {"explain": "middle"},
            "explain",
            "unknown explain 'middle'; choose one of next, max, target, span, contrastive",
        ),
        ({"normalise": "minmax"}, "normalise", "unknown normalise 'minmax'; choose one of abs, clip"),
        ({"truncate": "middle"}, "truncate", "unknown truncate 'middle'"),
        ({"dtype": "int8"}, "dtype", "unknown dtype 'int8'; choose one of auto, float32, bfloat16, float16"),
        ({"template": "{task} before {note}"}, "template", "{task} must come after {note}"),
        ({"template": "no placeholders"}, "template", "exactly once"),
        ({"max_note_tokens": 0}, "max_note_tokens", "whole number >= 1"),
        ({"max_note_tokens": True}, "max_note_tokens", "whole number >= 1"),
        ({"max_note_tokens": "512"}, "max_note_tokens", "whole number >= 1"),
        ({"neutral": "the patient"}, "neutral", "applies only to explain='contrastive'"),
        ({"explain": "contrastive", "template": CUSTOM}, "neutral", "custom template needs a neutral description"),
        ({"explain": "contrastive", "neutral": 3}, "neutral", "must be text"),
    ],
)
def test_a_bad_setting_is_a_clear_error_naming_its_field(changes, field, words):
    with pytest.raises(ConfigError) as caught:
        RelevanceConfig(**changes)
    assert caught.value.field == field
    assert words in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_the_neutral_description_defaults_to_the_templates_language():
    neutral = {t: RelevanceConfig(explain="contrastive", template=t).neutral for t in ("en", "it", "es")}
    assert neutral == {"en": "the patient", "it": "il paziente", "es": "el paciente"}
    assert RelevanceConfig(explain="contrastive", template=CUSTOM, neutral=" the person ").neutral == "the person"
    assert RelevanceConfig(explain="contrastive", neutral="the patient") == RelevanceConfig(explain="contrastive")


def test_equal_computations_get_equal_configurations_and_keys():
    assert RelevanceConfig(template=EN) == RelevanceConfig(template="en")
    assert RelevanceConfig(template=PromptTemplate(EN)).template == "en"
    assert RelevanceConfig(template=PromptTemplate(CUSTOM)).template == CUSTOM
    assert (
        RelevanceConfig(explain="contrastive", template="it").key
        == RelevanceConfig(explain="contrastive", template="it", neutral="il paziente").key
    )


def test_to_dict_and_from_dict_round_trip():
    config = RelevanceConfig(
        method="grad_input",
        explain="contrastive",
        normalise="clip",
        template=CUSTOM,
        truncate="left",
        max_note_tokens=300,
        dtype="bfloat16",
        neutral="the person",
    )
    assert RelevanceConfig.from_dict(config.to_dict()) == config
    assert RelevanceConfig.from_dict({"explain": "span"}) == RelevanceConfig(explain="span")
    with pytest.raises(ConfigError, match="unknown relevance setting.* batch_size, colour"):
        RelevanceConfig.from_dict({"explain": "span", "colour": 1, "batch_size": 4})
    with pytest.raises(ConfigError, match="must be an object"):
        RelevanceConfig.from_dict(["next"])


def test_the_key_is_short_readable_and_stable():
    # Stored maps are keyed by these strings: changing the hashing orphans every stored map.
    assert RelevanceConfig().key == "attnlrp-next-4b92cd8a51"
    assert RelevanceConfig(explain="contrastive").key == "attnlrp-contrastive-e698ab6822"
    assert len(RelevanceConfig(template=CUSTOM).key) <= 64


def test_every_setting_changes_the_key():
    base = RelevanceConfig()
    variants = [
        RelevanceConfig(method="grad_input"),
        RelevanceConfig(explain="target"),
        RelevanceConfig(normalise="clip"),
        RelevanceConfig(template="it"),
        RelevanceConfig(truncate="left"),
        RelevanceConfig(max_note_tokens=512),
        RelevanceConfig(dtype="float32"),
        RelevanceConfig(explain="contrastive"),
        RelevanceConfig(explain="contrastive", neutral="a person"),
    ]
    keys = {base.key} | {v.key for v in variants}
    assert len(keys) == len(variants) + 1


def test_the_default_key_of_a_method_and_template_is_its_default_configurations():
    assert default_config_key("attnlrp", "en") == RelevanceConfig().key
    assert default_config_key("attention", CUSTOM) == RelevanceConfig(method="attention", template=CUSTOM).key
    assert config_key(RelevanceConfig(explain="span").to_dict()) == RelevanceConfig(explain="span").key
