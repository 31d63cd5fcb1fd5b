"""A kind added with one module and one registry entry (tests/toykind, tests/settings.py) runs
through the one runner in real workers: claimed, beaten, retried after a temporary problem, failed
in plain words, and recovered after its worker is killed mid-unit, with no step lost or written
twice."""

import pytest
from django.db import transaction

from tests.toykind.models import ToyStep, ToyUnit
from tests.workers.conftest import wait_for
from webapp.lifecycle import kinds, queue
from webapp.lifecycle.status import JobStatus

pytestmark = pytest.mark.django_db(transaction=True)

TOY = kinds.by_name("toy")


def send(**fields) -> ToyUnit:
    with transaction.atomic():
        unit = ToyUnit.objects.create(**fields)
        queue.send_on_commit(TOY.task, unit.pk)
    return unit


def status(unit) -> str:
    return ToyUnit.objects.values_list("status", flat=True).get(pk=unit.pk)


def steps(unit) -> list[int]:
    return sorted(ToyStep.objects.filter(unit=unit).values_list("index", flat=True))


def test_the_toy_kind_is_registered_routed_and_swept_like_every_kind():
    from workers.celery_app import app

    app.loader.import_default_modules()
    assert TOY.task == "workers.runner.toy" and TOY.module == "workers.runner"
    assert app.tasks[TOY.task].max_retries == TOY.retry.max_retries
    assert queue.queue_of(TOY.task) == "default"


def test_a_worker_killed_mid_unit_is_recovered_with_no_step_lost_or_written_twice(start_worker):
    unit = send(steps=8, pause=0.5)
    first = start_worker("default")
    wait_for(lambda: len(steps(unit)) >= 3, timeout=60, message="three steps by the first worker")
    first.kill()
    written_by_first = len(steps(unit))
    assert written_by_first < 8
    second = start_worker("default")
    wait_for(lambda: status(unit) == JobStatus.DONE, timeout=90, message=f"the toy done\n{second.log()}")
    unit.refresh_from_db()
    assert steps(unit) == list(range(8))  # every step once: nothing lost, nothing twice
    assert unit.attempts == 2 and unit.error == ""
    attempts = dict(ToyStep.objects.filter(unit=unit).values_list("index", "attempt"))
    assert {attempts[i] for i in range(written_by_first)} == {1} and attempts[7] == 2


def test_a_temporary_problem_is_retried_and_an_unexpected_error_fails_in_plain_words(start_worker):
    retried = send(steps=2, transient_once=True)
    failing = send(steps=3, fail_at=1)
    worker = start_worker("default")
    wait_for(lambda: status(failing) == JobStatus.FAILED, timeout=60, message=f"the failure\n{worker.log()}")
    failing.refresh_from_db()
    assert failing.error == (
        f"The toy stopped on an unexpected error (ValueError); the worker log has the details under toy "
        f"{failing.pk}. Press Resume to try again."
    )
    assert steps(failing) == [0] and "NOTETEXT" not in worker.log()  # the error's type and frames only
    wait_for(lambda: status(retried) == JobStatus.DONE, timeout=60, message=f"the retry\n{worker.log()}")
    retried.refresh_from_db()
    assert retried.attempts == 2 and steps(retried) == [0, 1]
    assert "toy" in worker.log() and "OperationalError, retry 1" in worker.log()
