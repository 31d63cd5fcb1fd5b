"""Supported model families, one small file each. `family_for(config)` picks one."""

from __future__ import annotations

from ml.models.errors import UnsupportedFamilyError
from ml.models.families import gemma3, llama, qwen2, qwen3
from ml.models.families.base import Family, Layout

FAMILIES: dict[str, Family] = {f.name: f for f in (llama.FAMILY, qwen2.FAMILY, qwen3.FAMILY, gemma3.FAMILY)}


def supported() -> str:
    return ", ".join(FAMILIES)


def family_for(config) -> Family:
    """The family of a transformers config or a config.json dict (by its `model_type`); the one
    lookup by model_type outside the family files. UnsupportedFamilyError for any other."""
    model_type = config.get("model_type") if isinstance(config, dict) else getattr(config, "model_type", None)
    for family in FAMILIES.values():
        if model_type in family.model_types:
            return family
    raise UnsupportedFamilyError(f"model type {model_type!r} is not supported; supported families: {supported()}")


__all__ = ["FAMILIES", "Family", "Layout", "family_for", "supported"]
