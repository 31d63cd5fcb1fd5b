"""Uploaded import files: each stored in a private folder of its own (mode 0700) under
DATA_DIR/uploads, kept while its import job may still run, imported, removed. What a file is
(plain, compressed, a zip of brat files) is told by its bytes when it is imported; a zip is
unpacked into the upload's own folder.

The upload form refuses a file over IMPORT_MAX_UPLOAD_BYTES before it is stored (forms.py);
the importer checks the size again. A stored upload is named by its path relative to the
uploads folder; a path that would lead outside it (a tampered row) is never read nor removed.

A file is stored under the name the browser sent when that name is printable and at most
MAX_STORED_NAME_BYTES in UTF-8 (import messages then name it as its user knows it); otherwise
under "upload" and its last recognised suffixes (`upload.jsonl.gz`: the importer reads the format
from them). The job keeps the name sent, for its page (`StoredUpload.name`).

With ARTIFACT_STORAGE_URL set, web and workers need not share DATA_DIR (webapp.shared_files):
`share` publishes the upload's folder to `<storage>/uploads/<folder>/` and removes the web
machine's copy (the storage holds it, and a copy left there would never be removed). A process
that needs the file (the import worker; "Import now" in the web app) fetches it into the same
private folder under its own DATA_DIR (`local_file`); `discard` removes it there and from the
storage, `release` only there (a kept preview's, which the storage keeps).
"""

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from webapp import shared_files
from webapp.corpus.gold import import_gold
from webapp.corpus.importing import ImportReport, import_annotations, import_notes
from webapp.lib.formats import FORMATS, go_on
from webapp.lib.input_files import NAMED
from webapp.lib.messages import gettext_noop
from webapp.lib.problems import Problems
from webapp.lib.validators import printable
from webapp.lifecycle.status import JobStatus

MAX_STORED_NAME_BYTES = 200  # of 255 a file name may have on Linux
MAX_SHOWN_NAME_CHARS = 255  # ImportJob.file_name
OPTIONS_FILE = ".import-options.json"  # the file's format, an annotation tool's mapping (no upload starts with '.')


@dataclass(frozen=True)
class StoredUpload:
    path: str  # relative to the uploads folder
    name: str  # the file name the browser sent, without folders
    size: int  # bytes


def store(uploaded) -> StoredUpload:
    """Write an uploaded file into a new private folder."""
    root = upload_root()
    workdir = Path(tempfile.mkdtemp(prefix="upload-", dir=root))  # mode 0700
    name = printable(Path(uploaded.name or "").name)[:MAX_SHOWN_NAME_CHARS] or "upload"
    path = workdir / stored_name(name)
    try:
        if hasattr(uploaded, "temporary_file_path"):  # a large upload Django spooled to disk: no second copy
            shutil.move(uploaded.temporary_file_path(), path)
        else:
            with path.open("wb") as out:
                for chunk in uploaded.chunks():
                    out.write(chunk)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    options = getattr(uploaded, "import_options", None)  # set by forms.UploadForm for annotation-tool files
    if options:
        (workdir / OPTIONS_FILE).write_text(json.dumps(options), encoding="utf-8")
    return StoredUpload(path=str(path.relative_to(root)), name=name, size=path.stat().st_size)


def share(relative: str) -> None:
    """With ARTIFACT_STORAGE_URL: publish a stored upload's folder for the workers, then remove
    it from this machine (module docstring). Raises StorageError (nothing is left behind then,
    here or in the storage, as far as the storage can be reached)."""
    path = _resolve(relative)
    if path is None or not shared_files.enabled():
        return
    try:
        shared_files.put(path.parent, _shared_name(path))
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


def for_job(uploaded, actor) -> tuple[StoredUpload, dict]:
    """Store and share an upload a job of long work will read (a note import, a map import): the
    stored file and the job's fields that name it. When the shared storage cannot take it the
    fields are those of a job failed at once, which no worker is sent."""
    stored = store(uploaded)
    fields = {
        "upload": stored.path,
        "file_name": stored.name,
        "file_size": stored.size,
        "created_by": actor if getattr(actor, "is_authenticated", False) else None,
        "heartbeat": timezone.now(),  # when it was sent: the sweeper sends it again if the message is lost
    }
    try:
        share(stored.path)
    except shared_files.StorageError as exc:
        fields.update(upload="", status=JobStatus.FAILED, finished=timezone.now(), error=unreachable(exc))
    return stored, fields


def unreachable(exc) -> str:
    """A job's error when the shared storage of uploads failed (stored English, shown translated)."""
    return (
        f"Nothing was imported: the shared storage of uploads failed ({exc}). "
        "Upload the file again once the storage can be reached."
    )


