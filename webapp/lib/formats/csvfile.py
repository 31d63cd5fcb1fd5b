"""CSV notes: a header naming the columns `id` and `text` (case-sensitive), one note a row; every
other column becomes the note's metadata (a string each). Notes only: CSV carries no spans, so it
is neither an annotation format nor written by the annotation export. The file may be compressed
(gzip, bz2, xz: told by its bytes).

A row may span lines (a quoted field holds line breaks): its characters are counted as its
lines are read and a row longer than a note and its metadata can take (`ImportLimits.csv_row_chars`)
stops the file, as does a header of more than MAX_CSV_COLUMNS columns. A first line that lacks
the id and text columns may be data, so the message gives its number of columns, never its cells.
No Django here."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from webapp.lib.formats.document import Document
from webapp.lib.import_limits import ImportLimits, over_limit
from webapp.lib.input_files import open_lines
from webapp.lib.messages import Message, gettext_noop, message
from webapp.lib.validators import shown_names

MAX_CSV_COLUMNS = 1000


def read(path: Path, options, problems) -> Iterator[Document]:
    source, limits = path.name, options.limits
    csv.field_size_limit(limits.line_bytes)  # a long note gets the clearer "has N characters" message
    with open_lines(path, problems, limits, keep_bad_lines=True) as numbered:
        rows = _CountedRows(numbered, limits.csv_row_chars)
        reader = csv.reader(rows, strict=True)
        try:
            header = rows.next_row(reader)
        except StopIteration:
            if not problems:
                problems.add(source, None, gettext_noop("the file is empty"))
            return
        except csv.Error as exc:
            problems.add(source, 1, gettext_noop("unreadable CSV header: %(reason)s"), reason=str(exc))
            return
        except _RowTooLong:
            problems.add(source, 1, _row_too_long(limits))
            return
        header = [name.strip() for name in header]
        if not _header_ok(header, source, problems):
            return
        id_at, text_at = header.index("id"), header.index("text")
        end_line = reader.line_num
        while True:
            options.checkpoint()
            start_line = end_line + 1
            try:
                row = rows.next_row(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                problems.add(source, start_line, gettext_noop("unreadable CSV row: %(reason)s"), reason=str(exc))
                return
            except _RowTooLong:
                problems.add(source, start_line, _row_too_long(limits))
                return
            end_line = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                problems.add(
                    source,
                    start_line,
                    gettext_noop("row has %(count)s fields, the header has %(header)s"),
                    count=len(row),
                    header=len(header),
                )
                continue
            metadata = {name: value for i, (name, value) in enumerate(zip(header, row)) if i not in (id_at, text_at)}
            yield Document(row[id_at], row[text_at], metadata=metadata, where=f"line {start_line}")


class _RowTooLong(Exception):
    """A CSV row over ImportLimits.csv_row_chars: the file is read no further."""


class _CountedRows:
    """The text lines of a CSV file for csv.reader, counting the characters of the row being read:
    a row over `most` raises _RowTooLong before it fills the memory (an unclosed quote joins every
    line after it into one field)."""

    def __init__(self, numbered, most: int):
        self.numbered, self.most, self.chars = numbered, most, 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        _, text = next(self.numbered)
        self.chars += len(text)
        if self.chars > self.most:
            raise _RowTooLong
        return text

    def next_row(self, reader) -> list[str]:
        self.chars = 0
        return next(reader)


def _header_ok(header: list[str], source: str, problems) -> bool:
    if len(header) > MAX_CSV_COLUMNS:
        problems.add(
            source,
            1,
            over_limit(
                "the CSV header",
                len(header),
                MAX_CSV_COLUMNS,
                "MAX_CSV_COLUMNS in webapp/lib/formats/csvfile.py",
                "columns",
            ),
        )
        return False
    missing = [c for c in ("id", "text") if c not in header]
    if missing:
        # The first line may be data: say how many columns it has, never what they hold.
        lower = {name.lower() for name in header}
        if any(c in lower for c in missing):
            template = gettext_noop(
                "the first line must be a header naming the columns id and text (missing: %(missing)s; it has "
                "%(count)s column(s); column names are case-sensitive)"
            )
        else:
            template = gettext_noop(
                "the first line must be a header naming the columns id and text (missing: %(missing)s; it has "
                "%(count)s column(s))"
            )
        problems.add(source, 1, template, missing=", ".join(missing), count=f"{len(header):,}")
        return False
    duplicated = sorted(name for name, count in Counter(header).items() if count > 1)
    if duplicated:
        problems.add(
            source, 1, gettext_noop("CSV header repeats column(s) %(names)s"), names=", ".join(shown_names(duplicated))
        )
        return False
    return True


def _row_too_long(limits: ImportLimits) -> Message:
    return message(
        gettext_noop(
            "the CSV row starting here has more than %(most)s characters, more than a note of %(note)s characters "
            "(IMPORT_MAX_NOTE_CHARS) and its metadata can take (is a quote left open?); nothing after it was read"
        ),
        most=f"{limits.csv_row_chars:,}",
        note=f"{limits.note_chars:,}",
    )
