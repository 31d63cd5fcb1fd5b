"""Distributed training through TRAINING_LAUNCHER on this CPU: a real training worker starts
`torchrun --nproc-per-node 2 manage.py train_run ID --claimed` (gloo), trains the tiny Llama of
tests/ml/conftest.py on a small DSM dataset, and only rank 0 writes. A launcher killed with
SIGKILL takes its ranks with it and the run is queued again and finished, nothing duplicated.
"""

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.workers import test_training
from tests.workers.conftest import ROOT
from tests.workers.test_training import SMALL, assert_done, ended, reload, wait
from webapp.pipeline.models import JobStatus, ModelVersion
from webapp.training import runs
from webapp.training.models import RunKind, RunLog, RunMetric

pytestmark = pytest.mark.django_db(transaction=True)

# The training tests' fixtures: an empty training queue, a labeled corpus, a model, a DSM dataset.
training_queue_empty, world = test_training.training_queue_empty, test_training.world

# --standalone: a free rendezvous port, so runs on one host at the same time never meet.
TORCHRUN = f"{Path(sys.executable).parent / 'torchrun'} --standalone --nproc-per-node 2"
STEPS = 3
# One micro-batch per process per step (2 x 1 x 2 processes): one process adds the two
# micro-batches' gradients (a + b), two processes all-reduce them (a + b or b + a), and the
# loss scale differs by the factor 2 DDP's average takes back, exactly. So the weights are
# bit-identical on any CPU. With more micro-batches per process the association differs
# ((a + b) + c vs a + (b + c)) and equality would hold only by luck.
CONFIG = {"train": {**SMALL, "max_steps": STEPS, "epochs": 2.0, "effective_batch_size": 2, "checkpoint_every": 1}}


def launch(world, *, config=CONFIG, enqueue=True):
    spec = runs.RunSpec(
        kind=RunKind.DSM,
        model_version=world["model"],
        dataset=world["dataset"],
        split_corpus=world["corpus"],
        config=config,
    )
    return runs.launch(spec, enqueue=enqueue)


def start_launching(start_worker, settings):
    return start_worker("training", TRAINING_POLL_SECONDS=0.1, DATA_DIR=settings.DATA_DIR, TRAINING_LAUNCHER=TORCHRUN)


def train_run(worker_env, settings, run, launcher=""):
    """`[launcher] manage.py train_run ID` in a process of its own (it claims the run)."""
    python = shlex.split(launcher) if launcher else [sys.executable]
    done = subprocess.run(
        [*python, str(ROOT / "manage.py"), "train_run", str(run.pk)],
        cwd=ROOT,
        env={**worker_env, "DATA_DIR": str(settings.DATA_DIR), "TRAINING_POLL_SECONDS": "0.1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])


def weights(run) -> dict[str, torch.Tensor]:
    (final,) = (Path(run.output_dir) / "final").glob("*.safetensors")
    return load_file(final)


def assert_written_once(run, steps):
    """One attempt, one model version, one row a step, one final folder and no checkpoint left."""
    run = reload(run)
    assert run.step == steps and run.attempts == 1 and len(run.provenance["attempts"]) == 1
    assert list(RunMetric.objects.filter(run=run, phase="train").values_list("step", flat=True)) == list(
        range(1, steps + 1)
    )
    logs = list(RunLog.objects.filter(run=run).values_list("message", flat=True))
    assert sum(line.startswith("Attempt ") for line in logs) == 1, logs
    assert sum(line.startswith("Registered model version") for line in logs) == 1, logs
    assert ModelVersion.objects.filter(produced_by=f"training run {run.pk}").count() == 1
    assert sorted(p.name for p in Path(run.output_dir).iterdir()) == ["final"]
    return run


def children(pid: int) -> list[int]:
    """The live processes whose parent is pid."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended meanwhile
            continue
        if fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_launched_run_trains_on_two_processes_writes_once_and_equals_one_process(
    start_worker, worker_env, settings, world
):
    through_worker = launch(world)
    worker = start_launching(start_worker, settings)
    wait(ended(through_worker), through_worker, worker, timeout=400, message="the launched run")
    assert_done(through_worker, worker)
    through_worker = assert_written_once(through_worker, STEPS)
    assert f"{TORCHRUN} " in worker.log()  # trained by the launcher's processes, not the worker's
    worker.stop()  # its recovery sweeper would send, and take, the runs below

    by_hand = launch(world, enqueue=False)
    train_run(worker_env, settings, by_hand, TORCHRUN)  # no --claimed: rank 0 claims
    by_hand = assert_written_once(by_hand, STEPS)
    assert by_hand.status == JobStatus.DONE and by_hand.worker.startswith("train_run@")

    one_process = launch(world, enqueue=False)
    train_run(worker_env, settings, one_process)
    reference = weights(assert_written_once(one_process, STEPS))
    assert reference.keys() == weights(through_worker).keys() == weights(by_hand).keys()
    for run in (through_worker, by_hand):
        got = weights(run)
        different = [name for name in reference if not torch.equal(got[name], reference[name])]
        assert not different, (run.pk, different)


@pytest.mark.slow
def test_a_killed_launcher_takes_its_ranks_with_it_and_the_run_is_queued_again_and_finished(
    start_worker_without_redelivery, settings, world
):
    steps = 30
    config = {"train": {**CONFIG["train"], "max_steps": steps, "epochs": 30.0, "checkpoint_every": 2}}
    run = launch(world, config=config)
    worker = start_launching(start_worker_without_redelivery, settings)
    wait(
        lambda: (reload(run).checkpoint_step or 0) >= 2, run, worker, timeout=300, interval=0.1, message="a checkpoint"
    )
    (launcher,) = children(worker.process.pid)
    ranks = children(launcher)
    assert len(ranks) == 2
    os.kill(launcher, signal.SIGKILL)

    wait(lambda: reload(run).attempts >= 2, run, worker, timeout=120, message="the run claimed again")
    assert not [pid for pid in ranks if alive(pid)]  # the first attempt's ranks never meet the second's
    wait(ended(run), run, worker, timeout=400, message="the run to finish")
    done = assert_done(run, worker)
    assert done.attempts == 2 and done.step == steps
    logs = list(RunLog.objects.filter(run=run).values_list("message", flat=True))
    assert any("queued again" in line for line in logs), logs
    assert list(RunMetric.objects.filter(run=run, phase="train").values_list("step", flat=True)) == list(
        range(1, steps + 1)
    )
    assert sum(line.startswith("Registered model version") for line in logs) == 1, logs
    assert ModelVersion.objects.filter(produced_by=f"training run {run.pk}").count() == 1
    assert sorted(p.name for p in Path(done.output_dir).iterdir()) == ["final"]


def test_a_launcher_that_cannot_start_fails_the_run_with_a_clear_error(world):
    from webapp.training.distributed import launch as launch_distributed

    run = runs.claim(launch(world, enqueue=False).pk, worker="here")
    assert launch_distributed(run, "/nonexistent/torchrun --nproc-per-node 2") == "failed"
    run = reload(run)
    assert run.status == JobStatus.FAILED and run.attempts == 1
    assert run.error == "TRAINING_LAUNCHER could not be started (FileNotFoundError: No such file or directory)."
