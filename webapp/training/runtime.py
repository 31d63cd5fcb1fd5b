"""What every run kind needs: loading models, registering trained ones, the SFT mask token,
checking for Cancel between phases, freeing memory, reading the run's config sections."""

from __future__ import annotations

import gc
import os

from django.conf import settings

from webapp.pipeline import modelcache
from webapp.pipeline.models import ModelVersion
from webapp.training import log_text
from webapp.training.models import RunKind, TrainingRun
from webapp.training.reporting import Reporter


class Cancelled(Exception):
    """Raised between the phases of a run when its cancel was requested."""


class NothingLearned(Exception):
    """Training ran but left the trainable weights exactly as they started (ml.training's
    `TrainResult.weights_changed`): the run fails and no model version is registered."""


def require_learned(result) -> None:
    """Raise NothingLearned when the trainer reports unchanged weights."""
    if not result.weights_changed:
        raise NothingLearned(log_text.NOTHING_LEARNED % {"steps": result.steps})


def is_main_process() -> bool:
    """Rank 0 of a distributed launch (or the only process): the one that writes."""
    return int(os.environ.get("RANK", "0")) == 0


def load(model_version: ModelVersion | str, *, training: bool):
    """Load a model for training (fp32 master weights; precision is the trainer's business) or
    inference (the device's preferred dtype). Under torchrun each rank takes its own GPU."""
    import torch

    from ml.models import load_model, pick_device

    path = model_version.path if isinstance(model_version, ModelVersion) else str(model_version)
    path = modelcache.model_folder(path)  # a published model (s3://, file://): this machine's cached copy
    local_rank = os.environ.get("LOCAL_RANK")
    device = torch.device(f"cuda:{local_rank}") if local_rank and torch.cuda.is_available() else pick_device()
    return load_model(path, model_dir=settings.MODEL_DIR, device=device, dtype=torch.float32 if training else None)


def register(run: TrainingRun, final_dir, variant: str) -> ModelVersion:
    """The trained model as a ModelVersion (parent: the model it started from), usable at once
    for relevance jobs and further runs. Idempotent for a run. With ARTIFACT_STORAGE_URL the
    final folder is published there first and registered under its storage URI, which every
    worker can reach (webapp.pipeline.modelcache.publish_model)."""
    base = run.model_version
    name = f"{base.name}+{variant}-run{run.pk}"[-200:]
    existing = ModelVersion.objects.filter(name=name).first()
    if existing is not None:
        return existing
    model, _ = ModelVersion.objects.get_or_create(
        name=name,
        defaults={
            "family": base.family,
            "path": modelcache.publish_model(final_dir, f"run{run.pk}-{variant}"),
            "parent": base,
            "produced_by": f"training run {run.pk}",
        },
    )
    return model


def mask_token_for(loaded, options: dict) -> str:
    """The SFT prompts' mask token: the configured one, else the model's (ml.training.mask_token_for)."""
    from ml.training import mask_token_for as model_mask_token

    return options.get("mask_token") or model_mask_token(loaded)


def checked(reporter: Reporter) -> None:
    """Raise Cancelled when the run's cancel was requested (between phases)."""
    if reporter.should_stop():
        raise Cancelled


def release() -> None:
    """Give back the memory of a model the caller has just dropped (`del loaded`)."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def train_section(run: TrainingRun, name: str = "train"):
    from ml import training as ml_training

    cls = {RunKind.DSM: ml_training.CausalLMConfig, RunKind.CPT: ml_training.CausalLMConfig}.get(
        run.kind, ml_training.SFTConfig
    )
    return cls.from_dict(run.config[name])


def result_summary(result) -> dict:
    return {
        "steps": result.steps,
        "tokens": result.tokens,
        "train_seconds": round(result.seconds, 2),
        "final_loss": result.final_loss,
    }
