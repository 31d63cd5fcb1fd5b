"""The model of a relevance worker process: loaded once, on first use, kept for later chunks.

Keyed by the model version's path, MODEL_DIR (where registry names resolve) and the dtype asked
for ("auto": ml.relevance.preferred_dtype of the device): a chunk of another model version or
dtype replaces it, so a process holds one model at a time. Nothing here
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


def loaded_model(model_version, dtype: str = "auto"):
    """The ml.models.LoadedModel for a ModelVersion in `dtype` (a RelevanceConfig dtype), loading
    it on first use in this process."""
    key = (model_version.path, str(settings.MODEL_DIR), dtype)
    with _lock:
        if _cache["key"] != key:
            _drop()
            _cache["loaded"] = _load(model_version.path, dtype)
            _cache["key"] = key
        return _cache["loaded"]


def clear() -> None:
    with _lock:
        _drop()


def _load(path: str, dtype: str):
    import torch

    from ml.models import load_model, pick_device
    from ml.relevance import preferred_dtype

    device = pick_device()
    torch_dtype = preferred_dtype(device) if dtype == "auto" else getattr(torch, dtype)
    loaded = load_model(path, model_dir=settings.MODEL_DIR, device=device, dtype=torch_dtype)
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
