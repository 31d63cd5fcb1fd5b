"""The format table: every file a user brings in, as notes or as gold labels, is read by one of
these formats, and the annotation export writes the ones that have a writer. One module per
format, each a reader (and a writer) over the neutral `Document` (formats.document), and one
entry each in `_entries` below. No Django here.

    fmt = get_format("brat")                          # UnsupportedFormat lists the supported ones
    problems = Problems()                             # webapp.lib.problems: file, line, why
    for doc in fmt.read(path, ReadOptions(limits=...), problems):
        ...                                           # only what could be read; the rest is in problems
    fmt.write(documents, out_path)                    # a file, or a folder for brat and XMI

Both imports consult this table and read through the same readers: the notes import
(webapp.corpus.importing) makes each document a note (its text, its id, its metadata), the gold
import (webapp.corpus.gold) maps each document's gold spans to annotations of its note.

| name | files | offsets | discontinuous spans | also carries |
| --- | --- | --- | --- | --- |
| jsonl | JSONL `{"id", "text", "metadata", "spans"}`, ours | code points | yes | all, and metadata |
| csv | CSV with columns id, text (others: metadata) | - | no spans | metadata |
| brat | folder of X.txt + X.ann | code points | yes (`0 4;9 12`) | attributes, source, reviewer |
| xmi | folder of X.xmi (+ TypeSystem.xml) | UTF-16 units | as fragments of a group | all (our layers) |
| labelstudio | one JSON array of tasks | UTF-16 units | as fragments `id/2` | all (region meta) |
| doccano | JSONL `{"text", "label": [[s, e, "L"]]}` | code points | one span per range | labels only |

Each module's docstring says how it carries what its format has no field for. A reader reports
what it cannot read to the `problems` it is given (file, line or record, why; never note text)
and calls `options.checkpoint()` before each document (it raises to stop the reading). No reader
holds more than `ReadOptions.limits.file_bytes` of one file (IMPORT_MAX_FILE_BYTES) read whole:
a larger one is refused before it is read (`_files.check_size`); JSONL and CSV are read a line
at a time, plain or compressed.

Adding a format: a module with `read(path, options, problems)` (and `write(documents, path)` to
export it) and one `Format` entry in `_entries`; the Import page, the API, the commands and the
annotation export offer it from here (docs/development.md, "Adding a format").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from webapp.lib.formats._files import position
from webapp.lib.formats.document import (
    SOURCES,
    WITHOUT_FEATURE,
    Document,
    FormatError,
    Span,
    UnsupportedFormat,
    check_spans,
)
from webapp.lib.import_limits import DEFAULT_LIMITS, ImportLimits
from webapp.lib.messages import gettext_noop  # a label a person reads: the forms show it translated

MISSING_FEATURE = ("refuse", "skip", "default")


def go_on() -> None:
    """The checkpoint of a reading nobody stops."""


@dataclass(frozen=True)
class ReadOptions:
    layer: str = (
        ""  # XMI: the annotation type to read (full name, or its last part: "CLINENTITY"); empty: every custom layer
    )
    feature: str = ""  # XMI: the feature whose value is the span's label; empty: the layer's short name
    # XMI: an annotation without a value for `feature` (E3C: 13 of the 36 English files' CLINENTITY lack
    # entityID): "refuse" the file, "skip" the span, or label it `feature_default` ("default").
    # Documents count such spans in metadata[WITHOUT_FEATURE].
    missing_feature: str = "refuse"
    feature_default: str = ""
    limits: ImportLimits = DEFAULT_LIMITS  # the import's (IMPORT_MAX_*, read afresh for each import)
    checkpoint: Callable[[], None] = field(default=go_on, compare=False)  # raises to stop the reading


@dataclass(frozen=True)
class Format:
    name: str
    label: str
    read: Callable[[Path, ReadOptions, object], Iterator[Document]]
    write: Callable[[Iterable[Document], Path], None] | None = None  # None: read only
    # A folder format: the suffixes of its files (a folder of them, or a zip: unpacked, written zipped).
    members: tuple[str, ...] = ()
    # The name suffixes that tell a file (or, of a folder format, one of its files) is in this format,
    # for the notes import's guess when no format is named; the first entry that matches is taken.
    detect: tuple[str, ...] = ()
    spans: bool = True  # its documents may carry spans: gold labels can be imported from it
    utf16: bool = False  # its files count offsets in UTF-16 code units
    carries: frozenset[str] = frozenset()  # of "discontinuous", "attributes", "source", "reviewer"
    suffix: str = ""  # of the file written (when not a folder)

    @property
    def writes_folder(self) -> bool:
        return bool(self.members)


def _entries() -> list[Format]:
    from webapp.lib.formats import brat, csvfile, doccano, jsonl, labelstudio, xmi

    return [
        Format(
            "jsonl",
            gettext_noop("JSONL (this studio's)"),
            jsonl.read,
            jsonl.write,
            detect=(".jsonl", ".ndjson", ".json"),
            carries=frozenset(jsonl.CARRIES),
            suffix=".jsonl",
        ),
        Format("csv", gettext_noop("CSV (columns id, text)"), csvfile.read, detect=(".csv",), spans=False),
        Format(
            "brat",
            "brat standoff",
            brat.read,
            brat.write,
            members=brat.MEMBERS,
            detect=(".ann",),
            carries=frozenset(brat.CARRIES),
        ),
        Format(
            "xmi",
            "UIMA CAS XMI (INCEpTION, WebAnno)",
            xmi.read,
            xmi.write,
            members=xmi.MEMBERS,
            detect=(".xmi",),
            utf16=True,
            carries=frozenset(xmi.CARRIES),
        ),
        Format(
            "labelstudio",
            "Label Studio JSON",
            labelstudio.read,
            labelstudio.write,
            utf16=True,
            carries=frozenset(labelstudio.CARRIES),
            suffix=".json",
        ),
        Format("doccano", "doccano JSONL", doccano.read, doccano.write, suffix=".jsonl"),
    ]


FORMATS: dict[str, Format] = {f.name: f for f in _entries()}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnsupportedFormat(
            f"the format {name!r} is not supported; supported formats: {', '.join(FORMATS)}"
        ) from None


def get_writer(name: str) -> Format:
    """The format `name` when the annotation export writes it; UnsupportedFormat listing those it writes."""
    format_ = FORMATS.get(name)
    if format_ is None or format_.write is None:
        raise UnsupportedFormat(
            f"the format {name!r} is not written by the annotation export; "
            f"formats written: {', '.join(f.name for f in writers())}"
        )
    return format_


def register(format_: Format) -> Format:
    """Add a format to the table (a test's toy format; a real one is an entry of `_entries`)."""
    if format_.name in FORMATS:
        raise ValueError(f"a format named {format_.name!r} is registered already")
    FORMATS[format_.name] = format_
    return format_


def unregister(name: str) -> None:
    FORMATS.pop(name, None)


def readers() -> list[Format]:
    """Every format, in the table's order: notes can be read from each."""
    return list(FORMATS.values())


def span_readers() -> list[Format]:
    """The formats whose documents may carry spans: gold labels can be imported from them."""
    return [f for f in FORMATS.values() if f.spans]


def writers() -> list[Format]:
    """The formats the annotation export writes."""
    return [f for f in FORMATS.values() if f.write is not None]


def folder_formats() -> list[Format]:
    return [f for f in FORMATS.values() if f.members]


def detect_format(path: Path, names: Iterable[str] = ()) -> str | None:
    """The format a file or folder is in, by its name, compression suffixes (.gz, .bz2, .xz)
    aside, or by the names of its files (a folder, or a zip: `names`, its members' names); None
    when no entry's `detect` suffixes say. The first entry that matches is taken."""
    from webapp.lib.input_files import NAMED

    if path.is_dir() or names:
        found = {Path(n).suffix.lower() for n in (names or (p.name for p in path.iterdir()))}
        return next((f.name for f in folder_formats() if found & set(f.detect)), None)
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in NAMED]
    last = suffixes[-1] if suffixes else ""
    one_file_first = sorted(FORMATS.values(), key=lambda f: bool(f.members))  # a file of a folder format: said
    return next((f.name for f in one_file_first if last in f.detect), None)


__all__ = [
    "FORMATS",
    "SOURCES",
    "Document",
    "Format",
    "FormatError",
    "MISSING_FEATURE",
    "ReadOptions",
    "WITHOUT_FEATURE",
    "Span",
    "UnsupportedFormat",
    "check_spans",
    "detect_format",
    "get_format",
    "get_writer",
    "go_on",
    "position",
    "readers",
    "register",
    "span_readers",
    "unregister",
    "writers",
]
