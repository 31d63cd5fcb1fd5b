"""JSON Lines in and out, with errors that name the file and line.

read_jsonl(path) -> iterator of (line_no, dict); blank lines are skipped.
write_jsonl(path, records, append=False) -> number written; a new file appears only complete
(written to a temporary file, renamed at the end), so a failed run leaves no half file.
"-" is stdin / stdout for both.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator

import numpy as np

_UMASK = os.umask(0o022)
os.umask(_UMASK)


class LineError(ValueError):
    """A line that is not one JSON object (the message says why; `template` and `params` say it as
    a template and its values, for a caller that shows it in another language)."""

    def __init__(self, template: str, **params):
        self.template, self.params = template, params
        super().__init__(template % params if params else template)


class JsonlError(ValueError):
    def __init__(self, path, line_no: int | None, reason: str):
        self.path, self.line_no, self.reason = str(path), line_no, reason
        where = f"{self.path}:{line_no}" if line_no else self.path
        super().__init__(f"{where}: {reason}")


def parse_line(line: str) -> dict:
    """One line of JSON Lines as a dict, or LineError saying why not in plain words.

    The one parser behind both policies: read_jsonl stops at the first bad line, the app's
    importer collects every bad line of a file before refusing it."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" ("Invalid control character at"): say it once.
        raise LineError(
            "invalid JSON: %(reason)s at column %(column)s", reason=exc.msg.removesuffix(" at"), column=exc.colno
        ) from None
    except RecursionError:
        raise LineError("invalid JSON: nested too deeply") from None
    except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
        raise LineError("invalid JSON: a number too long to read") from None
    if not isinstance(obj, dict):
        raise LineError("expected a JSON object, got %(kind)s", kind=json_kind(obj))
    return obj


def json_kind(value) -> str:
    """How a JSON value is named in a message: "an object", "an array", "a number"..."""
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def read_jsonl(path) -> Iterator[tuple[int, dict]]:
    try:
        handle = sys.stdin.buffer if str(path) == "-" else open(path, "rb")
    except OSError as exc:
        raise JsonlError(path, None, f"cannot open ({exc.strerror})") from None
    with handle if str(path) != "-" else contextlib.nullcontext(handle):
        for line_no, raw in enumerate(handle, start=1):
            try:  # decoded line by line, so that a bad byte is reported on its own line
                line = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise JsonlError(path, line_no, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            if not line.strip():
                continue
            try:
                yield line_no, parse_line(line)
            except LineError as exc:
                raise JsonlError(path, line_no, str(exc)) from None


def write_jsonl(path, records: Iterable[dict], append: bool = False) -> int:
    if str(path) == "-":
        return _write(sys.stdout, records)
    if append:
        with open(path, "a", encoding="utf-8") as handle:
            return _write(handle, records)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".jsonl", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            count = _write(handle, records)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return count


def _write(handle, records) -> int:
    count = 0
    for record in records:
        handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=_plain) + "\n")
        count += 1
    handle.flush()
    return count


def _plain(value):
    """numpy values -> plain JSON values."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
