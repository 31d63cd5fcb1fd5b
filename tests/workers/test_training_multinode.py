"""Training across machines, with two "machines" on localhost: a real Celery training worker with
TRAINING_NNODES=2 claims a sharded (fsdp) DSM run and starts its torchrun agent with a c10d
rendezvous; `manage.py train_node` (the other machine) starts the second agent, which joins the
same rendezvous. Each agent runs one rank of `manage.py train_run`: the run trains as one group
of two, and only global rank 0 writes.
"""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tests.workers import test_training
from tests.workers.conftest import ROOT
from tests.workers.test_training import SMALL, assert_done, ended, wait
from tests.workers.test_training_launcher import assert_written_once, launch
from webapp.lib.processes import launch_command

pytestmark = pytest.mark.django_db(transaction=True)
training_queue_empty, world = test_training.training_queue_empty, test_training.world

STEPS = 2
# One micro-batch per process per step over 2 processes; sharded over the 2 "machines".
CONFIG = {"train": {**SMALL, "max_steps": STEPS, "effective_batch_size": 2, "sharding": "fsdp"}}
PER_MACHINE = f"{Path(sys.executable).parent / 'torchrun'} --nproc-per-node 1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_machines_meet_at_one_rendezvous_and_train_one_sharded_run(start_worker, worker_env, settings, world):
    nodes = {
        "TRAINING_LAUNCHER": PER_MACHINE,
        "TRAINING_NNODES": "2",
        "TRAINING_RDZV_ENDPOINT": f"127.0.0.1:{free_port()}",
        "TRAINING_POLL_SECONDS": "0.1",
        "DATA_DIR": str(settings.DATA_DIR),
    }
    run = launch(world, config=CONFIG)
    worker = start_worker("training", **nodes)
    second = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "train_node", "--once", "--wait", "300"],
        cwd=ROOT,
        env={**worker_env, **nodes},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait(ended(run), run, worker, timeout=400, message="the two-machine run")
        out, _ = second.communicate(timeout=120)
    finally:
        second.kill()
    assert second.returncode == 0, out[-3000:]
    assert f"joining run {run.pk}, attempt 1:" in out and f"--rdzv-id dsm-run-{run.pk}-1" in out
    assert f"--nnodes 2 --rdzv-backend c10d --rdzv-endpoint {nodes['TRAINING_RDZV_ENDPOINT']}" in worker.log()
    assert_done(run, worker)
    run = assert_written_once(run, STEPS)  # one attempt, one row a step, one model version
    (attempt,) = run.provenance["attempts"]
    assert attempt["world_size"] == "2" and attempt["rank"] == "0"  # rank 0 of a group over both agents
    model = AutoModelForCausalLM.from_pretrained(Path(run.output_dir) / "final")
    assert sum(p.numel() for p in model.parameters()) > 0


def test_a_launcher_that_cannot_rendezvous_across_machines_is_refused_with_the_reason():
    argv = ["manage.py", "train_run", "7", "--claimed"]
    assert launch_command("torchrun --nproc-per-node 8", argv) == ["torchrun", "--nproc-per-node", "8", *argv]
    assert launch_command("torchrun --nproc-per-node 8", argv, nnodes=2, endpoint="h:29400", rdzv_id="r") == [
        *("torchrun", "--nproc-per-node", "8", "--nnodes", "2", "--rdzv-backend", "c10d"),
        *("--rdzv-endpoint", "h:29400", "--rdzv-id", "r", *argv),
    ]
    with pytest.raises(ValueError, match="needs a torchrun launcher"):
        launch_command("accelerate launch --multi_gpu", argv, nnodes=2, endpoint="h:1", rdzv_id="r")
    with pytest.raises(ValueError, match="remove --standalone"):
        launch_command("torchrun --standalone --nproc-per-node 2", argv, nnodes=2, endpoint="h:1", rdzv_id="r")
