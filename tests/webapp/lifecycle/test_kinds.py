"""The one registry of kinds of long work and of outboxes, and everything derived from it: Celery's
task modules and routes, the recovery sweeper's kinds and outboxes and each task's retry limit."""

from django.conf import settings

from webapp.lifecycle import kinds, queue, recovery
from webapp.lifecycle.models import WorkUnit


def test_celery_imports_exactly_the_task_modules_of_the_kinds():
    from workers.celery_app import app

    assert list(app.conf.imports) == settings.CELERY_IMPORTS == kinds.task_modules()
    every = (*kinds.KINDS, *kinds.OUTBOXES, *kinds.PERIODIC)
    assert sorted(settings.CELERY_IMPORTS) == sorted({entry.module for entry in every})


def test_every_kind_and_outbox_is_routed_to_its_queue_by_celery_and_by_the_web_app():
    from workers.celery_app import app

    app.loader.import_default_modules()
    for kind in (*kinds.KINDS, *kinds.OUTBOXES, *kinds.PERIODIC):
        assert app.amqp.router.route({}, kind.task)["queue"].name == kind.queue, kind.name
        assert queue.queue_of(kind.task) == kind.queue, kind.name


def test_every_task_of_the_workers_is_a_kind_with_its_retry_policy_an_outbox_or_periodic():
    from webapp.integrations import webhooks
    from workers.celery_app import app

    app.loader.import_default_modules()
    ours = {name for name in app.tasks if name.startswith("workers.")}
    assert ours == {entry.task for entry in (*kinds.KINDS, *kinds.OUTBOXES, *kinds.PERIODIC)}
    for kind in kinds.KINDS:
        assert app.tasks[kind.task].max_retries == kind.retry.max_retries, kind.name
    # A webhook delivery is one attempt a message; its row, not Celery, holds the retries.
    assert [outbox.task for outbox in kinds.OUTBOXES] == [webhooks.TASK]
    assert kinds.OUTBOXES[0].queue not in {kind.queue for kind in kinds.KINDS}  # no receiver delays long work


def test_recovery_sweeps_every_kind_of_the_registry_and_each_records_a_work_unit():
    assert recovery.KINDS is kinds.KINDS
    for kind in kinds.KINDS:
        assert issubclass(kind.model_class(), WorkUnit), kind.name
    assert len({kind.name for kind in kinds.KINDS}) == len({kind.task for kind in kinds.KINDS}) == len(kinds.KINDS)


def test_a_task_that_is_no_kind_is_named_in_the_error():
    try:
        kinds.by_task("workers.nothing.here")
    except LookupError as exc:
        assert "workers.nothing.here" in str(exc) and "workers.datasets.build_dataset" in str(exc)
    else:
        raise AssertionError("an unknown task was accepted")


def test_the_back_off_doubles_from_its_first_wait():
    assert [kinds.RETRY.countdown(n) for n in range(3)] == [5, 10, 20]
    assert kinds.RETRY.gave_up(TimeoutError()) == (
        "Stopped by a temporary problem (TimeoutError) that did not go away after 3 retries. Press Resume to try again."
    )


def test_every_function_schema_and_error_a_kind_names_exists():
    for kind in kinds.KINDS:
        for field in ("function", "claim", "fail", "release", "api", "cancel", "resume", "refusal", "sweep"):
            if path := getattr(kind, field):
                assert callable(kinds.resolve(path)), (kind.name, field, path)
        assert kind.module == "workers.runner", kind.name


def test_the_webhook_events_are_the_kinds_events_then_a_review_round_and_a_test():
    from webapp.integrations.models import Webhook

    assert Webhook.Event.values == [kind.event.value for kind in kinds.KINDS if kind.event] + ["review_round", "test"]
    assert Webhook.Event.TRAINING_RUN == "training_run" and Webhook.Event.TEST.label == "Test delivery"


def test_a_kind_is_found_by_name_and_a_second_of_the_same_name_is_refused():
    assert kinds.by_name("import").model == "corpus.ImportJob"
    try:
        kinds.register(kinds.Kind("import", "corpus.ImportJob", "x:y", "default"))
    except ValueError as exc:
        assert "import" in str(exc)
    else:
        raise AssertionError("a second kind named import was accepted")
    assert kinds.Kind("a new one", "x.Y", "x:y", "default").task == "workers.runner.a_new_one"
