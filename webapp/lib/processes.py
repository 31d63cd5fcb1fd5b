"""Child processes of a launcher, on Linux: keep the ones a dead launcher leaves behind.

torchrun starts each rank in a session of its own. When a launcher is killed outright, its
ranks get SIGKILL from the kernel (train_run sets PR_SET_PDEATHSIG), but dying takes them a
moment (freeing a model's memory, closing files), and a worker that queued the run again at
once could see the next attempt start beside them. A child subreaper inherits the orphans
instead of init, so it can wait for each to be gone before it lets the run go.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import sys
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> bool:
    """Make this process inherit its descendants' orphans. False where the OS has no such thing."""
    if not sys.platform.startswith("linux"):
        return False
    return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) == 0


def children() -> list[int]:
    """This process's children (every thread's, as the kernel lists them)."""
    found = []
    for listing in Path("/proc/self/task").glob("*/children"):
        try:
            found.extend(int(pid) for pid in listing.read_text().split())
        except OSError:  # a thread that ended meanwhile
            continue
    return found


def reap(pids: list[int], timeout: float) -> list[int]:
    """Wait up to `timeout` seconds for each child in `pids` to exit, reaping it. Returns those
    still running at the deadline (a process stuck in the kernel)."""
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours, or reaped already
                done = pid
            if done:
                left.remove(pid)
        if left:
            time.sleep(0.05)
    return left


def launch_command(
    launcher: str, argv: list[str], *, nnodes: int = 1, endpoint: str = "", rdzv_id: str = ""
) -> list[str]:
    """`launcher` + `argv`; across `nnodes` machines (> 1) torchrun's c10d rendezvous options are
    added: every machine's agent runs this same command and they meet at `endpoint` (host:port)
    under `rdzv_id`. Raises ValueError for a launcher that cannot do that (accelerate launch, or
    torchrun --standalone, which is one machine's rendezvous by definition)."""
    words = shlex.split(launcher)
    if nnodes > 1:
        program = " ".join(words[:3])
        if not ("torchrun" in Path(words[0]).name or "torch.distributed.run" in program):
            raise ValueError(f"training on {nnodes} machines needs a torchrun launcher, not {words[0]!r}")
        if "--standalone" in words:
            raise ValueError("training on several machines: remove --standalone from TRAINING_LAUNCHER")
        words += ["--nnodes", str(nnodes), "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint]
        words += ["--rdzv-id", rdzv_id]
    return [*words, *argv]
