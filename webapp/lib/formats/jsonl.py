"""This studio's JSONL: one document a line, every field of the neutral document.

    {"id": "n1", "text": "...", "spans": [{"ranges": [[0, 4], [9, 12]], "label": "L",
     "attributes": {"k": "v"}, "source": "gold", "reviewer": "ann", "id": "T1"}]}

Offsets: code points, half-open. No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from webapp.lib.formats._files import checked, file_limit, json_lines, kind, note_id
from webapp.lib.formats.document import SOURCES, Document, FormatError, Span

CARRIES = ("discontinuous", "attributes", "source", "reviewer")


def read(path: Path, options=None) -> Iterator[Document | FormatError]:
    for item in json_lines(path, file_limit(options)):
        if isinstance(item, FormatError):
            yield item
            continue
        number, obj = item
        where = f"line {number}"
        try:
            yield checked(_document(obj, path.name, where), path.name, where)
        except FormatError as exc:
            yield exc


def _document(obj: dict, source: str, where: str) -> Document:
    missing = [k for k in ("id", "text") if k not in obj]
    if missing:
        raise FormatError(source, where, f"missing field(s) {', '.join(missing)}")
    if not isinstance(obj["text"], str):
        raise FormatError(source, where, f"field 'text' must be a string, not {kind(obj['text'])}")
    spans = obj.get("spans", [])
    if not isinstance(spans, list):
        raise FormatError(source, where, f"field 'spans' must be an array, not {kind(spans)}")
    doc = Document(note_id(obj["id"], source, where), obj["text"], metadata=obj.get("metadata") or {}, where=where)
    for i, s in enumerate(spans, 1):
        doc.spans.append(_span(s, source, f"{where} span {i}"))
    return doc


def _span(s, source: str, where: str) -> Span:
    if not isinstance(s, dict):
        raise FormatError(source, where, f"a span must be an object, not {kind(s)}")
    ranges = s.get("ranges")
    if not isinstance(ranges, list) or not all(
        isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in r)
        for r in ranges
    ):
        raise FormatError(source, where, "field 'ranges' must be an array of [start, end] integer pairs")
    label, attributes = s.get("label"), s.get("attributes") or {}
    if not isinstance(label, str):
        raise FormatError(source, where, f"field 'label' must be a string, not {kind(label)}")
    if not isinstance(attributes, dict):
        raise FormatError(source, where, f"field 'attributes' must be an object, not {kind(attributes)}")
    src = s.get("source", "gold")
    if src not in SOURCES:
        raise FormatError(source, where, f"field 'source' must be one of {', '.join(SOURCES)}")
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
