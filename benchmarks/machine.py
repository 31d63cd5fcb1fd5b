"""What a benchmark's figures depend on besides the code: the CPU's vector and bf16 support and
how busy the machine was. Every benchmark puts `describe()` in its JSON, so a figure quoted in
README says which hardware and load it belongs to.

The flags come from /proc/cpuinfo (Linux; elsewhere they read as unknown, None). torch's own
view (`torch.backends.cpu.get_cpu_capability()`: "DEFAULT", "AVX2", "AVX512", ...) decides
which kernels run: bf16 matmuls are fast only with avx512_bf16 or amx_bf16, otherwise they are
emulated and slower than fp32. A benchmark that has not imported torch (the database ones,
whose memory figures it would distort) gets torch's view from a short child process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")
_CAPABILITY = "import torch; print(torch.backends.cpu.get_cpu_capability())"


def cpu_flags(cpuinfo: str | None = None) -> dict[str, bool | None]:
    """Each of FLAGS -> present on the first CPU listed, or None where /proc/cpuinfo is unreadable."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return dict.fromkeys(FLAGS)
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            present = set(value.split())
            return {flag: flag in present for flag in FLAGS}
    return dict.fromkeys(FLAGS)


def cpu_model(cpuinfo: str | None = None) -> str | None:
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
    except OSError:
        return None
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return None


def torch_capability() -> str | None:
    """torch's CPU capability, read in this process when torch is loaded, else in a child."""
    if "torch" in sys.modules:
        return sys.modules["torch"].backends.cpu.get_cpu_capability()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CAPABILITY],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def describe() -> dict:
    """The machine a figure was measured on, as JSON: CPU model, cores, flags, torch's capability,
    and the load average now (call it when the figures are taken, e.g. at the end)."""
    flags = cpu_flags()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cpu_flags": flags,
        "native_bf16": None if flags["avx512_bf16"] is None else bool(flags["avx512_bf16"] or flags["amx_bf16"]),
        "torch_cpu_capability": torch_capability(),
        "load_average_1_5_15": load_average(),
    }
