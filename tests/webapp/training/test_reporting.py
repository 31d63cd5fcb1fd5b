"""The worker's progress reports: figures, curve rows (upserted), checkpoints, cancel, ownership."""

import pytest

from webapp.pipeline.models import JobStatus
from webapp.training import runs
from webapp.training.models import RunKind, RunLog, RunMetric, TrainingRun
from webapp.training.reporting import Reporter


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def event(step, total=10, loss=1.0, message="", lr=1e-4):
    from ml.training import ProgressEvent

    return ProgressEvent(
        step=step,
        total_steps=total,
        epoch=step / total,
        loss=loss,
        lr=lr,
        tokens_per_s=50.0,
        eta_s=(total - step) * 2.0,
        message=message,
    )


@pytest.fixture
def claimed(dataset, model_version):
    run = runs.launch(
        runs.RunSpec(
            kind=RunKind.DSM, model_version=model_version, dataset=dataset, config={"train": {"warmup_ratio": 0.0}}
        )
    )
    return runs.claim(run.pk, worker="w1")


def test_progress_is_written_at_most_every_second_and_always_at_the_last_step(claimed):
    clock = Clock()
    reporter = Reporter(claimed, clock=clock)
    reporter.on_progress(event(1, loss=2.0))  # first event flushes
    reporter.on_progress(event(2, loss=1.5))  # within the second: buffered
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert (run.step, run.loss, RunMetric.objects.count()) == (1, 2.0, 1)
    clock.now = 1.5
    reporter.on_progress(event(3, loss=1.2))
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert (run.step, run.total_steps, run.loss, run.eta_s, run.tokens_per_s) == (3, 10, 1.2, 14.0, 50.0)
    assert list(RunMetric.objects.values_list("step", flat=True)) == [1, 2, 3]
    reporter.on_progress(event(10, loss=0.5))
    assert TrainingRun.objects.get(pk=claimed.pk).step == 10


def test_a_step_seen_again_after_a_resume_replaces_its_row(claimed):
    reporter = Reporter(claimed, clock=Clock())
    reporter.on_progress(event(1, loss=2.0))
    reporter.on_progress(event(1, loss=1.0))
    reporter.flush()
    assert list(RunMetric.objects.values_list("step", "loss")) == [(1, 1.0)]


def test_a_checkpoint_message_records_the_step_and_a_log_line_but_no_curve_point(claimed):
    reporter = Reporter(claimed, clock=Clock())
    reporter.on_progress(event(4))
    reporter.on_progress(event(4, message="checkpoint saved", lr=None))
    assert TrainingRun.objects.get(pk=claimed.pk).checkpoint_step == 4
    assert RunLog.objects.filter(run=claimed, message="train: checkpoint saved (step 4)").exists()
    assert list(RunMetric.objects.values_list("step", "lr")) == [(4, 1e-4)]


def test_the_steps_before_a_checkpoint_are_stored_before_it_is_written(claimed):
    """A process killed between writing a checkpoint and saying so resumes after that step:
    the rows of the steps up to it must already be in the database by then."""
    clock = Clock()
    reporter = Reporter(claimed, clock=clock)
    reporter.on_progress(event(1))
    for step in (2, 3, 4):  # within the same second: buffered
        reporter.on_progress(event(step))
    assert list(RunMetric.objects.values_list("step", flat=True)) == [1]
    reporter.on_progress(event(4, message="saving a checkpoint", lr=None))
    assert list(RunMetric.objects.values_list("step", flat=True)) == [1, 2, 3, 4]
    assert TrainingRun.objects.get(pk=claimed.pk).checkpoint_step is None  # not saved yet


def test_a_checkpoint_is_announced_before_its_files_are_written(tmp_path):
    from ml.training import train_causal_lm
    from tests.ml.conftest import build_loaded
    from tests.ml.training.conftest import dsm_pairs, fast_config

    seen = []

    def on_progress(event):
        folder = tmp_path / "checkpoint-last"
        seen.append((event.message, (folder / "state.json").is_file()))

    train_causal_lm(
        build_loaded("llama"),
        dsm_pairs(8),
        fast_config(epochs=2, checkpoint_every=1),
        output_dir=tmp_path,
        on_progress=on_progress,
    )
    announced = [written for message, written in seen if message == "saving a checkpoint"]
    assert announced and announced[0] is False  # the first announcement comes before any file
    assert [m for m, _ in seen if m.startswith("checkpoint saved")] and len(announced) == len(
        [m for m, _ in seen if m.startswith("checkpoint saved")]
    )


def test_the_first_step_of_a_resumed_attempt_is_logged(claimed):
    reporter = Reporter(claimed, clock=Clock())
    reporter.on_progress(event(7, message="resumed at step 7", lr=None, loss=None))
    reporter.on_progress(event(8))
    assert RunLog.objects.filter(
        run=claimed, message="train: continuing from a checkpoint; first step of this attempt: 8."
    ).exists()


def test_should_stop_turns_true_once_cancel_is_pressed(claimed):
    clock = Clock()
    reporter = Reporter(claimed, clock=clock)
    assert reporter.should_stop() is False
    runs.cancel(TrainingRun.objects.get(pk=claimed.pk))
    assert reporter.should_stop() is False  # polled at most once a second
    clock.now = 2
    assert reporter.should_stop() is True


def test_a_worker_that_lost_the_run_writes_nothing_and_stops(claimed):
    TrainingRun.objects.filter(pk=claimed.pk).update(attempts=5)
    reporter = Reporter(claimed, clock=Clock())
    reporter.on_progress(event(3))
    assert TrainingRun.objects.get(pk=claimed.pk).step == 0
    assert reporter.should_stop() is True


def test_another_rank_writes_nothing_and_stops_only_on_cancel(claimed):
    clock = Clock()
    reporter = Reporter(claimed, write=False, clock=clock)
    reporter.on_progress(event(2))
    reporter.log("hello")
    assert RunMetric.objects.count() == 0 and not RunLog.objects.filter(message="hello").exists()
    assert reporter.should_stop() is False
    TrainingRun.objects.filter(pk=claimed.pk).update(status=JobStatus.CANCELLING)
    clock.now = 5
    assert reporter.should_stop() is True


def test_phases_restart_the_figures_and_keep_their_own_curves(claimed):
    reporter = Reporter(claimed, clock=Clock())
    reporter.on_progress(event(1))
    reporter.set_phase("student", label="training the student", total_steps=4)
    run = TrainingRun.objects.get(pk=claimed.pk)
    assert (run.phase, run.step, run.total_steps) == ("training the student", 0, 4)
    reporter.on_progress(event(1, total=4))
    reporter.flush()
    assert sorted(RunMetric.objects.values_list("phase", "step")) == [("student", 1), ("train", 1)]


def test_a_step_reported_twice_before_a_flush_is_written_once(claimed):
    reporter = Reporter(claimed, clock=Clock())
    reporter._flushed = 0.0  # nothing flushed by the first event
    reporter.on_progress(event(2, loss=2.0))
    reporter.on_progress(event(2, loss=1.0))
    reporter.flush()
    assert list(RunMetric.objects.values_list("step", "loss")) == [(2, 1.0)]