def stored_name(name: str) -> str:
    """The name to store an upload under (module docstring)."""
    if name.isprintable() and not name.startswith(".") and len(name.encode("utf-8")) <= MAX_STORED_NAME_BYTES:
        return name
    known = {*NAMED, *(s for f in FORMATS.values() for s in f.detect)}
    suffixes = []
    for suffix in reversed(Path(name).suffixes):
        if suffix.lower() not in known:
            break
        suffixes.insert(0, suffix.lower())
    return "upload" + "".join(suffixes)


def import_stored(
    relative: str,
    *,
    project,
    kind: str,
    corpus: str,
    language: str,
    update: bool,
    actor,
    progress=None,
    on_written=None,
    checkpoint=go_on,
    deidentify: bool = False,
) -> ImportReport:
    """Import a stored upload (notes: any format of webapp.lib.formats, the one stored with it or
    else the one its name tells; annotations: gold labels JSONL, or an annotation tool's files with
    the format and mapping stored with it).
    Running it twice on one file is safe: the import is atomic and idempotent. Raises StorageError
    when the upload is kept in a storage that cannot be read. `checkpoint()`: called between
    documents, it raises to stop the import (webapp.corpus.importing.import_notes). `deidentify`:
    notes go through the project's de-identification policy on the way in."""
    path = local_file(relative)
    if path is None:
        problems = Problems()
        problems.add(
            Path(relative).name or "upload",
            None,
            gettext_noop("the uploaded file is no longer stored; upload it again"),
        )
        return ImportReport(problems=problems.kept, problem_count=problems.total)
    options = stored_options(path)
    if kind == "annotations" and options and options.get("format"):
        return import_gold(
            path,
            corpus,
            fmt=options["format"],
            mapping=options["mapping"],
            layer=options["layer"],
            feature=options["feature"],
            missing_feature=options.get("missing_feature", "refuse"),
            feature_default=options.get("feature_default", ""),
            annotator=options.get("annotator", ""),  # uploads stored before the field: the file's own
            dry_run=options["dry_run"],
            update=update,
            actor=actor,
            progress=progress,
            on_written=on_written,
            unpack_dir=path.parent,
            project=project,
            checkpoint=checkpoint,
        ).report
    if kind == "annotations":
        return import_annotations(
            path,
            corpus,
            annotator=(options or {}).get("annotator", ""),
            update=update,
            actor=actor,
            progress=progress,
            on_written=on_written,
            project=project,
            checkpoint=checkpoint,
        )
    return import_notes(
        path,
        corpus,
        fmt=(options or {}).get("format", ""),
        project=project,
        language=language,
        create=bool(language),
        update=update,
        actor=actor,
        progress=progress,
        unpack_dir=path.parent,
        on_written=on_written,
        checkpoint=checkpoint,
        deidentify=deidentify,
    )


def local_file(relative: str) -> Path | None:
    """The stored upload on this machine's disk, if it is still stored; with ARTIFACT_STORAGE_URL
    fetched from the storage first when it is not here. Raises StorageError when the storage
    cannot be read."""
    path = _resolve(relative)
    if path is None:
        return None
    if not path.is_file() and shared_files.enabled():
        try:
            shared_files.get(_shared_name(path), path.parent)
        except shared_files.NotPublished:
            return None
    return path if path.is_file() else None


def stored_options(path: Path) -> dict | None:
    """The options stored beside an upload (its format; an annotation tool's mapping...), if any."""
    options = path.parent / OPTIONS_FILE
    return json.loads(options.read_text(encoding="utf-8")) if options.is_file() else None


def upload_options(relative: str) -> dict | None:
    """The options stored beside an upload, read from the storage when the upload is not on this
    machine's disk (without fetching the upload itself). Raises StorageError."""
    path = _resolve(relative)
    if path is None:
        return None
    if path.is_file() or not shared_files.enabled():
        return stored_options(path) if path.is_file() else None
    options = shared_files.read(_shared_name(path), OPTIONS_FILE)
    return json.loads(options.decode("utf-8")) if options is not None else None


def discard(relative: str) -> None:
    """Remove a stored upload's folder (and what was unpacked there), from the storage too.
    Raises StorageError when the storage cannot be reached (this machine's copy is gone then)."""
    path = _resolve(relative)
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)
        if shared_files.enabled():
            shared_files.remove(_shared_name(path))


def release(relative: str) -> None:
    """Remove this machine's copy of an upload the storage keeps (none without ARTIFACT_STORAGE_URL)."""
    path = _resolve(relative)
    if path is not None and shared_files.enabled():
        shutil.rmtree(path.parent, ignore_errors=True)


def upload_root() -> Path:
    root = settings.DATA_DIR / "uploads"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def _resolve(relative: str) -> Path | None:
    """The stored file, only if it lies in a folder of its own right under the uploads folder."""
    if not relative:
        return None
    root = upload_root().resolve()
    path = (root / relative).resolve()
    return path if path.parent.parent == root else None


def _shared_name(path: Path) -> str:
    """The upload's folder relative to DATA_DIR: its name in the storage as well."""
    return f"uploads/{path.parent.name}"
