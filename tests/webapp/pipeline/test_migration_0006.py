"""Migration 0006: maps stored as one blob each are split into their note's shared offsets and
their float16 scores, read back equal, and go back to one blob each when migrated back."""

import numpy as np
import pytest

from ml.relevance import RelevanceConfig, default_config_key
from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("pipeline", "0005_lifecycle")]
AFTER = [("pipeline", "0006_compact_maps")]
SPAN = RelevanceConfig(explain="span")


def _offsets(n, seed, longest=6):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest, n)
    starts = np.concatenate([[0], np.cumsum(lengths + rng.integers(0, 2, n))[:-1]])
    return np.stack([starts, starts + lengths], axis=1).astype(np.int32)


def _old_maps():
    """Two notes, three tasks, two model versions and two configurations in the old schema; the
    second model tokenizes the second note differently (wide offsets). {map id: (offsets, scores)}."""
    from ml.codec import encode_map
    from webapp.corpus.models import text_hash

    old = migrate(BEFORE)
    Corpus, Note, Task = (old.get_model("corpus", name) for name in ("Corpus", "Note", "Task"))
    ModelVersion, Map = (old.get_model("pipeline", name) for name in ("ModelVersion", "RelevanceMap"))
    corpus = make_corpus(old, name="old-ward", language="en")
    notes = [
        Note.objects.create(
            corpus=corpus, external_id=f"n{i}", text=f"{i}" * 5000, content_hash=text_hash(f"{i}" * 5000)
        )
        for i in range(2)
    ]
    tasks = [Task.objects.create(slug=f"t{i}", description=f"task {i}", options=["y", "n"]) for i in range(3)]
    models = [ModelVersion.objects.create(name=f"m{i}", family="llama", path=f"m{i}") for i in range(2)]
    rng, expected = np.random.default_rng(0), {}
    for n, note in enumerate(notes):
        for m, model in enumerate(models):
            offsets = _offsets(40, n) if (n, m) != (1, 1) else np.array([[0, 300], [400, 420]], np.int32)
            for task in tasks:
                for config in (RelevanceConfig(), SPAN):
                    scores = rng.random(len(offsets)).astype(np.float32)
                    made = Map.objects.create(
                        note=note,
                        task=task,
                        model_version=model,
                        method=config.method,
                        template=config.template,
                        config_key=config.key,
                        n_tokens=len(offsets),
                        data=encode_map(offsets, scores),
                    )
                    expected[made.pk] = (offsets, scores, config.key)
    return expected


@pytest.mark.django_db(transaction=True)
def test_old_maps_read_back_equal_with_one_offsets_row_per_note_and_tokenization():
    expected = _old_maps()
    migrate(AFTER)
    migrate_to_latest()
    from webapp.pipeline.models import MapConfiguration, NoteTokens, RelevanceMap

    assert NoteTokens.objects.count() == 3  # note 1 by both models, note 2 by each model apart
    assert MapConfiguration.objects.count() == 2
    rows = list(RelevanceMap.objects.with_arrays("pk", "config__config_key"))
    assert len(rows) == len(expected) == 24
    for pk, key, (offsets, scores) in rows:
        want_offsets, want_scores, want_key = expected[pk]
        assert key == want_key
        np.testing.assert_array_equal(offsets, want_offsets)
        np.testing.assert_array_equal(scores, want_scores.astype(np.float16).astype(np.float32))
    assert RelevanceMap.objects.for_config("attnlrp", "en").count() == 12
    assert RelevanceMap.objects.for_config("attnlrp", "en", SPAN.key).count() == 12
    assert set(MapConfiguration.objects.values_list("config_key", flat=True)) == {
        default_config_key("attnlrp", "en"),
        SPAN.key,
    }


@pytest.mark.django_db(transaction=True)
def test_migrating_back_makes_one_blob_a_map_again():
    from ml.codec import decode_map

    expected = _old_maps()
    migrate(AFTER)
    old = migrate(BEFORE)
    Map = old.get_model("pipeline", "RelevanceMap")
    for m in Map.objects.all():
        want_offsets, want_scores, want_key = expected[m.pk]
        offsets, scores = decode_map(m.data)
        assert (m.method, m.template, m.config_key) == ("attnlrp", "en", want_key)
        np.testing.assert_array_equal(offsets, want_offsets)
        np.testing.assert_array_equal(scores, want_scores.astype(np.float16).astype(np.float32))
    assert Map.objects.count() == 24
    migrate_to_latest()
