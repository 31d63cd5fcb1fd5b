"""What a run needs to be reproduced: the code version and the library versions it ran with.

Collected by the worker when it starts a run (its environment is the one that matters), and
by the launch for the code version the web app saw. Never raises: an unknown value is "unknown".
"""

from __future__ import annotations

import os
import platform
import socket
from importlib import metadata

from django.conf import settings

from webapp.lib.code_version import code_version as lib_code_version

LIBRARIES = ("torch", "transformers", "peft", "accelerate", "numpy", "tokenizers", "safetensors")


def code_version() -> str:
    return lib_code_version(settings.BASE_DIR, settings.CODE_VERSION)


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
