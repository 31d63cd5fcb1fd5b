"""Migration 0004: jobs and maps stored before it get today's configuration and stay readable."""

import numpy as np
import pytest

from ml.relevance import RelevanceConfig, default_config_key
from tests.webapp.migrating import make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("pipeline", "0003_peakprofile_strict_trim")]
AFTER = [("pipeline", "0004_relevance_config")]
CUSTOM = "Note: {note}. Finding: {task}"


@pytest.mark.django_db(transaction=True)
def test_existing_jobs_and_maps_get_the_default_configuration_and_stay_readable():
    from ml.codec import encode_map
    from webapp.corpus.models import text_hash

    old = migrate(BEFORE)
    Corpus, Note, Task = (old.get_model("corpus", name) for name in ("Corpus", "Note", "Task"))
    ModelVersion, Job, Map = (
        old.get_model("pipeline", name) for name in ("ModelVersion", "RelevanceJob", "RelevanceMap")
    )
    corpus = make_corpus(old, name="old-ward", language="en")
    text = "Heart rate 130 bpm."
    note = Note.objects.create(corpus=corpus, external_id="n1", text=text, content_hash=text_hash(text))
    task = Task.objects.create(slug="heart-rate", description="heart rate", options=["y", "n"])
    model = ModelVersion.objects.create(name="old-model", family="llama", path="old-model")
    job = Job.objects.create(corpus=corpus, model_version=model, method="grad_input", template=CUSTOM)
    offsets, scores = np.array([[0, 5], [6, 10]], np.int32), np.array([1.0, 0.25], np.float32)
    kept = Map.objects.create(
        note=note,
        task=task,
        model_version=model,
        method="grad_input",
        template=CUSTOM,
        job=job,
        n_tokens=2,
        data=encode_map(offsets, scores),
    )
    other = Map.objects.create(
        note=note,
        task=task,
        model_version=model,
        method="attnlrp",
        template="en",
        n_tokens=2,
        data=encode_map(offsets, scores),
    )

    migrate(AFTER)
    migrate_to_latest()  # today's models read the rows below
    from webapp.pipeline.models import RelevanceJob, RelevanceMap

    job = RelevanceJob.objects.get(pk=job.pk)
    assert job.explain == "next"
    assert job.relevance_config == RelevanceConfig(method="grad_input", template=CUSTOM)  # abs, right, auto
    assert job.config_key == RelevanceConfig(method="grad_input", template=CUSTOM).key
    assert RelevanceMap.objects.get(pk=kept.pk).config_key == default_config_key("grad_input", CUSTOM)
    assert RelevanceMap.objects.get(pk=other.pk).config_key == RelevanceConfig().key
    found = RelevanceMap.objects.for_config("grad_input", CUSTOM).get()
    assert found.pk == kept.pk
    got_offsets, got_scores = found.arrays()
    np.testing.assert_array_equal(got_offsets, offsets)
    np.testing.assert_allclose(got_scores, scores)
    assert RelevanceMap.objects.for_config("attnlrp", "en").get().pk == other.pk
