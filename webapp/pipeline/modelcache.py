"""The model of a relevance worker process: loaded once, on first use, kept for later chunks.

Keyed by the model version's path, MODEL_DIR (where registry names resolve) and the dtype asked
for ("auto": ml.models.preferred_dtype of the device): a chunk of another model version or
dtype replaces it, so a process holds one model at a time.

A model version whose path is a storage URI (file://, s3://: webapp.lib.storage) is fetched on
first use into this worker's cache (ARTIFACT_CACHE_DIR, keyed by the content digest of the
folder's manifest, at most ARTIFACT_CACHE_MAX_GB) and loaded from there. A model this worker
cannot load (not on its disk, storage unreachable, a file not matching its manifest) raises
ModelUnavailable: the caller leaves the work to another worker (webapp.pipeline.chunks.release_unloadable).

Nothing here
imports torch or touches CUDA at import time; the first `loaded_model()` call does, inside
the worker process (a prefork pool's child), never in the web process or the pool's parent.
"""

from __future__ import annotations

import gc
import logging
import threading

from django.conf import settings

from webapp.lib import storage

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


class ModelUnavailable(Exception):
    """This worker cannot load the model (another worker may): the message says why, in plain words."""


def model_folder(path: str) -> str:
    """What to load for a ModelVersion.path: a storage URI's cached local copy (fetched first if
    missing), anything else as it is (a registry name, a folder, a hub id)."""
    if not storage.is_uri(path):
        return path
    try:
        folder = storage.fetch(
            path,
            settings.ARTIFACT_CACHE_DIR,
            settings.ARTIFACT_STORAGE_OPTIONS,
            max_bytes=int(settings.ARTIFACT_CACHE_MAX_GB * 1e9),
        )
    except storage.StorageError as exc:
        raise ModelUnavailable(str(exc)) from exc
    return str(folder)


def publish_model(folder, name: str) -> str:
    """Where a model written to `folder` (a trained model's final folder) is registered: the
    folder itself without ARTIFACT_STORAGE_URL (today's single machine), else its published copy
    under that storage (a URI or shared path every worker can reach)."""
    if not settings.ARTIFACT_STORAGE_URL:
        return str(folder)
    published = storage.publish_named(folder, settings.ARTIFACT_STORAGE_URL, name, settings.ARTIFACT_STORAGE_OPTIONS)
    log.info("published model %s to %s", name, storage.safe(published))
    return published


def clear() -> None:
    with _lock:
        _drop()


def _load(path: str, dtype: str):
    import torch

    from ml.models import ModelNotFoundError, load_model, pick_device, preferred_dtype

    folder = model_folder(path)
    device = pick_device()
    torch_dtype = preferred_dtype(device) if dtype == "auto" else getattr(torch, dtype)
    try:
        loaded = load_model(folder, model_dir=settings.MODEL_DIR, device=device, dtype=torch_dtype)
    except ModelNotFoundError as exc:
        raise ModelUnavailable(str(exc)) from exc
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
