"""Training runs end to end: a real Celery worker of the "training" queue (tests/workers/conftest.py)
training a tiny random Llama model (tests/ml/conftest.py) on a small synthetic corpus, through
Redis and PostgreSQL.

Transactional tests flush data-migration rows, so each test makes its model version, tasks,
corpus (ml.synthetic notes with gold annotations) and dataset version (examples made directly).
Runs are capped with max_steps / few epochs / few bootstrap resamples to stay fast on a CPU.
"""

from pathlib import Path

import pytest
from django.utils import timezone

from tests.webapp.training.factories import make_dataset, make_labeled_corpus, make_model_version, make_unlabeled_notes
from tests.workers.conftest import wait_for
from webapp.pipeline.models import JobStatus, ModelVersion
from webapp.training import runs
from webapp.training.models import RunKind, RunLog, RunMetric, RunPrediction, TrainingRun

STALL = 4  # WORK_STALL_SECONDS of these workers (tests/workers/conftest.py) and of this process (fixture)
SMALL = {"max_steps": 2, "effective_batch_size": 2, "micro_batch_size": 1, "max_length": 160, "checkpoint_every": 1}
EVALUATION = {"n_resamples": 50}


@pytest.fixture
def training_queue_empty(settings, tmp_path):
    from workers.celery_app import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge("training")
    settings.WORK_STALL_SECONDS = STALL
    settings.DATA_DIR = tmp_path / "data"  # run folders and the feature cache of this test


@pytest.fixture
def world(tiny_model_dir, training_queue_empty):
    """A labeled corpus (16 notes x 4 tasks, one held out), a model version, a DSM dataset."""
    corpus = make_labeled_corpus(16)
    model = make_model_version(tiny_model_dir)
    return {"corpus": corpus, "model": model, "dataset": make_dataset(corpus, model, n_examples=8)}


def launch(kind, world, *, preset="", model=None, dataset=None, config=None):
    spec = runs.RunSpec(
        kind=kind,
        preset=preset,
        model_version=model or world["model"],
        dataset=(dataset or world["dataset"]) if kind in (RunKind.DSM, RunKind.CPT) else None,
        split_corpus=world["corpus"],
        config=config or {},
    )
    return runs.launch(spec)


def reload(run):
    return TrainingRun.objects.select_related("produced_model").get(pk=run.pk)


def ended(*runs_):
    return lambda: all(not reload(run).is_active for run in runs_)


def wait(predicate, run, worker, *, timeout, message, interval=0.3):
    """wait_for, saying the run's state, log and the worker's log when it times out."""
    try:
        wait_for(predicate, timeout=timeout, interval=interval, message=message)
    except AssertionError as exc:
        run = reload(run)
        raise AssertionError(
            f"{exc}: run {run.status} step {run.step}/{run.total_steps} {run.error}\n"
            f"{list(run.logs.values_list('message', flat=True))}\n{worker.log()}"
        ) from None


def start(start_worker, settings):
    return start_worker("training", TRAINING_POLL_SECONDS=0.1, DATA_DIR=settings.DATA_DIR)


def assert_done(run, worker):
    run = reload(run)
    assert run.status == JobStatus.DONE, (
        f"{run.error}\n{list(run.logs.values_list('message', flat=True))}\n{worker.log()}"
    )
    assert run.finished and run.provenance["libraries"]["torch"] and run.provenance["code_version"]
    return run


def assert_evaluated(run):
    n_test = run.split.test_count
    assert run.macro_f1 is not None and 0 <= run.macro_f1_low <= run.macro_f1 <= run.macro_f1_high <= 1
    assert run.results["held_out"]["tasks"] == ["spo2"] and run.held_out_macro_f1 is not None
    variants = len(run.results.get("variants", [None]))
    assert RunPrediction.objects.filter(run=run).count() == n_test * variants


