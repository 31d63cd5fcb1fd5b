"""Reading helpers shared by the format modules: UTF-8 text and JSON lines, with problems that
name the file and the line or record (never the text). No Django here.

Every reader reports what it cannot read, and what it accepts but its user should hear about, to
the import's `Problems` (webapp.lib.problems) and yields only the documents it could read. A
format that parses a document at a time raises FormatError inside and turns it into a problem
with `reported`.

Every file read whole is checked against `ReadOptions.limits.file_bytes` (IMPORT_MAX_FILE_BYTES)
before it is read (`check_size`, the import's one check, `webapp.lib.import_limits.file_too_large`):
a reader then holds at most that much of it. A format that parses a file whole (XMI, Label
Studio) holds several times its bytes: it passes that factor (`file_limit(options,
parsed_size=...)`), and its files may have that much less, so one file's reading takes about
IMPORT_MAX_FILE_BYTES of memory whatever the format. JSON lines are read a line at a time, plain
or compressed (`webapp.lib.input_files.open_lines`: its limits and messages)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from ml.jsonl import LineError, json_kind, parse_line
from webapp.lib.formats.document import Document, FormatError, check_spans
from webapp.lib.import_limits import THE_FILE, file_too_large
from webapp.lib.input_files import open_lines
from webapp.lib.messages import Message, gettext_noop, message, phrase

# ml.jsonl.parse_line's reasons (LineError.template), translated where a problem is shown
LINE_ERRORS = (
    gettext_noop("invalid JSON: %(reason)s at column %(column)s"),
    gettext_noop("invalid JSON: nested too deeply"),
    gettext_noop("invalid JSON: a number too long to read"),
    gettext_noop("expected a JSON object, got %(kind)s"),
)


def kind(value) -> Message:
    """How a JSON value is named in a message: "an object", "an array", "a number"... (translated
    where the message is shown; its str() is ml.jsonl.json_kind's English)."""
    return Message(json_kind(value))


@dataclass(frozen=True)
class FileLimit:
    """The most bytes one file of a format may have, and how it follows from the setting."""

    bytes: int
    setting: str = "IMPORT_MAX_FILE_BYTES"


def file_limit(options, parsed_size: int = 1, what: str = "") -> FileLimit:
    """`options.limits.file_bytes` (the import passes IMPORT_MAX_FILE_BYTES), divided by
    `parsed_size`, the times its bytes a file of `what` format takes once parsed whole."""
    most = options.limits.file_bytes
    if parsed_size == 1:
        return FileLimit(most)
    return FileLimit(
        most // parsed_size,
        f"IMPORT_MAX_FILE_BYTES / {parsed_size}: {what} is parsed whole, at about {parsed_size} times its size",
    )


def check_size(path: Path, limit: FileLimit, size: int | None = None) -> None:
    """FormatError naming the file and the setting when it is larger (its size on disk, or
    `size` read); nothing is read."""
    refusal = file_too_large(THE_FILE, path.stat().st_size if size is None else size, limit.bytes, limit.setting)
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
        raise FormatError(
            path.name,
            f"line {line}",
            message(gettext_noop("not UTF-8 (byte %(byte)s)"), byte=f"0x{data[exc.start]:02x}"),
        ) from None


def json_objects(path: Path, options, problems) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line that is a JSON object, a line at a time, of a
    plain or compressed file; each line that is not is a problem of the file."""
    with open_lines(path, problems, options.limits) as lines:
        for number, line in lines:
            options.checkpoint()
            if not line.strip():
                continue
            try:
                yield number, parse_line(line)
            except LineError as exc:
                params = {name: phrase(v) if isinstance(v, str) else v for name, v in exc.params.items()}
                problems.add(path.name, number, exc.template, **params)


def reported(items: Iterable[Document | FormatError], problems, options) -> Iterator[Document]:
    """The documents of a reading that yields FormatErrors among them, each error a problem;
    `options.checkpoint()` before each one is read."""
    iterator = iter(items)
    while True:
        options.checkpoint()
        item = next(iterator, None)
        if item is None:
            return
        if isinstance(item, FormatError):
            report(item, problems)
        else:
            yield item


def report(error: FormatError, problems) -> None:
    """A FormatError as a problem: "line N" its line, any other place ("task 3", "line 2 label 1")
    before its reason."""
    line = line_of(error.where)
    if line is not None:
        problems.add(error.source, line, error.reason)
    else:
        reason = (
            message("%(where)s: %(reason)s", where=error.where, reason=error.reason) if error.where else error.reason
        )
        problems.add(error.source, None, reason)


def line_of(where) -> int | None:
    """The line number of a place "line N"; None for any other place (a Message, "task 3")."""
    if isinstance(where, str) and where.startswith("line ") and where[5:].isdigit():
        return int(where[5:])
    return None


def position(doc: Document, name: str) -> tuple[str, int | None]:
    """Where a document was read, as a problem names it: (`name`, its line) for a line of the file
    `name`, (`name` and its place, None) for a record of it ("export.json task 3"), (its own file,
    None) for a document of a folder ("n1.txt", "EN1.xmi")."""
    line = line_of(doc.where)
    if line is not None:
        return name, line
    if doc.where.startswith("task "):
        return f"{name} {doc.where}", None
    return doc.where or name, None


THE_DOCUMENT_ID = Message(gettext_noop("the document id"))

# "field 'text' must be a string, not an array": `must_be(STRING, "text", value)`
STRING = gettext_noop("field '%(field)s' must be a string, not %(kind)s")
OBJECT = gettext_noop("field '%(field)s' must be an object, not %(kind)s")
ARRAY = gettext_noop("field '%(field)s' must be an array, not %(kind)s")
STRING_OR_INTEGER = gettext_noop("field '%(field)s' must be a string or an integer, not %(kind)s")
NON_EMPTY_STRING = gettext_noop("field '%(field)s' must be a non-empty string, not %(kind)s")


def must_be(template: str, field: str, value) -> Message:
    """A field of the wrong JSON type, by one of the templates above."""
    return message(template, field=field, kind=kind(value))


def missing_fields(names) -> Message:
    return message(gettext_noop("missing field(s) %(names)s"), names=", ".join(names))


def note_id(value, source: str, where: str, name=THE_DOCUMENT_ID) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise FormatError(
            source,
            where,
            message(
                gettext_noop("%(name)s must be a non-empty string or integer, not %(kind)s"),
                name=name,
                kind=kind(value),
            ),
        )
    return str(value)


def checked(doc: Document, source: str, where: str) -> Document | FormatError:
    """The document, or a FormatError naming its first span problems."""
    problems = check_spans(doc)
    if problems:
        reasons = problems[0]
        for reason in problems[1:3]:
            reasons = message("%(before)s; %(after)s", before=reasons, after=reason)
        if len(problems) > 3:
            template = gettext_noop("document %(id)s: %(reasons)s (and %(more)s more)")
            return FormatError(
                source, where, message(template, id=repr(doc.id), reasons=reasons, more=len(problems) - 3)
            )
        return FormatError(
            source, where, message(gettext_noop("document %(id)s: %(reasons)s"), id=repr(doc.id), reasons=reasons)
        )
    return doc


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
    return unquote(stem) if "%" in stem else stem
