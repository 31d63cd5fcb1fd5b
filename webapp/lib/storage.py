"""Artifact folders (trained models) addressed by a storage URI, and a local cache of them.

A storage URI is one of:
* a plain path (`/mnt/share/artifacts/...`): a folder every machine mounts at the same path (a
  shared filesystem); it is read in place, never copied;
* `file:///mnt/share/...`: the same share, but each worker copies the folder into its local
  cache first (local disk is faster than the share for loading weights);
* an fsspec URL of object storage (`s3://bucket/prefix/...`, through s3fs): fetched into the
  local cache on first use.

A folder published here carries a manifest, `artifact-manifest.json`: every file's size and
SHA-256, and a digest of them all. The manifest is written LAST, so a reader that finds it finds
a complete folder. The cache keys folders by that digest: `<cache>/<digest[:32]>/`, filled in a
temporary folder beside it and renamed into place once every file's hash checked out (atomic:
two processes fetching at once both end with one complete folder). The cache is bounded:
after a fetch, least recently used folders are removed until it holds at most `max_bytes`
(never the folder just fetched).

Folders that are not artifacts (an import's upload, a dataset export) use the same publish,
and are read back with `get_folder` (into a given local folder, hash-checked, renamed into place),
`open_folder` (streamed file by file, each file's hash checked as its last byte is read),
`read_file` (one small file, e.g. an upload's options) and removed with `remove`.

No Django here: callers pass the URI, the fsspec options and the cache folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

MANIFEST = "artifact-manifest.json"
_CHUNK = 1 << 20
_USED = ".last-used"  # touched in a cached folder on every use (the LRU order)


class StorageError(Exception):
    """A storage URI could not be read or written; the message says which and why, in plain words."""


class NotPublished(StorageError):
    """The URI holds no complete published folder (never published, removed, or still being written)."""


def scheme(uri: str) -> str:
    """'' for a plain path, else the URL's scheme ('file', 's3', 'memory', ...)."""
    head, sep, _ = str(uri).partition("://")
    return head.lower() if sep and head.isidentifier() else ""


def is_uri(uri: str) -> bool:
    """True for a URL that is fetched into the cache (file://, s3://, ...); False for a plain path."""
    return scheme(uri) != ""


def join(base: str, *parts: str) -> str:
    base = str(base)
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts)])


def _fs(uri: str, options: dict | None):
    import fsspec

    remote = scheme(uri) not in ("", "file")
    try:
        return fsspec.core.url_to_fs(str(uri), **((options or {}) if remote else {}))
    except (ImportError, ValueError) as exc:
        raise StorageError(f"cannot use storage {safe(uri)}: {exc}") from exc


def safe(uri: str) -> str:
    """The URI without credentials (user:password@) for messages and logs."""
    text = str(uri)
    head, sep, rest = text.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        rest = rest.split("@", 1)[1]
    return f"{head}{sep}{rest}"


def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            sha.update(block)
    return sha.hexdigest()


def build_manifest(folder: str | os.PathLike) -> dict:
    """{"files": {relative path: {"size", "sha256"}}, "digest", "bytes"} of a local folder
    (its own manifest and cache marker left out)."""
    folder = Path(folder)
    files = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel in (MANIFEST, _USED):
            continue
        files[rel] = {"size": path.stat().st_size, "sha256": file_digest(path)}
    listing = json.dumps(files, sort_keys=True, separators=(",", ":")).encode()
    return {
        "version": 1,
        "digest": hashlib.sha256(listing).hexdigest(),
        "bytes": sum(f["size"] for f in files.values()),
        "files": files,
    }


