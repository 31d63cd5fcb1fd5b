"""The command that trains one attempt of a distributed run, the same on every machine:
`<TRAINING_LAUNCHER> [a c10d rendezvous across TRAINING_NNODES machines] manage.py train_run <id>
--claimed`, started in the checkout's root. The training worker that claims the run starts it
(`launch`, called by webapp.training.execution.run_claimed); `manage.py train_node` starts it on
each other machine, so its agent joins the rendezvous. Both derive the same rendezvous id from the
run and its attempt."""

import logging
import os
import subprocess

from django.conf import settings

from webapp.lib import processes
from webapp.lifecycle.heartbeat import beating
from webapp.training import log_text

log = logging.getLogger(__name__)

RANKS_EXIT_SECONDS = 60  # a killed launcher's ranks: how long to wait for them to be gone


def rendezvous_id(run) -> str:
    """The rendezvous of one attempt of a run: every machine's agent derives the same one."""
    return f"dsm-run-{run.pk}-{run.attempts}"


def launch_command(run, launcher: str) -> list[str]:
    """`<launcher> [rendezvous across TRAINING_NNODES machines] manage.py train_run <id> --claimed`;
    ValueError for a multi-machine setting the launcher cannot honour."""
    return processes.launch_command(
        launcher,
        [str(settings.BASE_DIR / "manage.py"), "train_run", str(run.pk), "--claimed"],
        nnodes=settings.TRAINING_NNODES,
        endpoint=settings.TRAINING_RDZV_ENDPOINT,
        rdzv_id=rendezvous_id(run),
    )


def launch(run, launcher: str, heart=None) -> str:
    """Every rank runs `manage.py train_run`; rank 0 writes progress and results. This process
    beats for the run meanwhile (so does rank 0): the run looks lost only once both are gone.
    Returns the run's status once the launcher has exited."""
    from webapp.training import runs

    try:
        command = launch_command(run, launcher)
    except ValueError as exc:  # a multi-node setting the launcher cannot honour
        runs.fail(run, log_text.LAUNCHER_UNUSABLE % {"reason": exc})
        return "failed"
    log.info("run %s: %s", run.pk, " ".join(command))
    processes.become_subreaper()  # a dead launcher's ranks are re-parented here (see below)
    before = set(processes.children())
    try:
        with beating(run, heart):
            # The ranks write to this process's own stdout/stderr (file descriptors 1 and 2, the worker's
            # log): Celery replaces sys.stdout with a logging proxy that has no file descriptor.
            completed = subprocess.run(
                command, cwd=settings.BASE_DIR, env={**os.environ, "DSM_RUN_ATTEMPT": str(run.attempts)}, check=False
            )
    except OSError as exc:  # no such launcher: a setting to fix, not a lost worker to retry forever
        runs.fail(run, log_text.LAUNCHER_NOT_STARTED % {"type": type(exc).__name__, "reason": exc.strerror})
        return "failed"
    # A launcher killed outright (an operator, the OOM killer) takes its ranks with it, but not in
    # the same instant: the run goes back to the queue only once they are gone (and reaped).
    left = processes.reap([pid for pid in processes.children() if pid not in before], timeout=RANKS_EXIT_SECONDS)
    if left:
        log.warning("run %s: ranks %s still exiting after %s s", run.pk, left, RANKS_EXIT_SECONDS)
    # Both guarded by this attempt's number: a run taken over meanwhile is left alone.
    if completed.returncode < 0:
        runs.requeue(run, log_text.LAUNCH_SIGNAL % {"signal": -completed.returncode})
    elif completed.returncode != 0:
        runs.fail(run, log_text.LAUNCH_EXIT % {"code": completed.returncode})
    run.refresh_from_db(fields=["status"])
    return run.status
