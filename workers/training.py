"""Tasks of the "training" queue. Thin: claim the run, let `webapp.training.execution` call
ml.training and store what it produced, report how it ended.

A worker of this queue trains models: it must never have computed AttnLRP relevance, whose lxt
patches are process-global (ml.lrp.assert_not_patched() is checked before every run). Run it
alone on its queue, one run at a time:

    celery -A workers worker --queues training --concurrency 1 --hostname training@%h

Recovery: the run is trained inside a heartbeat (webapp.lifecycle.heartbeat, beaten from a thread
whatever the trainer is doing). A worker that dies stops beating; after WORK_STALL_SECONDS the
recovery sweeper of any live worker queues the run again, and the next claim continues from the
run's last checkpoint. A message that finds the run held by a live worker (a redelivery, a
duplicate) finds nothing to do: the run is never trained twice.

Multi-GPU: with TRAINING_LAUNCHER set (e.g. "accelerate launch --multi_gpu --num_processes 4" or
"torchrun --nproc-per-node 4"), the task claims a dsm / cpt / sft run and starts
`<launcher> manage.py train_run <id> --claimed` as a child process instead of training here
(the other kinds run here); this process keeps beating for the run while the children train.
A launcher killed by a signal takes its ranks with it (train_run) and the run is queued again;
one that exits with an error fails the run (Resume continues from the last checkpoint).

Several machines: with TRAINING_NNODES > 1 the launcher (torchrun) gets a c10d rendezvous at
TRAINING_RDZV_ENDPOINT with the id `dsm-run-<id>-<attempt>` (webapp.training.distributed); this worker's agent
is one node, and `manage.py train_node` on each other machine starts the same command for the run
(its agent joins the rendezvous). The training starts once all TRAINING_NNODES agents have met.
"""

import logging
import os
import subprocess

from django.conf import settings

from webapp.lib import processes
from workers import retrying
from workers.celery_app import app, worker_name

log = logging.getLogger(__name__)

TIME_LIMIT = settings.TRAINING_TIME_LIMIT
RANKS_EXIT_SECONDS = 60  # a killed launcher's ranks: how long to wait for them to be gone


@app.task(
    bind=True,
    **retrying.options("workers.training.run_training"),
    soft_time_limit=TIME_LIMIT,
    time_limit=TIME_LIMIT + 600,
)
def run_training(self, run_id: int) -> str:
    from webapp.training import execution, runs
    from webapp.training.models import DISTRIBUTED_KINDS

    try:
        run = runs.claim(run_id, worker=worker_name(self))
    except retrying.TRANSIENT as exc:
        retrying.retry(self, exc)
    if run is None:
        log.info("run %s: not queued (held by a live worker, finished or cancelled); nothing to do", run_id)
        return "nothing to do"
    launcher = settings.TRAINING_LAUNCHER
    if launcher and run.kind in DISTRIBUTED_KINDS:
        return _launch_distributed(run, launcher)
    outcome = execution.execute(run)  # beats from a thread while it trains
    log.info("run %s: %s", run_id, outcome)
    return outcome


def _launch_distributed(run, launcher: str) -> str:
    """Every rank runs `manage.py train_run`; rank 0 writes progress and results. This process
    beats for the run meanwhile (so does rank 0): the run looks lost only once both are gone."""
    from webapp.lifecycle.heartbeat import Heartbeat
    from webapp.training import runs
    from webapp.training.distributed import launch_command

    try:
        command = launch_command(run, launcher)
    except ValueError as exc:  # a multi-node setting the launcher cannot honour
        runs.fail(run, f"TRAINING_LAUNCHER cannot be used: {exc}.")
        return "failed"
    log.info("run %s: %s", run.pk, " ".join(command))
    processes.become_subreaper()  # a dead launcher's ranks are re-parented here (see below)
    before = set(processes.children())
    try:
        with Heartbeat(run):
            # The ranks write to this process's own stdout/stderr (file descriptors 1 and 2, the worker's
            # log): Celery replaces sys.stdout with a logging proxy that has no file descriptor.
            completed = subprocess.run(
                command, cwd=settings.BASE_DIR, env={**os.environ, "DSM_RUN_ATTEMPT": str(run.attempts)}, check=False
            )
    except OSError as exc:  # no such launcher: a setting to fix, not a lost worker to retry forever
        runs.fail(run, f"TRAINING_LAUNCHER could not be started ({type(exc).__name__}: {exc.strerror}).")
        return "failed"
    # A launcher killed outright (an operator, the OOM killer) takes its ranks with it, but not in
    # the same instant: the run goes back to the queue only once they are gone (and reaped).
    left = processes.reap([pid for pid in processes.children() if pid not in before], timeout=RANKS_EXIT_SECONDS)
    if left:
        log.warning("run %s: ranks %s still exiting after %s s", run.pk, left, RANKS_EXIT_SECONDS)
    # Both guarded by this attempt's number: a run taken over meanwhile is left alone.
    if completed.returncode < 0:
        runs.requeue(
            run,
            f"The distributed launch was stopped by signal {-completed.returncode}; queued again automatically.",
        )
    elif completed.returncode != 0:
        runs.fail(
            run,
            f"The distributed launch exited with code {completed.returncode}; see the worker log. "
            "Resume continues from the last checkpoint.",
        )
    run.refresh_from_db(fields=["status"])
    return run.status
