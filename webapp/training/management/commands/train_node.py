"""Be one more machine of multi-machine training runs: `python manage.py train_node`.

With TRAINING_NNODES > 1, the Celery training worker on one machine claims a dsm / cpt / sft run
and starts its torchrun agent with a c10d rendezvous (webapp.training.distributed). Each other
machine runs this command instead of a training worker: it watches for runs in that state (running,
phase "starting": claimed, the ranks not yet training) and starts the same command for each, so
its agent joins the rendezvous and its ranks train with the others. Only global rank 0 (on the
claiming machine) writes to the database. A run is joined once per attempt; an agent that finds
no rendezvous partner gives up after torchrun's join timeout (600 s) and this command goes on.

Every machine needs the same settings (TRAINING_LAUNCHER, TRAINING_NNODES, TRAINING_RDZV_ENDPOINT,
the database), the model folders and the run's output folder (a shared filesystem: sharded
checkpoints are written by every machine into one folder), see docs/operations.md "Beyond one machine".
"""

import os
import subprocess
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from webapp.lib import processes
from webapp.pipeline.models import JobStatus
from webapp.training.distributed import launch_command
from webapp.training.models import DISTRIBUTED_KINDS, TrainingRun

RANKS_EXIT_SECONDS = 60


class Command(BaseCommand):
    help = "Join multi-machine training runs as one more node (TRAINING_NNODES > 1)."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="join one run, then exit with its launcher's status")
        parser.add_argument("--wait", type=float, default=None, help="with --once: give up after this many seconds")

    def handle(self, *args, once, wait, **options):
        if settings.TRAINING_NNODES < 2 or not settings.TRAINING_LAUNCHER:
            raise CommandError("train_node needs TRAINING_LAUNCHER (torchrun) and TRAINING_NNODES of 2 or more.")
        processes.become_subreaper()
        joined: set[tuple[int, int]] = set()
        deadline = time.monotonic() + wait if wait else None
        while True:
            run = (
                TrainingRun.objects.filter(status=JobStatus.RUNNING, phase="starting", kind__in=DISTRIBUTED_KINDS)
                .order_by("pk")
                .only("pk", "attempts")
                .first()
            )
            if run is None or (run.pk, run.attempts) in joined:
                if deadline is not None and time.monotonic() > deadline:
                    raise CommandError(f"no run to join in {wait:g} s")
                time.sleep(settings.TRAINING_POLL_SECONDS)
                continue
            joined.add((run.pk, run.attempts))
            try:
                command = launch_command(run, settings.TRAINING_LAUNCHER)
            except ValueError as exc:
                raise CommandError(f"TRAINING_LAUNCHER cannot be used: {exc}") from exc
            self.stdout.write(f"joining run {run.pk}, attempt {run.attempts}: {' '.join(command)}")
            self.stdout.flush()
            before = set(processes.children())
            done = subprocess.run(
                command, cwd=settings.BASE_DIR, env={**os.environ, "DSM_RUN_ATTEMPT": str(run.attempts)}, check=False
            )
            processes.reap([pid for pid in processes.children() if pid not in before], timeout=RANKS_EXIT_SECONDS)
            self.stdout.write(f"run {run.pk}, attempt {run.attempts}: launcher exited with {done.returncode}")
            self.stdout.flush()
            if once:
                if done.returncode:
                    raise CommandError(f"run {run.pk}: the launcher exited with {done.returncode}")
                return
