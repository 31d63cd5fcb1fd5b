"""Migration 0002: evaluations queued before it get a heartbeat (when they count as sent), so
the recovery sweeper sends them again if their message was lost; other rows are left as they were."""

import datetime

import pytest
from django.utils import timezone

from tests.webapp.migrating import database_now, make_corpus, migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds

BEFORE = [("evaluation", "0001_initial")]
AFTER = [("evaluation", "0002_work_unit")]


@pytest.mark.django_db(transaction=True)
def test_queued_evaluations_without_a_heartbeat_are_dated_and_the_others_are_kept():
    old = migrate(BEFORE)
    Corpus, ModelVersion, Profile = (
        old.get_model(app, name)
        for app, name in [("corpus", "Corpus"), ("pipeline", "ModelVersion"), ("pipeline", "PeakProfile")]
    )
    Evaluation = old.get_model("evaluation", "RelevanceEvaluation")
    corpus = make_corpus(old, name="old-ward", language="en")
    model = ModelVersion.objects.create(name="old-model", family="llama", path="old-model")
    profile = Profile.objects.create(name="old-profile")
    earlier = timezone.now() - datetime.timedelta(days=3)
    rows = {
        status_name: Evaluation.objects.create(
            corpus=corpus, model_version=model, profile=profile, status=status, heartbeat=heartbeat
        ).pk
        for status_name, status, heartbeat in [
            ("lost", "queued", None),
            ("sent", "queued", earlier),
            ("running", "running", None),
            ("done", "done", None),
        ]
    }

    start = database_now()
    migrate(AFTER)
    migrate_to_latest()
    from webapp.evaluation.models import RelevanceEvaluation

    heartbeats = dict(RelevanceEvaluation.objects.values_list("pk", "heartbeat"))
    assert start <= heartbeats[rows["lost"]] <= timezone.now()
    assert heartbeats[rows["sent"]] == earlier
    assert heartbeats[rows["running"]] is None and heartbeats[rows["done"]] is None
    assert RelevanceEvaluation.objects.count() == 4
