"""The one CSV writer for every export the app offers (audit log, predictions, comparison tables).

Exports are opened in spreadsheets by people who did not write their contents: note ids, labels
and usernames come from imported files or a login form. A text cell that a spreadsheet would read
as a formula (its first character one of = + - @ tab or carriage return; OWASP's rule) is written
with a leading apostrophe, which spreadsheets show as text. Numbers are written as they are: a
figure we formatted ourselves goes in as a `Figure` so that "-1.5" stays a number.
"""

import csv
import io
from collections.abc import Iterable, Iterator

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CHUNK_CHARS = 64_000


class Figure(str):
    """The text of a number formatted by our code (never from user input): written unquoted."""


def figure(value, spec: str) -> Figure:
    return Figure(format(value, spec))


def safe_cell(value):
    """`value` as a cell: None empty, numbers and Figures as they are, other text neutralised."""
    if value is None:
        return ""
    if isinstance(value, Figure) or isinstance(value, int | float):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


class _Line:
    """A file-like object whose write() returns what it is given (csv.writer then returns the line)."""

    def write(self, value):
        return value


def csv_lines(header: Iterable, rows: Iterable[Iterable]) -> Iterator[str]:
    """The CSV text of `header` and `rows`, one line at a time (for streaming responses)."""
    writer = csv.writer(_Line())
    yield writer.writerow([safe_cell(name) for name in header])
    for row in rows:
        yield writer.writerow([safe_cell(value) for value in row])


def csv_chunks(header: Iterable, rows: Iterable[Iterable], size: int = CHUNK_CHARS) -> Iterator[str]:
    """The lines of csv_lines() joined into chunks of about `size` characters (fewer, larger writes)."""
    buffer = io.StringIO()
    for line in csv_lines(header, rows):
        buffer.write(line)
        if buffer.tell() >= size:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


def csv_text(header: Iterable, rows: Iterable[Iterable]) -> str:
    return "".join(csv_lines(header, rows))
