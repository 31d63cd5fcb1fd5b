"""Full fine-tuning or LoRA: which parameters train, the optimizer, and the final folder.

- full: every parameter trains; a half-precision model is upcast to fp32 for training
  (AdamW on bf16 weights loses small updates) and saved back in its loaded dtype.
- lora: peft LoRA (r, alpha, dropout from the config) on every linear layer but the output
  head unless `lora_target_modules` says otherwise; the base stays frozen in its dtype.
  `final/` holds the adapter MERGED into a full model (usable at once by load_model and for
  relevance); the adapter alone is kept in `output_dir/adapter/`.
Weight decay applies to matrices (2-D and up), not to biases and norm weights (nanoGPT, HF Trainer).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch

from ml.training import refusals
from ml.training.errors import TrainingInputError

FINAL = "final"
ADAPTER = "adapter"


def prepare_model(model, config):
    """The model to train (a peft wrapper for LoRA), in train mode."""
    if config.finetune == "lora":
        from peft import LoraConfig, get_peft_model

        for p in model.parameters():
            p.requires_grad_(False)
        lora = LoraConfig(
            task_type="CAUSAL_LM",
            r=config.lora_r,
            lora_alpha=config.lora_alpha,
            lora_dropout=config.lora_dropout,
            target_modules=config.lora_target_modules or "all-linear",
        )
        model = get_peft_model(model, lora)
    else:
        if model.dtype in (torch.bfloat16, torch.float16):
            model.float()
        for p in model.parameters():
            p.requires_grad_(True)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    return model


def trainable_parameters(model) -> dict[str, torch.nn.Parameter]:
    return {name: p for name, p in model.named_parameters() if p.requires_grad}


def weights_checksum(model, chunk: int = 1 << 24) -> dict[str, int]:
    """{name: checksum} of the trainable parameters: the sum of their bit patterns as integers
    (wrapping at 64 bits), exact and the same on any device or reduction order, so any change
    of any element shows (short of changes that cancel to the bit). Read in chunks of `chunk`
    elements: memory stays bounded however large a parameter is; no copy of the model is kept."""
    integer = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    sums = {}
    with torch.no_grad():
        for name, p in trainable_parameters(model).items():
            flat = p.detach().reshape(-1).view(integer[p.element_size()])
            total = 0
            for start in range(0, flat.numel(), chunk):
                total += int(flat[start : start + chunk].to(torch.int64).sum())
            sums[name] = total % (1 << 64)
    return sums


def load_trainable(model, tensors: dict) -> None:
    params = trainable_parameters(model)
    if set(params) != set(tensors):
        missing, extra = sorted(set(params) - set(tensors)), sorted(set(tensors) - set(params))
        raise TrainingInputError(refusals.CHECKPOINT_MISMATCH, missing=missing[:3], unexpected=extra[:3])
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(tensors[name])


def make_optimizer(model, config) -> torch.optim.AdamW:
    decay, no_decay = [], []
    for p in trainable_parameters(model).values():
        (decay if p.dim() >= 2 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=config.lr, eps=config.adam_eps)


def save_final(model, tokenizer, config, output_dir: Path, *, dtype: torch.dtype) -> tuple[Path, object]:
    """Write `output_dir/final/` (under a temporary name, renamed when complete) and return
    it with the plain transformers model (merged for LoRA), in eval mode, in `dtype`."""
    output_dir = Path(output_dir)
    if config.finetune == "lora":
        adapter_tmp = output_dir / f".{ADAPTER}.tmp-{os.getpid()}"
        model.save_pretrained(adapter_tmp, save_embedding_layers=False)
        tokenizer.save_pretrained(adapter_tmp)
        _replace(adapter_tmp, output_dir / ADAPTER)
        model = model.merge_and_unload()
    if config.gradient_checkpointing:
        model.gradient_checkpointing_disable()
    model.config.use_cache = True
    model.to(dtype).eval()
    tmp = output_dir / f".{FINAL}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    final = output_dir / FINAL
    _replace(tmp, final)
    return final, model


def _replace(tmp: Path, target: Path) -> None:
    aside = target.with_name(f".{target.name}.previous")
    shutil.rmtree(aside, ignore_errors=True)
    if target.exists():
        os.replace(target, aside)
    os.replace(tmp, target)
    shutil.rmtree(aside, ignore_errors=True)
