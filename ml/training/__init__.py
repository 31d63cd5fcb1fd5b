"""Training and evaluation for DecSelfMask (contract with the web app: ml/training/CONTRACT.md).

    config.py      CausalLMConfig, SFTConfig, HeadConfig, PromptingConfig (paper defaults)
    data.py        TextPair, LabeledItem, split_items, sft_prompt
    encoding.py    prompt + answer -> tokens, chat template, answer-only supervision, truncation
    batching.py    data order, length-sorted micro-batches, left padding, the loss
    vocab.py       the mask token (added and embeddings resized when missing)
    schedule.py    optimizer steps, warmup, and the steps that can change the model (plan_steps)
    loop.py        train_causal_lm: the training loop (accelerate, accumulation, checkpoints)
    finetune.py    full / LoRA, optimizer, the final folder
    checkpoint.py  checkpoint-last: atomic save, exact resume
    sharding.py    FSDP2: wrapping, sharded checkpoints, the gathered final model
    sft.py         train_sft, predict_sft, self_label
    scoring.py     answers constrained to options by log-likelihood
    prompting.py   0-shot / 2-shot baselines
    features.py    cached last-token hidden states
    heads.py       classification heads, HeadBundle
    evaluation.py  evaluate, average_variants, EvalResult

Names are imported lazily, so `from ml.training import CausalLMConfig` does not import torch.
No Django, no Celery.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "CausalLMConfig": "config",
    "SFTConfig": "config",
    "HeadConfig": "config",
    "PromptingConfig": "config",
    "TextPair": "data",
    "LabeledItem": "data",
    "split_items": "data",
    "sft_prompt": "data",
    "sft_pairs": "data",
    "ProgressEvent": "progress",
    "TrainResult": "progress",
    "TrainingCancelled": "errors",
    "TrainingError": "errors",
    "TrainingInputError": "errors",
    "train_causal_lm": "loop",
    "plan_steps": "schedule",
    "StepPlan": "schedule",
    "train_sft": "sft",
    "predict_sft": "sft",
    "self_label": "sft",
    "extract_features": "features",
    "train_heads": "heads",
    "HeadBundle": "heads",
    "predict_prompting": "prompting",
    "SYSTEM_PROMPTS": "prompting",
    "evaluate": "evaluation",
    "average_variants": "evaluation",
    "EvalResult": "evaluation",
    "mask_token_for": "vocab",
    "ensure_mask_token": "vocab",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ml.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ml.training.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
