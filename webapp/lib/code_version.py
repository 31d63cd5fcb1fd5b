"""Which code ran: recorded with every training run and every dataset export."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path


@functools.lru_cache(maxsize=8)
def code_version(root: Path | str, fallback: str = "unknown") -> str:
    """`git rev-parse HEAD` of the checkout at `root`, with "-dirty" when tracked files differ from
    it; `fallback` (settings.CODE_VERSION in an image without git) when there is no checkout.

    Cached per process: a worker records the code it started with, and asking git once per run
    or export keeps a slow `git diff` off every call."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=root, capture_output=True, timeout=10)
            return head.stdout.strip() + ("-dirty" if dirty.returncode == 1 else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return fallback
