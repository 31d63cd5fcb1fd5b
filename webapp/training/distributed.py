"""The command that trains one attempt of a distributed run, the same on every machine:
`<TRAINING_LAUNCHER> [a c10d rendezvous across TRAINING_NNODES machines] manage.py train_run <id>
--claimed`, started in the checkout's root. The training worker that claims the run starts it
(workers.training); `manage.py train_node` starts it on each other machine, so its agent joins the
rendezvous. Both derive the same rendezvous id from the run and its attempt."""

from django.conf import settings

from webapp.lib import processes


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
