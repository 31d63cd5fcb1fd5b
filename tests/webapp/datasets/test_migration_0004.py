"""Migration 0004: builds and exports queued before it get a heartbeat (when they count as
sent), so the recovery sweeper sends them again if their message was lost; running ones get
none, so they look lost at once (their worker from before the upgrade is gone)."""

import pytest
from django.utils import timezone

from tests.webapp.migrating import database_now, make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("datasets", "0003_exports_progress_nullable_spans")]
AFTER = [("datasets", "0004_lifecycle")]
STATUSES = ["queued", "running", "done"]


@pytest.mark.django_db(transaction=True)
def test_queued_builds_and_exports_are_dated_and_running_ones_look_lost():
    old = migrate(BEFORE)
    Corpus, ModelVersion, Profile = (
        old.get_model(app, name)
        for app, name in [("corpus", "Corpus"), ("pipeline", "ModelVersion"), ("pipeline", "PeakProfile")]
    )
    Version, Export = old.get_model("datasets", "DatasetVersion"), old.get_model("datasets", "DatasetExport")
    corpus = make_corpus(old, name="old-ward", language="en")
    model = ModelVersion.objects.create(name="old-model", family="llama", path="old-model")
    profile = Profile.objects.create(name="old-profile")
    versions = {
        status: Version.objects.create(
            name=f"v-{status}", corpus=corpus, model_version=model, profile=profile, status=status
        ).pk
        for status in STATUSES
    }
    exports = {
        status: Export.objects.create(dataset_id=versions["done"], format="jsonl", status=status).pk
        for status in STATUSES
    }

    start = database_now()
    migrate(AFTER)
    migrate_to_latest()
    from webapp.datasets.models import DatasetExport, DatasetVersion

    for model, pks in [(DatasetVersion, versions), (DatasetExport, exports)]:
        heartbeats = dict(model.objects.values_list("pk", "heartbeat"))
        assert start <= heartbeats[pks["queued"]] <= timezone.now(), model.__name__
        assert heartbeats[pks["running"]] is None and heartbeats[pks["done"]] is None, model.__name__
        assert model.objects.count() == 3
