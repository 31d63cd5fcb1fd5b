"""A toy kind of long work, to show what adding a kind costs: this module (its unit model and the
function that does one claimed unit's work) and one registry entry (tests/settings.py:
webapp.lifecycle.kinds.register). The one runner (workers.runner) claims, beats, retries, fails
and recovers it like every other kind (tests/workers/test_toy_kind.py).

A unit writes `steps` rows, one per step, each in its own transaction and only while this attempt
holds the unit; a step already written (by an attempt whose worker died) is not written again."""

import time

from django.db import OperationalError, models, transaction

from webapp.lifecycle import units
from webapp.lifecycle.models import WorkUnit


class ToyUnit(WorkUnit):
    steps = models.PositiveIntegerField(default=5)
    pause = models.FloatField(default=0.0)  # seconds after each step: time to kill its worker
    fail_at = models.IntegerField(null=True, blank=True)  # the step that raises an unexpected error
    transient_once = models.BooleanField(default=False)  # the first attempt meets a database problem


class ToyStep(models.Model):
    unit = models.ForeignKey(ToyUnit, on_delete=models.CASCADE, related_name="done_steps")
    index = models.PositiveIntegerField()
    attempt = models.PositiveIntegerField()


def work(unit: ToyUnit, heart) -> str | None:
    for index in range(unit.steps):
        if heart.cancelling:
            return "cancelled" if units.cancelled(unit) else None
        if heart.lost:
            return None
        if index == unit.fail_at:
            raise ValueError("a toy step that fails, quoting a note: " + "NOTE" + "TEXT")
        if unit.transient_once and unit.attempts == 1:
            raise OperationalError("the database went away (a toy's)")
        with transaction.atomic():
            if not units.owned(unit).select_for_update().exists():
                return None  # taken over: write nothing more
            if not unit.done_steps.filter(index=index).exists():
                ToyStep.objects.create(unit=unit, index=index, attempt=unit.attempts)
        heart.report()
        time.sleep(unit.pause)
    return "done" if units.finish(unit) else None
