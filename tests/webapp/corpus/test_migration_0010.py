"""Migration 0010: a task that already had a guideline gets it as version 1; one without gets none."""

import pytest

from tests.webapp.migrating import migrate, migrate_to_latest

pytestmark = pytest.mark.slow  # migrating the schema back and forth takes tens of seconds


@pytest.mark.django_db(transaction=True)
def test_existing_guidelines_become_version_one():
    old = migrate([("corpus", "0009_task_authoring")])
    Task = old.get_model("corpus", "Task")
    Task.objects.create(slug="fever", description="fever", options=["yes", "no"], guideline="Above 38 °C.")
    Task.objects.create(slug="rate", description="rate", options=["yes", "no"])

    migrate_to_latest()
    from webapp.corpus.models import Task as Current
    from webapp.corpus.tasks import current_guideline

    fever, rate = Current.objects.get(slug="fever"), Current.objects.get(slug="rate")
    assert (fever.guideline, current_guideline(fever).version, current_guideline(fever).text) == (
        "Above 38 °C.",
        1,
        "Above 38 °C.",
    )
    assert current_guideline(rate) is None and not rate.guidelines.exists()
