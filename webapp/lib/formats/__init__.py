"""The annotation-tool formats: one module per format, each a reader and a writer over the
neutral `Document` (formats.document), and this table of them. No Django here.

    fmt = get_format("brat")                          # UnsupportedFormat lists the supported ones
    for doc in fmt.read(path, ReadOptions()):         # FormatError: file, line/record, why
        ...
    fmt.write(documents, out_path)                    # a file, or a folder for brat and XMI

| name | files | offsets | discontinuous spans | also carries |
| --- | --- | --- | --- | --- |
| brat | folder of X.txt + X.ann | code points | yes (`0 4;9 12`) | attributes, source, reviewer |
| xmi | folder of X.xmi (+ TypeSystem.xml) | UTF-16 units | as fragments of a group | all (our layers) |
| labelstudio | one JSON array of tasks | UTF-16 units | as fragments `id/2` | all (region meta) |
| doccano | JSONL `{"text", "label": [[s, e, "L"]]}` | code points | one span per range | labels only |
| jsonl | JSONL, ours: the neutral document | code points | yes | all |

Each module's docstring says how it carries what its format has no field for. No reader holds
more than `ReadOptions.file_bytes` of one file (IMPORT_MAX_FILE_BYTES): a larger one is refused
before it is read (`_files.check_size`).

Adding a format: a module with `read(path, options)` and `write(documents, path)` and one
`Format` entry below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.lib.formats._files import FILE_BYTES
from webapp.lib.formats.document import (
    SOURCES,
    WITHOUT_FEATURE,
    Document,
    FormatError,
    Span,
    UnsupportedFormat,
    check_spans,
)

MISSING_FEATURE = ("refuse", "skip", "default")


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
    file_bytes: int = FILE_BYTES  # a larger file is refused unread (IMPORT_MAX_FILE_BYTES; the import passes it)


@dataclass(frozen=True)
class Format:
    name: str
    label: str
    read: Callable[[Path, ReadOptions], Iterator[Document]]
    write: Callable[[Iterable[Document], Path], None]
    writes_folder: bool  # the writer makes a folder (zipped for a download)
    utf16: bool  # its files count offsets in UTF-16 code units
    carries: frozenset[str]  # of "discontinuous", "attributes", "source", "reviewer"
    suffix: str = ""  # of the file written (when not a folder)


def _entries() -> dict[str, Format]:
    from webapp.lib.formats import brat, doccano, jsonl, labelstudio, xmi

    return {
        f.name: f
        for f in (
            Format("brat", "brat standoff", brat.read, brat.write, True, False, frozenset(brat.CARRIES)),
            Format("xmi", "UIMA CAS XMI (INCEpTION, WebAnno)", xmi.read, xmi.write, True, True, frozenset(xmi.CARRIES)),
            Format(
                "labelstudio",
                "Label Studio JSON",
                labelstudio.read,
                labelstudio.write,
                False,
                True,
                frozenset(labelstudio.CARRIES),
                ".json",
            ),
            Format("doccano", "doccano JSONL", doccano.read, doccano.write, False, False, frozenset(), ".jsonl"),
            Format(
                "jsonl",
                "JSONL (this studio's)",
                jsonl.read,
                jsonl.write,
                False,
                False,
                frozenset(jsonl.CARRIES),
                ".jsonl",
            ),
        )
    }


FORMATS: dict[str, Format] = _entries()


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]
    except KeyError:
        raise UnsupportedFormat(
            f"the format {name!r} is not supported; supported formats: {', '.join(FORMATS)}"
        ) from None


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
    "get_format",
]
