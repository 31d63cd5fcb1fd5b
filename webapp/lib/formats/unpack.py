"""A zip of annotation files (brat .txt/.ann, XMI files and their TypeSystem.xml), unpacked
flattened into a folder, with the checks of the brat import (webapp.lib.input_files): no absolute
or `..` entry, no symbolic link, at most MAX_ZIP_MEMBERS entries and `unpacked_bytes` in all, no
member to unpack over `file_bytes` (IMPORT_MAX_FILE_BYTES: its declared size, checked before any
member is unpacked), no two files of one name. No Django here."""

from __future__ import annotations

import shutil
import stat
import zipfile
from pathlib import Path, PurePosixPath

from webapp.lib.formats.document import FormatError
from webapp.lib.import_limits import ImportLimits
from webapp.lib.input_files import MAX_ZIP_MEMBERS, members_too_large

SUFFIXES = {"brat": (".txt", ".ann"), "xmi": (".xmi", ".xml")}


def unzip(archive: Path, target: Path, fmt: str, limits: ImportLimits) -> Path:
    """The folder of the archive's files of format `fmt`; FormatError naming the archive."""
    suffixes = SUFFIXES[fmt]
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [m for m in zf.infolist() if not m.is_dir()]
            if len(members) > MAX_ZIP_MEMBERS:
                raise FormatError(
                    archive.name, None, f"the archive holds {len(members):,} files; the limit is {MAX_ZIP_MEMBERS:,}"
                )
            if sum(m.file_size for m in members) > limits.unpacked_bytes:
                raise FormatError(
                    archive.name,
                    None,
                    f"the archive unpacks to more than {limits.unpacked_bytes:,} bytes (IMPORT_MAX_UNPACKED_BYTES)",
                )
            wanted = []
            for m in members:
                parts = PurePosixPath(m.filename.replace("\\", "/"))
                if parts.is_absolute() or ".." in parts.parts:
                    raise FormatError(
                        archive.name, None, f"entry {m.filename[:80]!r} has an absolute or '..' path; refused"
                    )
                if stat.S_ISLNK(m.external_attr >> 16):
                    raise FormatError(archive.name, None, f"entry {m.filename[:80]!r} is a symbolic link; refused")
                if parts.suffix.lower() in suffixes and not parts.name.startswith("."):
                    wanted.append(m)
            if not wanted:
                raise FormatError(archive.name, None, f"the archive holds no {' or '.join(suffixes)} files")
            too_large = members_too_large(wanted, limits.file_bytes)
            if too_large:
                raise FormatError(archive.name, None, too_large)
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            for m in wanted:
                name = PurePosixPath(m.filename.replace("\\", "/")).name
                if (target / name).exists():
                    raise FormatError(archive.name, None, f"two files named {name!r} in the archive")
                with zf.open(m) as src, (target / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError):
        raise FormatError(archive.name, None, "not a valid zip archive (truncated, encrypted or corrupt)") from None
    return target
