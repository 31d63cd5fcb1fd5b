"""Relevance evaluations end to end: a real Celery worker of the relevance queue
(tests/workers/conftest.py) computing a tiny random Llama model's maps for every configuration,
AttnLRP included (the worker process, not pytest's, is patched by lxt), then the result; and a
worker killed mid-evaluation: the evaluation shows stalled once WORK_STALL_SECONDS pass unbeaten, and the next
worker's recovery sweeper completes it without computing a map twice."""

import pytest
from django.db.models import Count
from django.utils import timezone

from tests.webapp.evaluation.factories import annotated_pairs_count, make_annotated_corpus, make_model_version, spec
from tests.workers.conftest import wait_for
from webapp.evaluation import evaluations
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle import queue
from webapp.pipeline.models import JobStatus, PeakProfile, RelevanceMap

STALL = 4  # WORK_STALL_SECONDS of the workers (tests/workers/conftest.py) and of this process (fixture)


@pytest.fixture
def relevance_queue_empty(settings):
    from workers.celery_app import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("relevance")
    settings.WORK_STALL_SECONDS = STALL


def reload(evaluation):
    return RelevanceEvaluation.objects.get(pk=evaluation.pk)


def wait(predicate, worker, message, timeout=240, interval=0.3):
    try:
        wait_for(predicate, timeout=timeout, interval=interval, message=message)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n--- worker log ---\n{worker.log()}") from None


def ended(evaluation):
    return lambda: not reload(evaluation).is_active


def launch(tiny_model_dir, n_notes, **changes):
    corpus, _ = make_annotated_corpus(n_notes=n_notes, n_tasks=2)
    model_version = make_model_version(str(tiny_model_dir))
    # transaction=True tests empty the tables after each test, the migrations' default profile included
    profile, _ = PeakProfile.objects.get_or_create(name="paper-default", version=1)
    evaluation = evaluations.launch(spec(corpus, model_version, profile=profile, **changes), enqueue=False)
    queue.send(evaluations.RUN_TASK, evaluation.pk)  # the transaction=True test database has committed it already
    return corpus, evaluation


def assert_one_map_per_pair_and_configuration(evaluation):
    keys = [c["key"] for c in evaluation.result["configs"]]
    maps = RelevanceMap.objects.filter(model_version=evaluation.model_version, config__config_key__in=keys)
    assert not maps.values("note", "task", "config").annotate(n=Count("pk")).filter(n__gt=1).exists()
    assert maps.count() == evaluation.total


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_evaluation_of_every_method_runs_on_a_real_worker_attnlrp_included(
    start_worker, tiny_model_dir, relevance_queue_empty
):
    corpus, evaluation = launch(
        tiny_model_dir, 6, methods=["attnlrp", "attention", "grad_input"], explains=["next", "span"]
    )
    worker = start_worker("relevance")
    wait(ended(evaluation), worker, "the evaluation to end")
    evaluation = reload(evaluation)
    assert evaluation.status == JobStatus.DONE, f"{evaluation.error}\n{worker.log()}"
    n = annotated_pairs_count(corpus)
    assert evaluation.done == evaluation.total == 6 * n and evaluation.attempts == 1
    assert_one_map_per_pair_and_configuration(evaluation)
    groups = {(g["method"], g["explain"]): g for g in evaluation.result["groups"]}
    assert set(groups) == {(m, e) for m in ("attention", "grad_input", "attnlrp") for e in ("next", "span")}
    assert all(g["n_pairs"] == n and g["auc"] is not None for g in groups.values())
    assert evaluation.result["baselines"]["uniform"]["auc"] == 0.5
    assert evaluation.recommendation["reason"]
    assert evaluation.result["problems"] == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_s_evaluation_shows_stalled_and_the_next_worker_completes_it_computing_no_map_twice(
    start_worker_without_redelivery, tiny_model_dir, relevance_queue_empty
):
    corpus, evaluation = launch(tiny_model_dir, 40, methods=["grad_input", "attention"], explains=["next", "span"])
    first = start_worker_without_redelivery("relevance")  # recovered by the lifecycle, not the broker
    wait(
        lambda: 16 <= reload(evaluation).done <= reload(evaluation).total - 32,
        first,
        "a few batches to be stored",
        interval=0.02,
    )
    first.kill()
    killed_at = timezone.now()
    evaluation = reload(evaluation)
    assert evaluation.status == JobStatus.RUNNING and evaluation.done < evaluation.total
    before = {pk: bytes(data) for pk, data in RelevanceMap.objects.values_list("pk", "data")}
    assert before

    wait(
        lambda: reload(evaluation).status_text().startswith("stalled: worker lost at "),
        first,
        "the evaluation to show stalled",
        timeout=3 * STALL + 10,  # slack in units of the configured stall: a loaded machine is slow
        interval=0.1,
    )
    # Detected from the heartbeat the dead worker left: none came after the kill.
    assert reload(evaluation).heartbeat <= killed_at
    stalled = reload(evaluation)
    assert stalled.resumable and stalled.eta_seconds is None  # Resume is offered; no live ETA

    second = start_worker_without_redelivery("relevance")
    wait(ended(evaluation), second, "the evaluation queued again by the sweeper to end")
    evaluation = reload(evaluation)
    assert evaluation.status == JobStatus.DONE, f"{evaluation.error}\n{second.log()}"
    assert evaluation.done == evaluation.total == 4 * annotated_pairs_count(corpus) and evaluation.attempts == 2
    assert second.name.split("@")[0] in evaluation.worker
    assert_one_map_per_pair_and_configuration(evaluation)
    kept = {pk: bytes(data) for pk, data in RelevanceMap.objects.filter(pk__in=before).values_list("pk", "data")}
    assert kept == before  # stored before the kill: not computed again