def write_manifest(folder: str | os.PathLike) -> dict:
    """Write `folder`'s manifest into it (atomically) and return it."""
    manifest = build_manifest(folder)
    target = Path(folder) / MANIFEST
    tmp = target.with_name(f".{MANIFEST}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    os.replace(tmp, target)
    return manifest


def publish_named(folder: str | os.PathLike, base: str, name: str, options: dict | None = None) -> str:
    """Publish a local folder under `base` as `<base>/models/<name>-<digest[:12]>` (a URI that
    names its content, so it is never rewritten) and return that URI."""
    manifest = write_manifest(folder)
    uri = join(base, "models", f"{name}-{manifest['digest'][:12]}")
    publish(folder, uri, options, manifest=manifest)
    return uri


def publish(folder: str | os.PathLike, uri: str, options: dict | None = None, manifest: dict | None = None) -> dict:
    """Copy a local folder to `uri` (a plain path, file:// or object storage) with its manifest,
    the manifest last. Returns the manifest. Publishing the same content again is harmless."""
    folder = Path(folder)
    manifest = manifest or write_manifest(folder)
    fs, root = _fs(uri, options)
    try:
        for rel in manifest["files"]:
            target = join(root, rel)
            parent = target.rsplit("/", 1)[0]
            fs.makedirs(parent, exist_ok=True)
            fs.put_file(str(folder / rel), target)
        fs.put_file(str(folder / MANIFEST), join(root, MANIFEST))
    except OSError as exc:
        raise StorageError(f"could not write {safe(uri)} ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # noqa: BLE001 - connection errors of the object store's client
        raise StorageError(f"storage unreachable while writing {safe(uri)} ({type(exc).__name__})") from exc
    return manifest


def read_manifest(uri: str, options: dict | None = None) -> dict:
    fs, root = _fs(uri, options)
    try:
        with fs.open(join(root, MANIFEST), "rb") as handle:
            manifest = json.loads(handle.read())
    except FileNotFoundError as exc:
        raise NotPublished(f"{safe(uri)} has no {MANIFEST}: not a published folder, or not complete yet") from exc
    except (OSError, ValueError) as exc:
        raise StorageError(f"could not read {safe(uri)} ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # noqa: BLE001 - botocore and aiohttp raise their own connection errors
        raise StorageError(f"storage unreachable for {safe(uri)} ({type(exc).__name__})") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) or "digest" not in manifest:
        raise StorageError(f"{safe(uri)}: {MANIFEST} is not a manifest")
    return manifest


def fetch(uri: str, cache_dir: str | os.PathLike, options: dict | None = None, max_bytes: int = 0) -> Path:
    """The local folder holding `uri`'s content: the cached copy keyed by its manifest's digest,
    fetched first if missing (into a temporary folder, every file's hash checked, then renamed
    into place). `max_bytes` > 0 bounds the cache (least recently used folders go first).
    A URI fetched before is served from the cache without reaching the storage.
    Raises StorageError when the storage cannot be read or a file does not match its hash."""
    cache_dir = Path(cache_dir)
    known = _known(cache_dir, uri)
    if known is not None:  # fetched before: no need to reach the storage at all
        _touch(known)
        return known
    manifest = read_manifest(uri, options)
    target = cache_dir / manifest["digest"][:32]
    if (target / MANIFEST).is_file():
        _touch(target)
        _remember(cache_dir, uri, target)
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = cache_dir / f".tmp-{manifest['digest'][:12]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    _download(uri, options, manifest, tmp, target)
    _touch(target)
    _remember(cache_dir, uri, target)
    if max_bytes > 0:
        evict(cache_dir, max_bytes, keep=target)
    return target


def get_folder(uri: str, target: str | os.PathLike, options: dict | None = None) -> Path:
    """Copy a published folder into the local folder `target` (made private, mode 0700), every
    file's hash checked, through a temporary folder beside it renamed into place: `target` is
    complete or absent. A complete `target` already there is kept as it is.
    Raises NotPublished when `uri` holds no published folder, StorageError when it cannot be read."""
    target = Path(target)
    if (target / MANIFEST).is_file():
        return target
    manifest = read_manifest(uri, options)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".tmp-{target.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(mode=0o700)
    _download(uri, options, manifest, tmp, target)
    return target


def _download(uri: str, options: dict | None, manifest: dict, tmp: Path, target: Path) -> None:
    """Fetch the files of `manifest` into `tmp`, check them, write the manifest, rename to `target`."""
    fs, root = _fs(uri, options)
    try:
        for rel, meta in manifest["files"].items():
            local = tmp / rel
            local.parent.mkdir(parents=True, exist_ok=True)
            with _listed_file(uri, rel, "fetch"):
                fs.get_file(join(root, rel), str(local))
            if local.stat().st_size != meta["size"] or file_digest(local) != meta["sha256"]:
                raise StorageError(f"{safe(uri)}: {rel} does not match its manifest (changed or truncated)")
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / MANIFEST).is_file():  # not another process's complete copy: a real error
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _listed_file(uri: str, rel: str, verb: str):
    """Say in plain words why a file listed in `uri`'s manifest could not be fetched or read."""
    try:
        yield
    except FileNotFoundError as exc:
        raise StorageError(f"{safe(uri)}: {rel} is listed in its manifest but missing") from exc
    except OSError as exc:
        raise StorageError(f"could not {verb} {rel} of {safe(uri)} ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # noqa: BLE001 - connection errors of the object store's client
        raise StorageError(f"storage unreachable: cannot {verb} {rel} of {safe(uri)} ({type(exc).__name__})") from exc


def open_folder(uri: str, options: dict | None = None) -> list[tuple[str, Iterator[bytes]]]:
    """[(relative path, its bytes in chunks)] of a published folder, sorted by path, read from the
    storage only as each chunk is asked for (nothing copied to disk). The manifest is read now, so
    a storage out of reach or an unpublished folder raises here, before any byte is handed out; a
    file that does not match its manifest raises StorageError once its last chunk has been read."""
    manifest = read_manifest(uri, options)
    fs, root = _fs(uri, options)
    return [(rel, _chunks(fs, root, uri, rel, meta)) for rel, meta in sorted(manifest["files"].items())]


def _chunks(fs, root: str, uri: str, rel: str, meta: dict) -> Iterator[bytes]:
    sha, size = hashlib.sha256(), 0
    with _listed_file(uri, rel, "read"), fs.open(join(root, rel), "rb") as handle:
        while block := handle.read(_CHUNK):
            sha.update(block)
            size += len(block)
            yield block
    if size != meta["size"] or sha.hexdigest() != meta["sha256"]:
        raise StorageError(f"{safe(uri)}: {rel} does not match its manifest (changed or truncated)")


def read_file(uri: str, rel: str, options: dict | None = None) -> bytes | None:
    """One file of a folder under `uri` (a small one: it is read whole), None if there is none."""
    fs, root = _fs(uri, options)
    try:
        with fs.open(join(root, rel), "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except Exception as exc:  # noqa: BLE001 - OSError, or connection errors of the object store's client
        raise StorageError(f"could not read {rel} of {safe(uri)} ({type(exc).__name__})") from exc


def remove(uri: str, options: dict | None = None) -> None:
    """Remove a published folder; one already gone is no error. Its manifest goes first, so a
    reader never takes a half-removed folder for a complete one."""
    fs, root = _fs(uri, options)
    try:
        for path in (join(root, MANIFEST), root):
            try:
                fs.rm(path, recursive=path == root)
            except FileNotFoundError:
                pass
    except Exception as exc:  # noqa: BLE001 - OSError, or connection errors of the object store's client
        raise StorageError(f"could not remove {safe(uri)} ({type(exc).__name__})") from exc


def _uri_marker(cache_dir: Path, uri: str) -> Path:
    return cache_dir / ".uris" / hashlib.sha256(str(uri).encode()).hexdigest()[:32]


def _known(cache_dir: Path, uri: str) -> Path | None:
    """The cached folder of a URI fetched before (published folders are never rewritten: their
    URI names their digest), if it is still in the cache."""
    try:
        folder = cache_dir / _uri_marker(cache_dir, uri).read_text().strip()
    except OSError:
        return None
    return folder if (folder / MANIFEST).is_file() else None


def _remember(cache_dir: Path, uri: str, folder: Path) -> None:
    marker = _uri_marker(cache_dir, uri)
    marker.parent.mkdir(parents=True, exist_ok=True)
    tmp = marker.with_name(f"{marker.name}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(folder.name)
    os.replace(tmp, marker)


def _touch(folder: Path) -> None:
    (folder / _USED).touch()


def cached(cache_dir: str | os.PathLike) -> list[tuple[Path, int, float]]:
    """[(folder, bytes, last used)] of the complete folders in the cache, least recently used first."""
    rows = []
    for folder in Path(cache_dir).iterdir() if Path(cache_dir).is_dir() else []:
        if folder.name.startswith(".") or not (folder / MANIFEST).is_file():
            continue
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        used = (folder / _USED).stat().st_mtime if (folder / _USED).exists() else 0.0
        rows.append((folder, size, used))
    return sorted(rows, key=lambda row: row[2])


def evict(cache_dir: str | os.PathLike, max_bytes: int, keep: Path | None = None) -> list[Path]:
    """Remove least recently used folders until the cache holds at most max_bytes; returns them.
    A folder is renamed away before it is deleted, so a reader never sees half of one."""
    rows = cached(cache_dir)
    total = sum(size for _, size, _ in rows)
    removed = []
    for folder, size, _ in rows:
        if total <= max_bytes:
            break
        if keep is not None and folder == keep:
            continue
        doomed = folder.with_name(f".evict-{folder.name}-{time.time_ns()}")
        try:
            os.rename(folder, doomed)
        except OSError:
            continue
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        removed.append(folder)
    return removed
