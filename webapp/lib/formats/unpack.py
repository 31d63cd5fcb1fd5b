"""The input of a format as its reader takes it, for the notes import and the gold import alike:
a file, a folder, or a zip of a folder format's files unpacked into a temporary folder (with the
checks of `webapp.lib.input_files.unzip`: no absolute or `..` entry, no symbolic link, at most
MAX_ZIP_MEMBERS entries and `unpacked_bytes` in all, no member over `file_bytes`
(IMPORT_MAX_FILE_BYTES, its declared size, checked before any member is unpacked), no two files
of one name), removed at the end. No Django here."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from webapp.lib.import_limits import ImportLimits
from webapp.lib.input_files import sniff, unzip


def is_zip(path: Path) -> bool:
    try:
        return path.is_file() and sniff(path) == "zip"
    except OSError:
        return False  # reported when the file is read


def shape_problem(path: Path, format_) -> str | None:
    """Why `path` cannot be read in `format_` as it is given (a file for a folder format, a folder
    for a one-file format), None when it can."""
    from webapp.lib.formats import folder_formats

    if format_.members and not path.is_dir() and not is_zip(path):
        return (
            f"the {format_.name} format needs a folder, or a zip archive of its {' and '.join(format_.members)} files"
        )
    if not format_.members and path.is_dir():
        folders = " or ".join(f.label for f in folder_formats())
        return f"{format_.label} is one file; a folder holds the files of {folders}"
    return None


@contextmanager
def readable(path: Path, format_, problems, limits: ImportLimits, unpack_dir=None) -> Iterator[Path | None]:
    """`path` itself, or the folder a zip of `format_`'s files was unpacked into (in a temporary
    folder under `unpack_dir`, the system's by default; its name the archive's, so messages name
    the archive); None when the zip is refused, with the reason in `problems`."""
    if not format_.members or path.is_dir() or not is_zip(path):
        yield path
        return
    with tempfile.TemporaryDirectory(prefix=f"{format_.name}-", dir=unpack_dir) as tmp:
        yield unzip(path, Path(tmp) / path.name, problems, limits, format_.members, format_.name)
