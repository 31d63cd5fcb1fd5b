"""Files the web app and the workers both need, kept in ARTIFACT_STORAGE_URL, so that they need
not share DATA_DIR: import uploads (`uploads/<folder>/`) and dataset exports
(`exports/dataset-D/export-E-FMT/attempt-N/`). The Django side of webapp.lib.storage (which
publishes with a manifest written last, and reads back with hash checks), as
webapp.pipeline.modelcache is for trained models.

Every name here is a folder's path relative to DATA_DIR, and the same path under the storage:
the machine that writes a folder publishes it, and a machine that does not find it on its own
disk reads it from the storage. Without ARTIFACT_STORAGE_URL nothing here is called (`enabled()`
is False): the folders stay under a DATA_DIR that web and workers share, as on one machine.

Errors are webapp.lib.storage.StorageError, whose message names the storage without its
credentials (storage.safe) and never holds a file's content.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from webapp.lib import storage
from webapp.lib.storage import NotPublished, StorageError  # what callers catch

__all__ = ["NotPublished", "StorageError", "enabled", "files", "get", "put", "read", "remove", "uri"]


def enabled() -> bool:
    return bool(settings.ARTIFACT_STORAGE_URL)


def uri(relative: str) -> str:
    """Where the folder `relative` (to DATA_DIR) is kept in the storage."""
    return storage.join(settings.ARTIFACT_STORAGE_URL, str(relative))


def put(folder: str | Path, relative: str) -> str:
    """Publish a local folder as `relative`; returns its URI. When that fails, what was written
    of it is removed as far as the storage can be reached, and StorageError raised."""
    target = uri(relative)
    try:
        storage.publish(folder, target, settings.ARTIFACT_STORAGE_OPTIONS)
    except StorageError:
        with contextlib.suppress(StorageError):
            remove(relative)
        raise
    return target


def get(relative: str, target: str | Path) -> Path:
    """Copy the folder `relative` from the storage into the local folder `target`."""
    return storage.get_folder(uri(relative), target, settings.ARTIFACT_STORAGE_OPTIONS)


def files(relative: str) -> list[tuple[str, Iterator[bytes]]]:
    """The files of the folder `relative`, streamed from the storage (storage.open_folder)."""
    return storage.open_folder(uri(relative), settings.ARTIFACT_STORAGE_OPTIONS)


def read(relative: str, name: str) -> bytes | None:
    """One small file of the folder `relative`, None if it has none."""
    return storage.read_file(uri(relative), name, settings.ARTIFACT_STORAGE_OPTIONS)


def remove(relative: str) -> None:
    storage.remove(uri(relative), settings.ARTIFACT_STORAGE_OPTIONS)