def assert_registered(run, parent):
    model = run.produced_model
    assert model is not None and model.parent == parent and model.produced_by == f"training run {run.pk}"
    assert (Path(model.path) / "config.json").is_file()
    from ml.models import load_model

    assert load_model(model.path).model is not None  # usable at once (relevance jobs, further runs)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_run_kind_trains_evaluates_and_registers_on_a_real_worker(start_worker, settings, world):
    make_unlabeled_notes(world["corpus"], 3)
    cpt_data = make_dataset(world["corpus"], world["model"], mode="unmasked", name="ward-cpt", n_examples=4)
    dsm = launch(RunKind.DSM, world, preset="dsm-full", config={"train": SMALL})
    cpt = launch(RunKind.CPT, world, preset="cpt", dataset=cpt_data, config={"train": {**SMALL, "finetune": "lora"}})
    sft = launch(RunKind.SFT, world, preset="sft", config={"train": SMALL, "evaluation": EVALUATION})
    heads = launch(RunKind.HEADS, world, preset="ch", config={"heads": {"epochs": 2}, "evaluation": EVALUATION})
    zero = launch(
        RunKind.PROMPTING,
        world,
        preset="0-shot",
        config={"prompting": {"shots": 0, "variants": 2}, "evaluation": EVALUATION},
    )
    two = launch(
        RunKind.PROMPTING,
        world,
        preset="2-shot",
        config={"prompting": {"shots": 2, "variants": 1}, "evaluation": EVALUATION},
    )
    selfl = launch(
        RunKind.SELF_LEARNING,
        world,
        preset="self-learning",
        config={"train": SMALL, "unlabeled": {"notes": 3, "tasks_per_note": 2}, "evaluation": EVALUATION},
    )
    assert len({run.split_id for run in (sft, heads, zero, two, selfl)}) == 1  # one stored split for all
    worker = start(start_worker, settings)
    wait(ended(dsm), dsm, worker, timeout=120, message="the DSM run")
    dsm = assert_done(dsm, worker)
    on_dsm = launch(
        RunKind.HEADS,
        world,
        preset="ch",
        model=dsm.produced_model,
        config={"heads": {"epochs": 2}, "evaluation": EVALUATION},
    )
    everything = (cpt, sft, heads, zero, two, selfl, on_dsm)
    wait(ended(*everything), everything[-1], worker, timeout=150, message="every run to end")
    cpt, sft, heads, zero, two, selfl, on_dsm = (assert_done(run, worker) for run in everything)

    for trained in (dsm, cpt):
        assert trained.results["training"]["steps"] == 2 and trained.step == trained.total_steps == 2
        assert list(RunMetric.objects.filter(run=trained).values_list("step", flat=True)) == [1, 2]
        assert_registered(trained, world["model"])
    for evaluated in (sft, heads, zero, two, selfl, on_dsm):
        assert_evaluated(evaluated)
    for trained in (sft, selfl):
        assert_registered(trained, world["model"])
    assert len(zero.results["variants"]) == 2
    assert selfl.results["synthetic_items"] == 6
    assert set(RunMetric.objects.filter(run=selfl).values_list("phase", flat=True)) >= {"teacher", "student"}
    assert on_dsm.model_version == dsm.produced_model
    assert not RunLog.objects.filter(level="error").exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_cancelled_run_keeps_its_checkpoint_and_resume_finishes_it_without_repeating_steps(
    start_worker, settings, world
):
    run = launch(
        RunKind.DSM,
        world,
        preset="dsm-full",  # 8 examples, 2 steps an epoch: 100 steps
        config={
            "train": {
                **SMALL,
                "max_steps": 100,
                "epochs": 50.0,
                "effective_batch_size": 4,
                "micro_batch_size": 2,
                "checkpoint_every": 5,
            }
        },
    )
    worker = start(start_worker, settings)
    wait(lambda: reload(run).step >= 6, run, worker, timeout=120, interval=0.05, message="a few steps")
    runs.cancel(reload(run))
    wait(ended(run), run, worker, timeout=60, message="the run to stop")
    cancelled = reload(run)
    assert cancelled.status == JobStatus.CANCELLED, worker.log()
    stopped_at = cancelled.checkpoint_step
    assert stopped_at and 6 <= stopped_at < 100 and cancelled.produced_model is None
    assert (Path(cancelled.output_dir) / "checkpoint-last").is_dir()

    runs.resume(cancelled)
    wait(ended(run), run, worker, timeout=120, message="the resumed run")
    done = assert_done(run, worker)
    assert done.attempts == 2 and done.step == done.total_steps == 100
    first = RunLog.objects.filter(run=run, message__contains="first step of this attempt").values_list(
        "message", flat=True
    )
    assert list(first) == [f"train: continuing from a checkpoint; first step of this attempt: {stopped_at + 1}."]
    assert list(RunMetric.objects.filter(run=run).values_list("step", flat=True)) == list(range(1, 101))
    assert_registered(done, world["model"])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_s_run_shows_stalled_and_the_next_worker_s_sweeper_finishes_it_from_its_checkpoint(
    start_worker_without_redelivery, settings, world
):
    run = launch(
        RunKind.DSM,
        world,
        preset="dsm-full",  # 60 steps
        config={
            "train": {
                **SMALL,
                "max_steps": 60,
                "epochs": 30.0,
                "effective_batch_size": 4,
                "micro_batch_size": 2,
                "checkpoint_every": 3,
            }
        },
    )
    first = start(start_worker_without_redelivery, settings)  # recovered by the lifecycle, not the broker
    heartbeats = set()

    def checkpointed():
        current = reload(run)
        heartbeats.add(current.heartbeat)
        return (current.checkpoint_step or 0) >= 3

    wait(checkpointed, run, first, timeout=120, interval=0.05, message="a checkpoint")
    # A live worker beats while it trains (what keeps it from being shown stalled; the rule
    # itself is tested without timing in tests/webapp/lifecycle).
    assert len(heartbeats - {None}) >= 2, heartbeats
    first.kill()
    killed_at = timezone.now()
    killed = reload(run)
    assert killed.status == JobStatus.RUNNING and killed.step < 60
    wait(
        lambda: reload(run).status_text().startswith("stalled: worker lost at "),
        run,
        first,
        timeout=3 * STALL + 10,  # slack in units of the configured stall: a loaded machine is slow
        interval=0.1,
        message="the run to show stalled",
    )
    # Detected from the heartbeat the dead worker left: none came after the kill.
    assert reload(run).heartbeat <= killed_at
    stalled = reload(run)
    assert stalled.status == JobStatus.RUNNING and stalled.resumable and stalled.time_left_s is None

    second = start(start_worker_without_redelivery, settings)
    wait(ended(run), run, second, timeout=150, message="the run queued again by the sweeper")
    done = assert_done(run, second)
    assert done.attempts == 2 and done.step == 60 and second.name.split("@")[0] in done.worker
    logs = list(RunLog.objects.filter(run=run).values_list("message", flat=True))
    assert any(first.name.split("@")[0] in line and "queued again automatically" in line for line in logs), logs
    continued = RunLog.objects.filter(run=run, message__contains="first step of this attempt").first()
    assert continued is not None and int(continued.message.rstrip(".").rsplit(" ", 1)[1]) > 1
    assert ModelVersion.objects.filter(parent=world["model"]).count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_experiment_file_enqueued_runs_on_the_workers_one_after_its_dependency(
    start_worker, settings, world, tmp_path, capsys
):
    import json

    from django.core.management import call_command

    path = tmp_path / "experiment.json"
    path.write_text(
        json.dumps(
            {
                "name": "queued",
                "model": world["model"].name,
                "split": {"corpus": world["corpus"].name},
                "defaults": {"train": SMALL, "heads": {"epochs": 1}, "evaluation": EVALUATION},
                "runs": [
                    {"id": "dsm", "preset": "dsm-full", "dataset": {"name": world["dataset"].name}},
                    {"id": "dsm-ch", "preset": "ch", "model": "@dsm"},
                ],
            }
        )
    )
    worker = start(start_worker, settings)
    call_command("run_experiment", str(path), "--enqueue", "--timeout", "150")
    out = capsys.readouterr().out
    rows = json.loads(out[: out.rindex("}") + 1])["runs"]
    assert [(row["id"], row["status"]) for row in rows] == [("dsm", "done"), ("dsm-ch", "done")], worker.log()
    dsm, dsm_ch = (TrainingRun.objects.get(pk=row["run"]) for row in rows)
    assert dsm_ch.model_version == dsm.produced_model and dsm_ch.worker == dsm.worker != ""
