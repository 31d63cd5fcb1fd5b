"""Uploaded import files: stored in a private temporary folder, unpacked safely, imported, removed."""
import shutil
import tempfile
import zipfile
from pathlib import Path

from django.conf import settings

from webapp.corpus.importing import ImportReport, import_annotations, import_notes
from webapp.corpus.sources import Problems

MAX_ZIP_MEMBERS = 200_000
MAX_UNPACKED_BYTES = 8 * 1024**3


def import_upload(uploaded, *, kind: str, corpus: str, language: str, update: bool, actor) -> ImportReport:
    workdir = Path(tempfile.mkdtemp(prefix="upload-", dir=_upload_root()))
    try:
        name = Path(uploaded.name).name or "upload"
        path = workdir / name
        with path.open("wb") as out:
            for chunk in uploaded.chunks():
                out.write(chunk)
        if kind == "notes":
            if name.lower().endswith(".zip"):
                problems = Problems()
                path = _unzip_brat(path, workdir / "brat", problems)
                if path is None:
                    return ImportReport(problems=problems.kept, problem_count=problems.total)
            return import_notes(path, corpus, language=language, create=bool(language), update=update, actor=actor)
        return import_annotations(path, corpus, update=update, actor=actor)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _upload_root() -> Path:
    root = settings.DATA_DIR / "uploads"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def _unzip_brat(archive: Path, target: Path, problems: Problems) -> Path | None:
    """Unpack the .txt and .ann members of a zip into one folder, refusing unsafe archives."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.infolist() if not m.is_dir()]
            if len(members) > MAX_ZIP_MEMBERS or sum(m.file_size for m in members) > MAX_UNPACKED_BYTES:
                problems.add(archive.name, None, "the archive is too large to unpack")
                return None
            target.mkdir()
            for member in members:
                name = Path(member.filename).name  # flatten: no paths from the archive reach the disk
                if not name.endswith((".txt", ".ann")) or name.startswith("."):
                    continue
                if (target / name).exists():
                    problems.add(archive.name, None, f"two files named {name!r} in the archive")
                    return None
                with zf.open(member) as src, (target / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst)
    except zipfile.BadZipFile:
        problems.add(archive.name, None, "not a valid zip archive")
        return None
    return target
