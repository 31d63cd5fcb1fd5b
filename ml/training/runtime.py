"""Device, precision and the accelerate objects of a training run."""

from __future__ import annotations

import contextlib

import torch

from ml.training import refusals
from ml.training.errors import TrainingError


def autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """bf16 autocast, or None for plain fp32. "auto": bf16 on CUDA with bf16 support and on
    CPUs with native bf16 (AVX512-BF16 / AMX), the rule of ml.models.preferred_dtype.
    Measured on this project's shared 2-core AVX512-BF16 CPU (SmolLM2-135M, 4 x 256 tokens,
    full parameters, forward + backward + AdamW, other jobs running): bf16 autocast steps
    took 21-34 s against 36-54 s in fp32 (with the answer-only output layer: 21-26 s against
    51-54 s), so bf16 is the CPU default here too. Autocast keeps fp32 master weights."""
    if precision == "fp32":
        return None
    if precision == "bf16":
        if device.type == "cuda" and not torch.cuda.is_bf16_supported():
            raise TrainingError(refusals.NO_BF16)
        return torch.bfloat16
    from ml.models import preferred_dtype

    return torch.bfloat16 if preferred_dtype(device) == torch.bfloat16 else None


def autocast(device: torch.device, dtype: torch.dtype | None):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_accelerator():
    """A plain Accelerator: device placement, DDP under `accelerate launch` / `torchrun`,
    no_sync during accumulation. Mixed precision is handled by our own autocast (the
    accelerate state is a process-wide singleton that cannot change precision between runs)."""
    from accelerate import Accelerator

    # Without a GPU, accelerate joins a torchrun / accelerate launch group (gloo) only when told
    # it runs on the CPU: otherwise every rank trains alone on all the data, as a process of one.
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    # `prepare` would wrap forward in autocast if the (process-wide) state says bf16/fp16,
    # e.g. after a transformers Trainer ran in this process: precision is ours alone.
    accelerator.native_amp = False
    return accelerator
