"""Execute one training run in this process: `python manage.py train_run RUN_ID`.

Made for multi-GPU training: start it through a launcher, every rank runs this command and
calls the same trainer, only rank 0 (RANK=0) claims the run, writes progress and results, and
beats for it from a thread while it trains (webapp.training.execution):

    accelerate launch --num_processes 8 manage.py train_run 42
    torchrun --nproc-per-node 8 manage.py train_run 42

A Celery training worker with TRAINING_LAUNCHER set does this itself for those kinds (it claims
the run, passes --claimed and keeps beating for it too). Distributed launches support the kinds
dsm, cpt and sft (the causal-LM trainer); CH, prompting and self-learning runs are refused under
a launcher (run them in one process: their training is small, or made of several trainings).
Under a launcher every rank ends when the launcher ends, even by SIGKILL (see die_with_launcher).
"""

import ctypes
import os
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from ml.training.sharding import leave_group
from webapp.training import execution, runs
from webapp.training.models import DISTRIBUTED_KINDS, TrainingRun


class Command(BaseCommand):
    help = "Execute one training run here (under accelerate launch / torchrun for several GPUs)."

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument(
            "--claimed", action="store_true", help="the run was already claimed by the worker that started this launch"
        )

    def handle(self, *args, run_id, claimed, **options):
        if "LOCAL_RANK" in os.environ:  # started by a launcher
            die_with_launcher()
        main = execution.is_main_process()
        world = int(os.environ.get("WORLD_SIZE", "1"))
        run = TrainingRun.objects.select_related("model_version", "dataset", "split__corpus").filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run {run_id}.")
        if world > 1 and run.kind not in DISTRIBUTED_KINDS:
            raise CommandError(
                f"A {run.get_kind_display()} run does not train across processes; start it "
                "without accelerate launch / torchrun."
            )
        if claimed:
            attempt = os.environ.get("DSM_RUN_ATTEMPT")
            if attempt and int(attempt) != run.attempts:
                raise CommandError(f"Run {run_id} was taken over by another attempt.")
        elif main:
            run = runs.claim(run_id, worker=f"train_run@{os.uname().nodename}")
            if run is None:
                raise CommandError(f"Run {run_id} is not queued (or it is held by a live worker).")
        outcome = execution.execute(run, write=main)
        if world > 1:
            leave_group()  # the ranks end together (one exiting early can be aborted by gloo)
        if main:
            self.stdout.write(f"run {run_id}: {outcome}")
            if outcome != "done":
                raise CommandError(f"run {run_id} ended {outcome}")


PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_launcher() -> None:
    """Have the kernel SIGKILL this rank when its launcher dies. torchrun starts each rank in a
    session of its own, so a launcher killed outright would leave its ranks training on, beside
    the attempt that takes the run over (the Celery worker queues the run again at once)."""
    if not sys.platform.startswith("linux"):
        return
    launcher = os.getppid()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise CommandError(f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}")
    if os.getppid() != launcher:  # it died before prctl took effect
        os._exit(1)
