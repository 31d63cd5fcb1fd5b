"""The model of a relevance worker process: loaded once, on first use, kept for later chunks.

Keyed by the model version's path (and MODEL_DIR, where registry names resolve): a chunk of
another model version replaces it, so a process holds one model at a time. Nothing here
imports torch or touches CUDA at import time; the first `loaded_model()` call does, inside
the worker process (a prefork pool's child), never in the web process or the pool's parent.
"""
from __future__ import annotations

import gc
import logging
import threading

from django.conf import settings

log = logging.getLogger(__name__)

_lock = threading.Lock()
_cache: dict = {"key": None, "loaded": None}


def loaded_model(model_version):
    """The ml.models.LoadedModel for a ModelVersion, loading it on first use in this process."""
    key = (model_version.path, str(settings.MODEL_DIR))
    with _lock:
        if _cache["key"] != key:
            _drop()
            _cache["loaded"] = _load(model_version.path)
            _cache["key"] = key
        return _cache["loaded"]


def clear() -> None:
    with _lock:
        _drop()


def _load(path: str):
    from ml.models import load_model, pick_device
    from ml.relevance import preferred_dtype

    device = pick_device()
    loaded = load_model(path, model_dir=settings.MODEL_DIR, device=device, dtype=preferred_dtype(device))
    log.info("loaded model %s on %s (%s)", loaded.label, loaded.device, loaded.dtype)
    return loaded


def _drop() -> None:
    had = _cache["loaded"] is not None
    _cache.update(key=None, loaded=None)
    if had:
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
