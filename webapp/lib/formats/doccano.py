"""doccano's sequence-labelling JSONL: one document a line.

    {"id": 7, "text": "...", "label": [[start, end, "LABEL"], ...]}            (doccano 1.x export)
    {"id": 7, "text": "...", "entities": [{"start_offset", "end_offset", "label"}]}   (newer exports)

The document's id is `note_id` when the line has one, else `id`. Offsets: code points (doccano is
written in Python), half-open. doccano has neither discontinuous spans nor attributes: a
discontinuous span is written as one span per range, and every span reads back as gold. The
file may be compressed (gzip, bz2, xz) and is read a line at a time. No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from webapp.lib.formats._files import ARRAY, checked, json_objects, must_be, note_id, report
from webapp.lib.formats.document import Document, FormatError, Span
from webapp.lib.messages import gettext_noop

CARRIES = ()


def read(path: Path, options, problems) -> Iterator[Document]:
    for number, obj in json_objects(path, options, problems):
        where = f"line {number}"
        try:
            item = checked(_document(obj, path.name, where), path.name, where)
        except FormatError as exc:
            item = exc
        if isinstance(item, FormatError):
            report(item, problems)
        else:
            yield item


def _document(obj: dict, source: str, where: str) -> Document:
    if "text" not in obj or not isinstance(obj["text"], str):
        raise FormatError(source, where, gettext_noop("field 'text' (a string) is missing"))
    raw_id = obj.get("note_id", obj.get("id"))
    doc = Document(note_id(raw_id, source, where), obj["text"], where=where)
    if "label" in obj and isinstance(obj["label"], list):
        for i, item in enumerate(obj["label"], 1):
            if not (isinstance(item, list) and len(item) == 3 and _ints(item[:2]) and isinstance(item[2], str)):
                raise FormatError(source, f"{where} label {i}", gettext_noop('a label must be [start, end, "LABEL"]'))
            doc.spans.append(Span.of([item[:2]], item[2], id=str(i)))
    elif "entities" in obj and isinstance(obj["entities"], list):
        for i, e in enumerate(obj["entities"], 1):
            if not (
                isinstance(e, dict)
                and _ints([e.get("start_offset"), e.get("end_offset")])
                and isinstance(e.get("label"), str)
            ):
                raise FormatError(
                    source, f"{where} entity {i}", gettext_noop("an entity needs start_offset, end_offset and label")
                )
            doc.spans.append(Span.of([[e["start_offset"], e["end_offset"]]], e["label"], id=str(e.get("id", i))))
    elif "label" in obj or "entities" in obj:
        raise FormatError(source, where, must_be(ARRAY, "label", obj.get("label", obj.get("entities"))))
    return doc


def _ints(values) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values)


def write(documents: Iterable[Document], path: Path) -> None:
    with Path(path).open("w", encoding="utf-8") as f:
        for doc in documents:
            labels = [[s, e, span.label] for span in doc.spans for s, e in span.ranges]
            f.write(json.dumps({"id": doc.id, "text": doc.text, "label": labels}, ensure_ascii=False) + "\n")
