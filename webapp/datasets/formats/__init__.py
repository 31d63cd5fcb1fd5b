"""The dataset export formats: one module per writer, each defining its `FORMAT`, and one line
each in `_entries` below. The dataset page's buttons, the export command, the API, the worker
export and the downloads all read this table; an unknown name is refused with the supported ones
(`get_format`).

A format is either
- one data file written batch by batch (`data_file` and `steps(batches, sink, counter, describe)`,
  a generator that yields after each batch): a download streams it as it is made, and a folder
  export holds it beside manifest.json; or
- a folder a worker prepares (`folder(batches, out, counter, progress)`, no data file): the
  Hugging Face `datasets` folder.
Either way a writer is given the rows as `batches` (lists of row dicts with the columns of
SCHEMA, EXPORT_BATCH at a time: webapp.datasets.rows.iter_batches), calls `counter.written(rows)`
after each batch, and `describe(rows)` gives the manifest to store inside the file when the
format has a place for it (Parquet's key-value metadata). Writers know no database.

Adding a format: a module here with its writer and `FORMAT = DatasetFormat(...)`, and its line
in `_entries` (docs/development.md, "Adding a format").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

EXPORT_BATCH = 2_000  # rows a batch

SCHEMA = pa.schema(
    [
        ("example_id", pa.int64()),
        ("note_id", pa.string()),
        ("task_slugs", pa.list_(pa.string())),
        ("task_descriptions", pa.list_(pa.string())),
        ("input", pa.string()),
        ("label", pa.string()),
        ("char_start", pa.int64()),
        ("char_end", pa.int64()),
        ("prompt", pa.string()),
        ("answer", pa.string()),
    ]
)
COLUMNS = SCHEMA.names

Batches = Iterable[list[dict]]


class ExportStopped(Exception):
    """Raised by a `progress` callback to stop writing after a batch (cancelled, or taken over)."""


class UnknownFormat(ValueError):
    """A format name that is not in the table; the message lists the supported ones."""


@dataclass(frozen=True)
class DatasetFormat:
    name: str  # at most 10 characters (DatasetExport.format)
    label: str
    data_file: str | None = None  # one data file written batch by batch: downloadable as it is made
    steps: Callable[..., Iterator[None]] | None = None  # (batches, sink, counter, describe): the data file
    folder: Callable[..., None] | None = None  # (batches, out, counter, progress): a folder (no data file)
    deflate: bool = True  # compress the data file in a zip (Parquet is compressed already)

    def write_folder(self, batches: Batches, out: Path, counter, progress: Callable[[int], None], describe) -> None:
        """Write this format's files into the folder `out`; `progress(rows)` after each batch."""
        if self.folder is not None:
            self.folder(batches, out, counter, progress)
            return
        with open(out / self.data_file, "wb") as f:
            for _ in self.steps(batches, Relay(f), counter, describe):
                progress(counter.rows)


class Relay:
    """A file-like sink that keeps the position pyarrow asks for while writing into a file or a
    zip entry (which cannot tell it)."""

    def __init__(self, target):
        self.target, self.position, self.closed = target, 0, False

    def write(self, data) -> int:
        self.target.write(data)
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _entries() -> list[DatasetFormat]:
    from webapp.datasets.formats import hf, jsonl, parquet

    return [jsonl.FORMAT, parquet.FORMAT, hf.FORMAT]


FORMATS: dict[str, DatasetFormat] = {f.name: f for f in _entries()}


def get_format(name: str) -> DatasetFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownFormat(f"Unknown export format {name!r}; choose one of {', '.join(FORMATS)}.") from None


def choices() -> list[tuple[str, str]]:
    """(name, label) of every format: DatasetExport.format's choices, read when they are asked for."""
    return [(f.name, f.label) for f in FORMATS.values()]


def data_files() -> dict[str, str]:
    """The formats downloadable at once, and their data file."""
    return {f.name: f.data_file for f in FORMATS.values() if f.data_file}


def register(format_: DatasetFormat) -> DatasetFormat:
    """Add a format to the table (a test's toy writer; a real one is a line of `_entries`)."""
    if format_.name in FORMATS:
        raise ValueError(f"an export format named {format_.name!r} is registered already")
    FORMATS[format_.name] = format_
    return format_


def unregister(name: str) -> None:
    FORMATS.pop(name, None)