# ---------------------------------------------------------------- the task, called in this process


@pytest.fixture
def in_process(db, tiny_model_dir):
    corpus, _ = make_annotated_corpus(n_notes=4, n_tasks=2)
    return evaluations.launch(spec(corpus, make_model_version(str(tiny_model_dir))), enqueue=False)


def test_a_model_no_worker_can_load_fails_the_evaluation_in_plain_words(in_process, tiny_model_dir, settings):
    from workers.evaluation import run_evaluation

    # A missing model is released for another worker first (test_released_evaluations); with a
    # limit of one release, this only worker's first release ends the evaluation.
    settings.RELEVANCE_RELEASE_LIMIT = 1
    in_process.model_version.path = str(tiny_model_dir / "missing")
    in_process.model_version.save()
    assert run_evaluation(in_process.pk) == "failed"
    evaluation = reload(in_process)
    assert evaluation.status == JobStatus.FAILED
    assert evaluation.error.startswith("No worker could load model tiny-llama: released 1 times by each of")
    assert evaluation.resumable


@pytest.fixture
def missing_model(in_process, tiny_model_dir, settings, monkeypatch):
    """The evaluation's model is not on this worker; its re-sends are recorded, not sent."""
    from workers.evaluation import run_evaluation

    settings.RELEVANCE_RELEASE_LIMIT, settings.RELEVANCE_RELEASE_DELAY_SECONDS = 3, 5.0
    in_process.model_version.path = str(tiny_model_dir / "missing")
    in_process.model_version.save()
    sent = []
    monkeypatch.setattr(run_evaluation, "apply_async", lambda args, countdown: sent.append((args, countdown)))
    return sent


def test_a_model_this_worker_cannot_load_releases_the_evaluation_for_another_worker(in_process, missing_model):
    from workers.evaluation import run_evaluation

    assert run_evaluation(in_process.pk) == "released"
    evaluation = reload(in_process)
    assert evaluation.status == JobStatus.QUEUED and evaluation.attempts == 1
    [(worker, count)] = evaluation.releases.items()
    assert count == 1 and evaluation.lacking[worker]["model"] == "tiny-llama"
    assert f"Worker {worker} cannot load model tiny-llama" in evaluation.error
    assert run_evaluation(in_process.pk) == "released"  # sent again, the back-off grows
    assert missing_model == [([in_process.pk], 5.0), ([in_process.pk], 10.0)]
    assert reload(in_process).lacking[worker]["releases"] == 2

    RelevanceEvaluation.objects.filter(pk=in_process.pk).update(status=JobStatus.FAILED)
    evaluations.resume(reload(in_process), enqueue=False)
    resumed = reload(in_process)
    assert resumed.releases == {} and resumed.lacking[worker]["releases"] == 2  # the page still names it


def test_an_evaluation_cancelled_while_its_model_would_not_load_ends_cancelled(in_process, missing_model, monkeypatch):
    from webapp.evaluation import running
    from webapp.pipeline.modelcache import ModelUnavailable
    from workers.evaluation import run_evaluation

    def cancelled_then_unloadable(evaluation, get_model, **kwargs):  # kwargs: the runner's heart
        evaluations.cancel(evaluation)
        raise ModelUnavailable("storage unreachable")

    monkeypatch.setattr(running, "execute", cancelled_then_unloadable)
    assert run_evaluation(in_process.pk) == "cancelled"
    assert reload(in_process).status == JobStatus.CANCELLED and missing_model == []


def test_a_temporary_database_problem_puts_the_evaluation_back_for_a_retry(in_process, monkeypatch):
    from django.db import OperationalError

    from webapp.evaluation import running
    from workers.evaluation import run_evaluation

    def lost_connection(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(running, "execute", lost_connection)
    with pytest.raises(OperationalError):  # called directly, retry() re-raises; a worker sends a retry message
        run_evaluation(in_process.pk)
    evaluation = reload(in_process)
    assert evaluation.status == JobStatus.QUEUED and "temporary problem" in evaluation.phase


def test_a_duplicate_message_of_a_finished_evaluation_does_nothing(in_process):
    from workers.evaluation import run_evaluation

    RelevanceEvaluation.objects.filter(pk=in_process.pk).update(status=JobStatus.DONE)
    assert run_evaluation(in_process.pk) == "nothing to do"


def test_the_task_goes_to_the_relevance_queue():
    from workers.celery_app import app

    assert app.amqp.router.route({}, "workers.evaluation.run_evaluation")["queue"].name == "relevance"
