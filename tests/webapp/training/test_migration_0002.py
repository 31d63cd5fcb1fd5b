"""Migration 0002: runs queued before it get a heartbeat (when they count as sent), so the
recovery sweeper sends them again if their message was lost; other rows are left as they were."""

import datetime

import pytest
from django.utils import timezone

from tests.webapp.migrating import database_now, make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("training", "0001_initial")]
AFTER = [("training", "0002_work_unit")]


@pytest.mark.django_db(transaction=True)
def test_queued_runs_without_a_heartbeat_are_dated_and_the_others_are_kept():
    old = migrate(BEFORE)
    ModelVersion, Run = old.get_model("pipeline", "ModelVersion"), old.get_model("training", "TrainingRun")
    model = ModelVersion.objects.create(name="old-model", family="llama", path="old-model")
    corpus = make_corpus(old, name="old-ward", language="en")
    split = old.get_model("training", "LabeledSplit").objects.create(corpus=corpus)
    earlier = timezone.now() - datetime.timedelta(days=3)
    runs = {
        name: Run.objects.create(
            model_version=model, kind="sft", split=split, name=name, status=status, heartbeat=heartbeat
        ).pk
        for name, status, heartbeat in [
            ("lost", "queued", None),
            ("sent", "queued", earlier),
            ("running", "running", None),
            ("done", "done", None),
        ]
    }

    start = database_now()
    migrate(AFTER)
    migrate_to_latest()
    from webapp.training.models import TrainingRun

    heartbeats = dict(TrainingRun.objects.values_list("pk", "heartbeat"))
    assert start <= heartbeats[runs["lost"]] <= timezone.now()
    assert heartbeats[runs["sent"]] == earlier
    assert heartbeats[runs["running"]] is None and heartbeats[runs["done"]] is None
    assert TrainingRun.objects.count() == 4
