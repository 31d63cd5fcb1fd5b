"""Named models, model families and loading. See load_model()."""

from ml.models.convert import convert_default_model, convert_registered
from ml.models.errors import ModelError, ModelNotFoundError, UnsupportedFamilyError
from ml.models.families import FAMILIES, Family, family_for
from ml.models.loading import LoadedModel, load_model, pick_device, pick_dtype
from ml.models.registry import DEFAULT_MODEL, REGISTRY, default_model_dir

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
    "default_model_dir",
    "family_for",
    "load_model",
    "pick_device",
    "pick_dtype",
]
