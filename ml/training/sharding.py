"""Sharded training with FSDP2 (`torch.distributed.fsdp.fully_shard`): wrapping, state dicts, and
their save and load. The loop (loop.py) calls these when `config.sharding == "fsdp"`.

Wrapping: every decoder layer (the classes the model lists in `_no_split_modules`, e.g.
LlamaDecoderLayer) is one FSDP unit, then the root takes the rest (embeddings, final norm, output
head). Each process holds 1/N of every trained state (weights, gradients, AdamW moments); under
"fsdp" a unit's full weights exist only while it runs (all-gathered before its forward and again
before its backward, freed after; ZeRO-3 / FULL_SHARD); under "zero2" they stay from its forward
to its backward (reshard_after_forward=False: one all-gather a micro-batch, more memory).
Gradient checkpointing (prepare_model) composes with it; the optimizer is made after `shard`,
over the sharded parameters. Gradients are reduce-scattered after each micro-batch's backward,
so no process ever holds a whole model's gradients.

Precision: on a GPU with bf16, a run whose precision resolves to bf16 gets FSDP mixed precision
(MixedPrecisionPolicy: bf16 weights for compute and all-gathers, gradients reduced in fp32, fp32
sharded master weights for AdamW) instead of autocast. On the CPU (gloo) weights, all-gathers and
reductions stay fp32, and a bf16 precision is autocast over them, as in an unsharded run.
`cpu_offload` keeps the sharded states in host memory (CPUOffloadPolicy; the optimizer steps
there) for a model whose shards do not fit on the GPUs.

One process: FSDP needs a process group; a run not started by a launcher gets a group of one
(gloo or nccl, an in-memory store), so an fsdp run has one checkpoint format whatever the number
of processes, and CPU offload works on one GPU. The group is destroyed at the end of the run.

Checkpoints (`save` / `load`): the model's and the optimizer's sharded state dicts
(torch.distributed.state_dict) written by every process into `<checkpoint>/sharded/` with
torch.distributed.checkpoint; the folder can be read back by another number of processes
(DCP reshards). Every process must see the same output folder (one machine, or a shared
filesystem across machines). The final model: `full_state_dict` gathers every weight on rank 0
(in host memory, unit by unit) and `rebuild` turns it into a plain transformers model there.

Checksums: `checksum` adds each process's sum over its own shards (exact integer arithmetic,
mod 2^64) across processes, so it equals the unsharded model's `finetune.weights_checksum`.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from ml.training import refusals
from ml.training.errors import TrainingError, TrainingInputError

SHARDED = "sharded"  # the DCP folder inside a checkpoint
_OWN_GROUP = {"made": False}  # a process group of one made by `shard` (destroyed by `release`)


def enabled(config) -> bool:
    return getattr(config, "sharding", "none") in ("fsdp", "zero2")


def mixed_precision(amp: torch.dtype | None, device: torch.device):
    """FSDP's MixedPrecisionPolicy for a bf16 run on a GPU (bf16 compute, fp32 reductions), else
    None: fp32 shards, and the caller autocasts when `amp` asks for it."""
    if amp is None or device.type != "cuda":
        return None
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(param_dtype=amp, reduce_dtype=torch.float32)


def _ensure_group(device: torch.device) -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    _OWN_GROUP["made"] = True


def release() -> None:
    """Destroy the process group of one that `shard` made (a launcher's group is left alone)."""
    import torch.distributed as dist

    if _OWN_GROUP["made"] and dist.is_initialized():
        dist.destroy_process_group()
    _OWN_GROUP["made"] = False


def leave_group() -> None:
    """At the end of a launched process (torchrun): wait for every rank, then destroy the
    launcher's group. A rank that exits with the group alive while another still works can be
    aborted by gloo's threads at exit (SIGABRT), which the launcher reports as a failure."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def broadcast(value):
    """Rank 0's `value` on every process (a small picklable object)."""
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    import torch.distributed as dist

    dist.barrier()


def _layer_classes(model) -> set[str]:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    names = set(getattr(base, "_no_split_modules", None) or ())
    if not names:
        raise TrainingInputError(refusals.NO_LAYER_CLASS, model=type(base).__name__)
    return names


def shard(model, config, device: torch.device, amp: torch.dtype | None):
    """`model` sharded in place over every process (each decoder layer, then the root); the
    optimizer must be made after this. Returns the model (the same object, now an FSDPModule)."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

    _ensure_group(device)
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    options = {
        "mesh": mesh,
        # zero2: a layer's weights stay gathered from its forward to its backward (no second
        # all-gather; the whole model's weights exist during a micro-batch, as under ZeRO-2)
        "reshard_after_forward": config.sharding != "zero2",
        "mp_policy": mixed_precision(amp, device) or MixedPrecisionPolicy(),
        "offload_policy": (
            CPUOffloadPolicy(pin_memory=device.type == "cuda") if config.cpu_offload else OffloadPolicy()
        ),
    }
    classes = _layer_classes(model)
    layers = [m for m in model.modules() if type(m).__name__ in classes]
    if not layers:
        raise TrainingInputError(refusals.NO_LAYER, classes=sorted(classes))
    for layer in layers:
        fully_shard(layer, **options)
    fully_shard(model, **options)
    return model


def checksum(model, chunk: int = 1 << 24) -> dict[str, int]:
    """`finetune.weights_checksum` of the whole model: every process sums its own shards (the
    integer sum of the bit patterns, mod 2^64) and the sums are added across processes.
    Collective: every process must call it."""
    import torch.distributed as dist

    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    local = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            mine = p.to_local() if hasattr(p, "to_local") else p  # this process's shard
            flat = mine.detach().reshape(-1).view(integer[mine.element_size()])
            total = 0
            for start in range(0, flat.numel(), chunk):
                total += int(flat[start : start + chunk].to(torch.int64).sum())
            local[name] = total
    everyone = [None] * dist.get_world_size()
    dist.all_gather_object(everyone, local)
    return {name: sum(part[name] for part in everyone) % (1 << 64) for name in local}


def _state(model, optimizer):
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    # Trainable parameters only (a LoRA run: the adapter; the frozen base comes from the model).
    options = StateDictOptions(ignore_frozen_params=True)
    model_state, optim_state = get_state_dict(model, optimizer, options=options)
    return {"model": model_state, "optimizer": optim_state}, options


def save(folder: Path, model, optimizer) -> None:
    """Every process writes its shards of the model's trainable weights and of the optimizer
    into `folder/sharded/` (collective). The caller makes the folder atomic (checkpoint.py)."""
    import torch.distributed.checkpoint as dcp

    state, _ = _state(model, optimizer)
    dcp.save(state, checkpoint_id=str(Path(folder) / SHARDED))


def load(folder: Path, model, optimizer) -> None:
    """Read `folder/sharded/` into the sharded model and optimizer (collective; any number of
    processes can read what another number wrote)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import set_state_dict

    path = Path(folder) / SHARDED
    if not (path / ".metadata").is_file():
        raise TrainingError(refusals.NO_SHARDED_STATE, folder=folder, path=SHARDED)
    state, options = _state(model, optimizer)
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(
        model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"], options=options
    )


def full_state_dict(model) -> dict[str, torch.Tensor]:
    """Every weight and buffer, whole, in host memory on rank 0 ({} on the others). Collective."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


def rebuild(sharded_model, state: dict[str, torch.Tensor], config):
    """A plain (unsharded) model of `sharded_model`'s class and config holding `state`, built
    without allocating weights first (meta device), on the CPU: what `finetune.save_final` takes.
    A LoRA run's model is rebuilt as the same peft model, so save_final merges it as usual."""
    from accelerate import init_empty_weights

    from ml.training.finetune import prepare_model

    peft = hasattr(sharded_model, "get_base_model")
    base = sharded_model.get_base_model() if peft else sharded_model
    base_class = _plain_class(type(base))
    with init_empty_weights(include_buffers=False):
        plain = base_class._from_config(base.config, dtype=torch.float32)
        if peft:
            plain = prepare_model(plain, config)
    missing, unexpected = plain.load_state_dict(state, strict=False, assign=True)
    missing = [name for name in missing if _on_meta(plain, name)]
    if missing or unexpected:
        raise TrainingError(refusals.GATHERED_MISMATCH, missing=missing[:3], unexpected=unexpected[:3])
    (plain.get_base_model() if peft else plain).tie_weights()
    with contextlib.suppress(AttributeError):
        plain.config.use_cache = False
    return plain


def _plain_class(cls):
    """fully_shard makes each sharded module an instance of a class `FSDP<Name>` derived from
    its own; the original class is the next in the MRO."""
    from torch.distributed.fsdp import FSDPModule

    for klass in cls.__mro__:
        if not issubclass(klass, FSDPModule):
            return klass
    raise TrainingError(refusals.NO_PLAIN_CLASS, cls=cls.__name__)


def _on_meta(model, name: str) -> bool:
    owner, _, attr = name.rpartition(".")
    module = model.get_submodule(owner) if owner else model
    tensor = getattr(module, attr, None)
    return tensor is not None and tensor.is_meta
