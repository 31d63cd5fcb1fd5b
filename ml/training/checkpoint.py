"""`output_dir/checkpoint-last/`: everything needed to continue a run exactly.

    trainable.safetensors  the trainable parameters by name (all weights, or the LoRA adapter)
    training_state.pt      optimizer, scheduler, RNG states (torch CPU/CUDA, numpy, random)
    sharded/               instead of the weights and the optimizer, for a sharded (fsdp) run:
                           every process's shards (torch.distributed.checkpoint, sharding.py)
    state.json             step, tokens, seconds, history, the config, a fingerprint of the
                           encoded data, the mask token

It is written into a temporary folder and renamed into place; the previous checkpoint is
moved aside first (a folder cannot be renamed onto a non-empty one) and deleted after, so a
crash at any moment leaves either the old or the new checkpoint (`load` also looks for the
moved-aside one).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from ml.training import refusals
from ml.training.errors import TrainingInputError

CHECKPOINT = "checkpoint-last"
TRAINABLE = "trainable.safetensors"
_ASIDE = ".checkpoint-previous"
FORMAT = 1
# Config keys that may change between a run and its resumption (they do not change numerics).
# (max_steps is not one: it sets the length of the learning-rate schedule.)
# (cpu_offload moves where a sharded run keeps its states, not their values.)
RESUMABLE_CHANGES = {"checkpoint_every", "gradient_checkpointing", "cpu_offload"}


@dataclass
class Checkpoint:
    step: int
    tokens: int
    seconds: float
    config: dict
    data_fingerprint: str
    mask_token: str | None
    history: list[dict] = field(default_factory=list)
    trainable: dict | None = None  # name -> tensor
    optimizer: dict | None = None
    scheduler: dict | None = None
    rng: dict | None = None


def capture_rng() -> dict:
    state = {"torch": torch.get_rng_state(), "numpy": _numpy_state(), "python": random.getstate()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))


def _numpy_state():
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return (name, keys.tolist(), int(pos), int(has_gauss), float(gauss))


def save(output_dir: Path, ckpt: Checkpoint) -> Path:
    """Write checkpoint-last atomically (one process: the weights are in `ckpt.trainable`)."""
    tmp = staging(output_dir)
    write(tmp, ckpt)
    return publish(output_dir, tmp)


def staging(output_dir: Path) -> Path:
    """An empty temporary folder of this process to write a checkpoint into before `publish`.
    (A sharded checkpoint: every process writes its shards into rank 0's, see sharding.py.)"""
    tmp = Path(output_dir) / f".{CHECKPOINT}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def write(tmp: Path, ckpt: Checkpoint) -> None:
    """state.json, training_state.pt and, when given, trainable.safetensors into `tmp`. A sharded
    checkpoint has no trainable weights or optimizer here: they are in tmp/sharded/."""
    from safetensors.torch import save_file

    if ckpt.trainable is not None:
        save_file({k: v.detach().contiguous().cpu() for k, v in ckpt.trainable.items()}, tmp / TRAINABLE)
    torch.save({"optimizer": ckpt.optimizer, "scheduler": ckpt.scheduler, "rng": ckpt.rng}, tmp / "training_state.pt")
    meta = {
        "format": FORMAT,
        "step": ckpt.step,
        "tokens": ckpt.tokens,
        "seconds": ckpt.seconds,
        "config": ckpt.config,
        "data_fingerprint": ckpt.data_fingerprint,
        "mask_token": ckpt.mask_token,
        "history": ckpt.history,
    }
    (tmp / "state.json").write_text(json.dumps(meta, indent=1))


def publish(output_dir: Path, tmp: Path) -> Path:
    """Rename the written `tmp` into checkpoint-last (the previous one moved aside first)."""
    output_dir = Path(output_dir)
    target = output_dir / CHECKPOINT
    aside = output_dir / _ASIDE
    shutil.rmtree(aside, ignore_errors=True)
    if target.exists():
        os.replace(target, aside)
    os.replace(tmp, target)
    shutil.rmtree(aside, ignore_errors=True)
    return target


def find(output_dir: Path) -> Path | None:
    for name in (CHECKPOINT, _ASIDE):
        folder = Path(output_dir) / name
        if (folder / "state.json").is_file():
            return folder
    return None


def load(folder: Path, device: torch.device | str = "cpu") -> Checkpoint:
    from safetensors.torch import load_file

    folder = Path(folder)
    device = torch.device(device)
    # safetensors takes "cpu" but refuses "cpu:0", the device accelerate gives each rank of a
    # process group on the CPU.
    device = "cpu" if device.type == "cpu" else str(device)
    meta = json.loads((folder / "state.json").read_text())
    if meta.get("format") != FORMAT:
        raise TrainingInputError(refusals.CHECKPOINT_FORMAT, folder=folder, format=repr(meta.get("format")))
    blobs = torch.load(folder / "training_state.pt", map_location="cpu", weights_only=True)
    return Checkpoint(
        step=meta["step"],
        tokens=meta["tokens"],
        seconds=meta["seconds"],
        config=meta["config"],
        data_fingerprint=meta["data_fingerprint"],
        mask_token=meta["mask_token"],
        history=meta["history"],
        trainable=load_file(folder / TRAINABLE, device=device) if (folder / TRAINABLE).is_file() else None,
        optimizer=blobs["optimizer"],
        scheduler=blobs["scheduler"],
        rng=blobs["rng"],
    )


def config_changes(saved: dict, current: dict) -> list[str]:
    """Keys whose values differ and that must not change when resuming."""
    keys = (set(saved) | set(current)) - RESUMABLE_CHANGES
    return sorted(k for k in keys if saved.get(k) != current.get(k))


def remove(output_dir: Path) -> None:
    """The checkpoint, the moved-aside one, and the half-written folders of processes killed
    while saving (an earlier attempt's: `save` clears only its own process's)."""
    output_dir = Path(output_dir)
    for folder in [output_dir / CHECKPOINT, output_dir / _ASIDE, *output_dir.glob(f".{CHECKPOINT}.tmp-*")]:
        shutil.rmtree(folder, ignore_errors=True)
