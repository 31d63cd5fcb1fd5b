"""A configuration's label in the menus (selection.config_choices) is kept per process and
language: a key is the digest of its settings, so a known key's label never changes; an unknown
key is named by itself and not kept."""

import pytest
from django.utils import translation

from ml.relevance import RelevanceConfig, default_config_key
from webapp.review import selection


@pytest.mark.django_db
def test_a_keys_label_is_kept_per_language_and_an_unknown_key_is_not():
    key = default_config_key("attnlrp", "en")
    unknown = "attnlrp-span-000000000000"
    selection._labels.clear()
    with translation.override("en"):
        first = selection.config_choices([key, unknown], "attnlrp", "en")
        assert first == [(key, selection.config_label(RelevanceConfig(method="attnlrp", template="en").to_dict(), key)),
                         (unknown, unknown)]  # fmt: skip
        assert selection.config_choices([key, unknown], "attnlrp", "en") == first
    assert (key, "en") in selection._labels and (unknown, "en") not in selection._labels
    with translation.override("it"):
        italian = selection.config_choices([key], "attnlrp", "en")
    assert italian == [(key, "explain next (predefinita)")]
    assert (key, "it") in selection._labels
