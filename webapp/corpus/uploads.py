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
"""

import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from webapp.corpus.importing import ImportReport, import_annotations, import_notes
from webapp.interchange.gold import import_gold
from webapp.lib.import_sources import SUFFIX_FORMATS, Problems
from webapp.lib.input_files import NAMED
from webapp.lib.validators import printable

MAX_STORED_NAME_BYTES = 200  # of 255 a file name may have on Linux
MAX_SHOWN_NAME_CHARS = 255  # ImportJob.file_name
KNOWN_SUFFIXES = {*NAMED, *SUFFIX_FORMATS}
OPTIONS_FILE = ".import-options.json"  # an annotation tool's format and mapping (no upload starts with '.')


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


def stored_name(name: str) -> str:
    """The name to store an upload under (module docstring)."""
    if name.isprintable() and not name.startswith(".") and len(name.encode("utf-8")) <= MAX_STORED_NAME_BYTES:
        return name
    suffixes = []
    for suffix in reversed(Path(name).suffixes):
        if suffix.lower() not in KNOWN_SUFFIXES:
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
) -> ImportReport:
    """Import a stored upload (notes: JSONL, CSV or a zip of brat files; annotations: JSONL).
    Running it twice on one file is safe: the import is atomic and idempotent."""
    path = _resolve(relative)
    if path is None or not path.is_file():
        problems = Problems()
        problems.add(Path(relative).name or "upload", None, "the uploaded file is no longer stored; upload it again")
        return ImportReport(problems=problems.kept, problem_count=problems.total)
    options = stored_options(path)
    if kind == "annotations" and options:
        return import_gold(
            path,
            corpus,
            fmt=options["format"],
            mapping=options["mapping"],
            layer=options["layer"],
            feature=options["feature"],
            dry_run=options["dry_run"],
            update=update,
            actor=actor,
            progress=progress,
            on_written=on_written,
            unpack_dir=path.parent,
            project=project,
        ).report
    if kind == "annotations":
        return import_annotations(
            path, corpus, update=update, actor=actor, progress=progress, on_written=on_written, project=project
        )
    return import_notes(
        path,
        corpus,
        project=project,
        language=language,
        create=bool(language),
        update=update,
        actor=actor,
        progress=progress,
        unpack_dir=path.parent,
        on_written=on_written,
    )


def stored_file(relative: str) -> Path | None:
    """The stored upload, if it is still there."""
    path = _resolve(relative)
    return path if path is not None and path.is_file() else None


def stored_options(path: Path) -> dict | None:
    """The annotation-tool options stored beside an upload (webapp.interchange.gold), if any."""
    options = path.parent / OPTIONS_FILE
    return json.loads(options.read_text(encoding="utf-8")) if options.is_file() else None


def discard(relative: str) -> None:
    """Remove a stored upload's folder (and what was unpacked there)."""
    path = _resolve(relative)
    if path is not None:
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
