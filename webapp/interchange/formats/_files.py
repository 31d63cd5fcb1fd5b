"""Reading helpers shared by the format modules: UTF-8 text and JSON, with errors that name the
file and the line or record (never the text). No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from webapp.interchange.formats.document import Document, FormatError, check_spans


def read_text(path: Path) -> str:
    """A whole UTF-8 file (a byte order mark dropped); FormatError naming the byte otherwise."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(path.name, f"line {line}", f"not UTF-8 (byte 0x{data[exc.start]:02x})") from None


def json_lines(path: Path) -> Iterator[tuple[int, dict] | FormatError]:
    """(line number, object) for each non-blank line; a FormatError (yielded, reading goes on) for
    a line that is not a JSON object."""
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
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
