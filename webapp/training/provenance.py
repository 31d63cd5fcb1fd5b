"""What a run needs to be reproduced: the code version and the library versions it ran with.

Collected by the worker when it starts a run (its environment is the one that matters), and
by the launch for the code version the web app saw. Never raises: an unknown value is "unknown".
"""
from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from django.conf import settings

LIBRARIES = ("torch", "transformers", "peft", "accelerate", "numpy", "tokenizers", "safetensors")


def code_version() -> str:
    """`git rev-parse HEAD` of the checkout (with "-dirty" if tracked files changed), else the
    DSM_CODE_VERSION / GIT_COMMIT environment variable (set it when building images), else "unknown"."""
    root = Path(settings.BASE_DIR)
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--"], cwd=root, capture_output=True, timeout=10)
            return head.stdout.strip() + ("-dirty" if dirty.returncode == 1 else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("DSM_CODE_VERSION") or os.environ.get("GIT_COMMIT") or "unknown"


def library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def environment() -> dict:
    """Everything recorded on a run when a worker starts it."""
    info = {
        "code_version": code_version(),
        "libraries": library_versions(),
        "python": platform.python_version(),
        "host": socket.gethostname(),
    }
    try:
        import torch

        info["device"] = "cuda" if torch.cuda.is_available() else "cpu"
        info["gpus"] = torch.cuda.device_count()
        info["torch_threads"] = torch.get_num_threads()
        if info["gpus"]:
            info["gpu_name"] = torch.cuda.get_device_name(0)
    except Exception:  # noqa: BLE001 - provenance must never stop a run
        info["device"] = "unknown"
    for key in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        if key in os.environ:
            info[key.lower()] = os.environ[key]
    return info
