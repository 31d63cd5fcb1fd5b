"""JSONL: one document a line, the notes import's file and this studio's own annotation format.

    {"id": "n1", "text": "...", "metadata": {"ward": "ED"},
     "spans": [{"ranges": [[0, 4], [9, 12]], "label": "L", "attributes": {"k": "v"},
                "source": "gold", "reviewer": "ann", "id": "T1"}]}

`id` (a string or an integer) and `text` are needed; `metadata` (an object) and `spans` are not.
Other fields are kept in the document's metadata (a flat export needs no nesting), with one
warning for the file. Offsets: code points, half-open. The file may be compressed (gzip, bz2, xz:
told by its bytes) and is read a line at a time (webapp.lib.input_files). No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from webapp.lib.formats._files import (
    ARRAY,
    OBJECT,
    STRING,
    STRING_OR_INTEGER,
    checked,
    json_objects,
    kind,
    missing_fields,
    must_be,
    report,
)
from webapp.lib.formats.document import SOURCES, Document, FormatError, Span
from webapp.lib.messages import gettext_noop, message
from webapp.lib.validators import shown_names

CARRIES = ("discontinuous", "attributes", "source", "reviewer")
FIELDS = ("id", "text", "metadata", "spans")


def read(path: Path, options, problems) -> Iterator[Document]:
    source = path.name
    extra_names: set[str] = set()
    extra_lines, first_extra_line = 0, None
    for number, obj in json_objects(path, options, problems):
        where = f"line {number}"
        try:
            doc, extra = _document(obj, source, where)
        except FormatError as exc:
            report(exc, problems)
            continue
        item = checked(doc, source, where)
        if isinstance(item, FormatError):
            report(item, problems)
            continue
        if extra:
            extra_lines += 1
            first_extra_line = first_extra_line or number
            if len(extra_names) <= 10:
                extra_names.update(extra)
        yield doc
    if extra_lines:
        problems.warn(
            source,
            first_extra_line,
            message(
                gettext_noop(
                    "%(count)s line(s), this one first, have fields besides %(fields)s and %(last)s (%(names)s); "
                    "they were kept in each note's metadata"
                ),
                count=f"{extra_lines:,}",
                fields=", ".join(FIELDS[:-1]),
                last=FIELDS[-1],
                names=", ".join(shown_names(sorted(extra_names))),
            ),
        )


def _document(obj: dict, source: str, where: str) -> tuple[Document, dict]:
    missing = [k for k in ("id", "text") if k not in obj]
    if missing:
        raise FormatError(source, where, missing_fields(missing))
    raw_id, text = obj["id"], obj["text"]
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise FormatError(source, where, must_be(STRING_OR_INTEGER, "id", raw_id))
    if not isinstance(text, str):
        raise FormatError(source, where, must_be(STRING, "text", text))
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise FormatError(source, where, must_be(OBJECT, "metadata", metadata))
    extra = {k: v for k, v in obj.items() if k not in FIELDS}
    clash = sorted(set(extra) & set(metadata))
    if clash:
        raise FormatError(
            source,
            where,
            message(
                gettext_noop("field(s) %(names)s given both at top level and in 'metadata'"),
                names=", ".join(shown_names(clash)),
            ),
        )
    spans = obj.get("spans", [])
    if not isinstance(spans, list):
        raise FormatError(source, where, must_be(ARRAY, "spans", spans))
    doc = Document(str(raw_id), text, metadata={**metadata, **extra}, where=where)
    for i, s in enumerate(spans, 1):
        doc.spans.append(_span(s, source, f"{where} span {i}"))
    return doc, extra


def _span(s, source: str, where: str) -> Span:
    if not isinstance(s, dict):
        raise FormatError(source, where, message(gettext_noop("a span must be an object, not %(kind)s"), kind=kind(s)))
    ranges = s.get("ranges")
    if not isinstance(ranges, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in ranges
    ):
        raise FormatError(source, where, gettext_noop("field 'ranges' must be an array of [start, end] integer pairs"))
    label, attributes = s.get("label"), s.get("attributes") or {}
    if not isinstance(label, str):
        raise FormatError(source, where, must_be(STRING, "label", label))
    if not isinstance(attributes, dict):
        raise FormatError(source, where, must_be(OBJECT, "attributes", attributes))
    src = s.get("source", "gold")
    if src not in SOURCES:
        raise FormatError(
            source,
            where,
            message(
                gettext_noop("field '%(field)s' must be one of %(values)s"), field="source", values=", ".join(SOURCES)
            ),
        )
    return Span.of(
        ranges, label, attributes, source=src, reviewer=str(s.get("reviewer") or ""), id=str(s.get("id") or "")
    )


def write(documents: Iterable[Document], path: Path) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for doc in documents:
            spans = [
                {
                    "id": s.id,
                    "ranges": [list(r) for r in s.ranges],
                    "label": s.label,
                    "attributes": s.attrs,
                    "source": s.source,
                    "reviewer": s.reviewer,
                }
                for s in doc.spans
            ]
            f.write(json.dumps({"id": doc.id, "text": doc.text, "spans": spans}, ensure_ascii=False) + "\n")
