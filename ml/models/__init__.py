"""Named models, model families and loading. See load_model().

The loading names (load_model, LoadedModel, pick_device, pick_dtype, preferred_dtype,
cpu_has_native_bf16) are imported lazily, so the families (and the memory planner that reads
them) do not import torch.
"""

from __future__ import annotations

import importlib

from ml.models.convert import convert_default_model, convert_registered
from ml.models.errors import ModelError, ModelNotFoundError, UnsupportedFamilyError
from ml.models.families import FAMILIES, Family, family_for
from ml.models.registry import DEFAULT_MODEL, REGISTRY, default_model_dir

_LOADING = ("LoadedModel", "cpu_has_native_bf16", "load_model", "pick_device", "pick_dtype", "preferred_dtype")

__all__ = [
    "DEFAULT_MODEL",
    "FAMILIES",
    "REGISTRY",
    "Family",
    "LoadedModel",
    "ModelError",
    "ModelNotFoundError",
    "UnsupportedFamilyError",
    "convert_default_model",
    "convert_registered",
    "cpu_has_native_bf16",
    "default_model_dir",
    "family_for",
    "load_model",
    "pick_device",
    "pick_dtype",
    "preferred_dtype",
]


def __getattr__(name: str):
    if name not in _LOADING:
        raise AttributeError(f"module 'ml.models' has no attribute {name!r}")
    value = getattr(importlib.import_module("ml.models.loading"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LOADING))
