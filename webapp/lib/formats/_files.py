"""Reading helpers shared by the format modules: UTF-8 text and JSON, with errors that name the
file and the line or record (never the text). No Django here.

Every file is checked against `ReadOptions.file_bytes` (IMPORT_MAX_FILE_BYTES) before it is read
(`check_size`, the import's one check, `webapp.lib.import_limits.file_too_large`): a reader then
holds at most that much of it, and reads lines one at a time where the format allows. A format
that parses a file whole (XMI, Label Studio) holds several times its bytes: it passes that
factor (`file_limit(options, parsed_size=...)`), and its files may have that much less, so one
file's reading takes about IMPORT_MAX_FILE_BYTES of memory whatever the format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.lib.formats.document import Document, FormatError, check_spans
from webapp.lib.import_limits import file_too_large

FILE_BYTES = 512 * 1024**2  # IMPORT_MAX_FILE_BYTES's default, for a reader called without options


@dataclass(frozen=True)
class FileLimit:
    """The most bytes one file of a format may have, and how it follows from the setting."""

    bytes: int
    setting: str = "IMPORT_MAX_FILE_BYTES"


def file_limit(options, parsed_size: int = 1, what: str = "") -> FileLimit:
    """`options.file_bytes` (the import passes IMPORT_MAX_FILE_BYTES), divided by `parsed_size`,
    the times its bytes a file of `what` format takes once parsed whole."""
    most = getattr(options, "file_bytes", None) or FILE_BYTES
    if parsed_size == 1:
        return FileLimit(most)
    return FileLimit(
        most // parsed_size,
        f"IMPORT_MAX_FILE_BYTES / {parsed_size}: {what} is parsed whole, at about {parsed_size} times its size",
    )


def check_size(path: Path, limit: FileLimit, size: int | None = None) -> None:
    """FormatError naming the file and the setting when it is larger (its size on disk, or
    `size` read); nothing is read."""
    refusal = file_too_large("the file", path.stat().st_size if size is None else size, limit.bytes, limit.setting)
    if refusal:
        raise FormatError(path.name, None, refusal)


def read_text(path: Path, limit: FileLimit) -> str:
    """A whole UTF-8 file of at most `limit` bytes (a byte order mark dropped); FormatError naming
    the byte, or the size, otherwise."""
    check_size(path, limit)
    with path.open("rb") as f:
        data = f.read(limit.bytes + 1)  # a file grown since its size was read is still cut at the limit
    check_size(path, limit, len(data))
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path.name, f"line {line}", f"not UTF-8 (byte 0x{data[exc.start]:02x})") from None


def text_lines(path: Path, limit: FileLimit) -> Iterator[tuple[int, str]]:
    """(line number, line without its end) of a UTF-8 file of at most `limit` bytes, one line
    held at a time; FormatError for the size or a line that is not UTF-8."""
    check_size(path, limit)
    with path.open("rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(limit.bytes + 1), b""), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise FormatError(path.name, f"line {number}", f"not UTF-8 (byte 0x{raw[exc.start]:02x})") from None
            yield number, (line.removeprefix("\ufeff") if number == 1 else line).rstrip("\r\n")


def json_lines(path: Path, limit: FileLimit) -> Iterator[tuple[int, dict] | FormatError]:
    """(line number, object) for each non-blank line of a file of at most `limit` bytes; a
    FormatError (yielded, reading goes on) for a line that is not a JSON object."""
    try:
        check_size(path, limit)
    except FormatError as exc:
        yield exc
        return
    with path.open("rb") as f:
        for number, raw in enumerate(iter(lambda: f.readline(limit.bytes + 1), b""), 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield FormatError(path.name, f"line {number}", f"not UTF-8 (byte 0x{raw[exc.start]:02x})")
                continue
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                yield FormatError(path.name, f"line {number}", f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(obj, dict):
                yield FormatError(path.name, f"line {number}", f"expected a JSON object, got {kind(obj)}")
                continue
            yield number, obj


def kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def note_id(value, source: str, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise FormatError(source, where, f"the document id must be a non-empty string or integer, not {kind(value)}")
    return str(value)


def checked(doc: Document, source: str, where: str) -> Document | FormatError:
    """The document, or a FormatError naming its first span problems."""
    problems = check_spans(doc)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        return FormatError(source, where, f"document {doc.id!r}: {'; '.join(problems[:3])}{more}")
    return doc


def files_in(path: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The files with these suffixes: `path` itself, or those directly in the folder `path`."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
    return [path]


def safe_name(doc_id: str) -> str:
    """A document id as a file name: '/', '%', control characters and a leading '.' escaped as %XX
    (readers unescape), so any id round-trips."""
    out = []
    for i, c in enumerate(doc_id):
        if c in "/\\%:" or not c.isprintable() or (i == 0 and c == "."):
            out.extend(f"%{b:02X}" for b in c.encode("utf-8"))
        else:
            out.append(c)
    return "".join(out)


def id_of_name(stem: str) -> str:
    from urllib.parse import unquote

    return unquote(stem) if "%" in stem else stem
