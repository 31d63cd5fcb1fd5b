"""The estimate of a training run, before it is launched (webapp.lifecycle.estimates)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext_noop

from ml.training.schedule import plan_steps
from webapp.lib.known_text import Known, KnownTexts
from webapp.lifecycle import queue
from webapp.lifecycle.estimates import RATE_SAMPLE, Estimate, elapsed, from_rate
from webapp.lifecycle.status import JobStatus
from webapp.training import configs
from webapp.training.models import CAUSAL_KINDS, TrainingRun
from webapp.training.runs import RUN_TASK


# optimizer steps, as ml.training.loop counts them; rate = steps / wall time of earlier finished
# runs of the same kind and model. Kinds without optimizer steps of that kind (heads, prompting)
# get no estimate.
def training_run(spec) -> Estimate | None:
    config, problems = spec.full_config()
    train = config.get("train") or {}
    if problems or "effective_batch_size" not in train:
        return None
    if spec.kind in CAUSAL_KINDS:
        examples = spec.dataset.examples.count() if spec.dataset is not None else 0
    else:
        examples = spec.split.train_count if spec.split is not None else 0
    if not examples:
        return None
    # the trainer's own arithmetic (ml.training.schedule), so the estimate counts what it will run
    steps = plan_steps(configs.section_classes(spec.kind)["train"].from_dict(train), examples).total
    earlier = (
        TrainingRun.objects.filter(
            model_version=spec.model_version, kind=spec.kind, status=JobStatus.DONE, total_steps__gt=0
        )
        .order_by("-finished")
        .values_list("total_steps", "started", "finished")[:RATE_SAMPLE]
    )
    return from_rate(steps, "steps", elapsed(earlier), work=f"{spec.kind} run", queue_name=queue.queue_of(RUN_TASK))


# ml.training.memory.SUMMARY_TEMPLATES, as ml writes them (the line and the change it suggests),
# recognised to show the memory line in the reader's language with ml's figures as written
MEMORY = KnownTexts(
    [
        Known(
            gettext_noop("memory: %(total)s GB per GPU of %(gpu)s: does not fit: %(suggestion)s"),
            words=("suggestion",),
        ),
        gettext_noop("memory: %(total)s GB per GPU of %(gpu)s: fits"),
        Known(gettext_noop("%(change)s: %(total)s GB per GPU"), words=("change",)),
        gettext_noop("no single change in the planner makes it fit"),
        gettext_noop("enable gradient checkpointing"),
        gettext_noop("micro-batch %(batch)s (more accumulation steps, same effective batch)"),
        gettext_noop("shard gradients and optimizer states with ZeRO-2 over the %(gpus)s GPUs"),
        gettext_noop("shard all states with FSDP over the %(gpus)s GPUs"),
        gettext_noop("%(gpus)s GPUs with ZeRO-2"),
        gettext_noop("%(gpus)s GPUs with FSDP"),
        gettext_noop("%(gpus)s GPUs"),
        gettext_noop("LoRA (r %(r)s) instead of full fine-tuning"),
    ]
)


def memory_line(spec) -> str | None:
    """'memory: X GB per GPU of Y: fits' (or '...: does not fit: <change>'), in the reader's
    language, for a DSM, CPT or SFT run on TRAINING_GPU_MEMORY_GB GPUs, as many as
    TRAINING_LAUNCHER starts processes on each of TRAINING_NNODES machines, under the run's
    sharding (none: DDP; fsdp, with its CPU offload); None on the CPU (no GPU memory set), or
    without a local model folder."""
    from ml.training.memory import PlanError, PlanSettings, config_sharding, model_shape, plan

    if settings.TRAINING_GPU_MEMORY_GB <= 0 or spec.model_version is None:
        return None
    config, problems = spec.full_config()
    train = config.get("train") or {}
    if problems or "finetune" not in train:
        return None
    folder = Path(spec.model_version.path)
    if not (folder / "config.json").is_file():
        folder = Path(settings.MODEL_DIR) / spec.model_version.path
    try:
        shape = model_shape(str(folder))
        targets = train.get("lora_target_modules")
        result = plan(
            shape,
            PlanSettings(
                finetune=train["finetune"],
                sharding=config_sharding(train.get("sharding", "none")),
                cpu_offload=bool(train.get("cpu_offload")),
                precision="fp32" if train.get("precision") == "fp32" else "bf16",
                gpus=_launcher_processes(settings.TRAINING_LAUNCHER) * settings.TRAINING_NNODES,
                gpu_memory_gb=settings.TRAINING_GPU_MEMORY_GB,
                seq_len=train.get("max_length") or 2048,
                micro_batch=train.get("micro_batch_size") or 1,
                checkpointing=bool(train.get("gradient_checkpointing")),
                lora_r=train.get("lora_r") or 32,
                lora_targets=tuple(targets) if targets else None,
            ),
        )
    except (PlanError, ValueError, OSError):
        return None
    return MEMORY.render(result.summary(), translation)


def _launcher_processes(launcher: str) -> int:
    match = re.search(r"--(?:num_processes|num-processes|nproc[-_]per[-_]node)[ =](\d+)", launcher)
    return int(match.group(1)) if match else 1
