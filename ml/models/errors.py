"""Errors raised while finding, converting or loading a model."""


class ModelError(Exception):
    """Base class for every model problem the user can fix."""


class ModelNotFoundError(ModelError):
    """The named model is not on this machine (and downloading was not allowed)."""


class UnsupportedFamilyError(ModelError):
    """The model's architecture has no family file (no lxt patch map, no mask token)."""
