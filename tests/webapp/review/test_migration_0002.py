"""Migration 0002: decisions, validation sets and samples stored before relevance configurations
existed get the key of their method and template's default configuration (the key pipeline 0004
gave their maps), so they still find their maps."""

import pytest

from ml.relevance import default_config_key
from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("review", "0001_initial")]
AFTER = [("review", "0002_config_key")]
CUSTOM = "Note: {note}. Finding: {task}"
PAIRS = [("attnlrp", "en"), ("grad_input", CUSTOM)]


@pytest.mark.django_db(transaction=True)
def test_review_rows_get_the_default_configuration_key_of_their_method_and_template():
    from webapp.corpus.models import text_hash

    old = migrate(BEFORE)
    get = old.get_model
    corpus = make_corpus(old, name="old-ward", language="en")
    text = "Heart rate 130 bpm."
    note = get("corpus", "Note").objects.create(
        corpus=corpus, external_id="n1", text=text, content_hash=text_hash(text)
    )
    task = get("corpus", "Task").objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = get("pipeline", "ModelVersion").objects.create(name="old-model", family="llama", path="old-model")
    reviewer = get("auth", "User").objects.create(username="clara")
    rows = {}
    for method, template in PAIRS:
        same = {"model_version": model, "method": method, "template": template}
        rows[method] = [
            (
                "PeakDecision",
                get("review", "PeakDecision")
                .objects.create(note=note, task=task, reviewer=reviewer, start=0, end=5, decision="accept", **same)
                .pk,
            ),
            (
                "ValidationSet",
                get("review", "ValidationSet")
                .objects.create(corpus=corpus, name=f"set-{method}", items=[], grid={}, **same)
                .pk,
            ),
            (
                "MapSample",
                get("review", "MapSample").objects.create(corpus=corpus, size=1, population=1, map_ids=[], **same).pk,
            ),
        ]

    migrate(AFTER)
    migrate_to_latest()
    from django.apps import apps

    for method, template in PAIRS:
        for name, pk in rows[method]:
            stored = apps.get_model("review", name).objects.get(pk=pk).config_key
            assert stored == default_config_key(method, template), (name, method)
    assert default_config_key(*PAIRS[0]) != default_config_key(*PAIRS[1])
