"""Label Studio's JSON export: an array of tasks (a single task object is read too).

    [{"id": 1, "data": {"text": "...", "note_id": "n1"},
      "annotations": [{"completed_by": 3, "result": [R, ...]}],
      "predictions": [{"model_version": "...", "result": [R, ...]}]}]
    R = {"id": "a1", "from_name": "label", "to_name": "text", "type": "labels",
         "value": {"start": 0, "end": 4, "text": "...", "labels": ["L"]}}

The document's id is `data.note_id`, else `data.id`, else the task's `id`; its text `data.text`.
Offsets are UTF-16 code units (Label Studio works in JavaScript strings) and are converted.
Spans of `annotations` are gold, those of `predictions` predictions. Results of other types
(choices, relations) are skipped. What the format cannot say itself travels in the region's
`meta.text` lines, which Label Studio shows as the region's note and keeps: `source: decision`,
`reviewer: alice`, `attribute NAME: VALUE`; a discontinuous span is written as fragments whose
result ids are `ID`, `ID/2`, `ID/3`..., regrouped on reading. Without a `reviewer` line, a
reviewer is the annotation's `completed_by` (an id, or the object's email). No Django here."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from xml.sax.saxutils import quoteattr

from webapp.lib.formats._files import checked, file_limit, kind, note_id, read_text, reported
from webapp.lib.formats.document import Document, FormatError, Span
from webapp.lib.formats.offsets import Utf16Offsets
from webapp.lib.messages import gettext_noop, message, phrase

CARRIES = ("discontinuous", "attributes", "source", "reviewer")
SPAN_TYPES = ("labels", "hypertextlabels")
PARSED_SIZE = (
    8  # json.loads holds an export whole: 3.7 times its bytes for long texts (measured), more for many regions
)


def read(path: Path, options, problems) -> Iterator[Document]:
    return reported(_documents(path, options), problems, options)


def _documents(path: Path, options) -> Iterator[Document | FormatError]:
    try:
        data = json.loads(read_text(path, file_limit(options, PARSED_SIZE, "a Label Studio export")))
    except FormatError as exc:
        yield exc
        return
    except json.JSONDecodeError as exc:
        yield FormatError(
            path.name,
            f"line {exc.lineno}",
            message(
                gettext_noop("not JSON (%(reason)s at column %(column)s)"), reason=phrase(exc.msg), column=exc.colno
            ),
        )
        return
    tasks = [data] if isinstance(data, dict) else data
    if not isinstance(tasks, list):
        yield FormatError(
            path.name,
            None,
            message(gettext_noop("expected an array of Label Studio tasks, got %(kind)s"), kind=kind(data)),
        )
        return
    for number, task in enumerate(tasks, 1):
        where = f"task {number}"
        try:
            yield checked(_document(task, path.name, where), path.name, where)
        except FormatError as exc:
            yield exc


def _document(task, source: str, where: str) -> Document:
    if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
        raise FormatError(source, where, gettext_noop("a task must be an object with a 'data' object"))
    data = task["data"]
    if not isinstance(data.get("text"), str):
        keys = ", ".join(sorted(map(str, data))[:10])
        raise FormatError(
            source,
            where,
            message(gettext_noop("data.text (the note's text, a string) is missing; data has: %(keys)s"), keys=keys),
        )
    raw_id = data.get("note_id", data.get("id", task.get("id")))
    doc = Document(note_id(raw_id, source, where), data["text"], where=where)
    units = Utf16Offsets(doc.text)
    for group, default_source in (("annotations", "gold"), ("predictions", "prediction")):
        entries = task.get(group) or []
        if not isinstance(entries, list):
            raise FormatError(
                source,
                where,
                message(gettext_noop("'%(group)s' must be an array, not %(kind)s"), group=group, kind=kind(entries)),
            )
        for a, entry in enumerate(entries, 1):
            here = f"{where} {group}[{a}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("result", []), list):
                raise FormatError(source, here, gettext_noop("must be an object with a 'result' array"))
            doc.spans.extend(_spans(entry, default_source, units, source, here))
    return doc


def _spans(entry: dict, default_source: str, units: Utf16Offsets, source: str, where: str) -> list[Span]:
    by_id: dict[str, dict] = {}
    order: list[str] = []
    for r, result in enumerate(entry["result"], 1):
        here = f"{where} result {r}"
        if not isinstance(result, dict) or result.get("type") not in SPAN_TYPES:
            continue
        value = result.get("value")
        if not isinstance(value, dict):
            raise FormatError(source, here, gettext_noop("'value' must be an object"))
        labels = value.get(result["type"])
        if not (isinstance(labels, list) and len(labels) == 1 and isinstance(labels[0], str)):
            raise FormatError(
                source, here, message(gettext_noop("value.%(type)s must hold exactly one label"), type=result["type"])
            )
        try:
            start, end = units.to_points(value["start"]), units.to_points(value["end"])
        except (KeyError, TypeError):
            raise FormatError(source, here, gettext_noop("value.start and value.end (integers) are missing")) from None
        except ValueError as exc:
            raise FormatError(source, here, str(exc)) from None
        rid = str(result.get("id") or f"r{r}")
        base = rid.rsplit("/", 1)[0] if "/" in rid and rid.rsplit("/", 1)[1].isdigit() else rid
        if base not in by_id:
            order.append(base)
            by_id[base] = {"ranges": [], "label": labels[0], "meta": _meta(result.get("meta"))}
        by_id[base]["ranges"].append((start, end))
    reviewer = _completed_by(entry.get("completed_by"))
    spans = []
    for rid in order:
        item = by_id[rid]
        meta = item["meta"]
        spans.append(
            Span.of(
                sorted(item["ranges"]),
                item["label"],
                meta["attributes"],
                source=meta.get("source") or default_source,
                reviewer=meta.get("reviewer") or reviewer,
                id=rid,
            )
        )
    return spans


def _meta(meta) -> dict:
    out = {"attributes": {}}
    lines = meta.get("text") if isinstance(meta, dict) else None
    for line in lines if isinstance(lines, list) else []:
        if not isinstance(line, str):
            continue
        name, sep, value = line.partition(": ")
        if not sep:
            continue
        if name in ("source", "reviewer"):
            out[name] = value
        elif name.startswith("attribute "):
            out["attributes"][name.removeprefix("attribute ")] = value
    if out.get("source") not in (None, "gold", "prediction", "decision"):
        out.pop("source")
    return out


def _completed_by(value) -> str:
    if isinstance(value, dict):
        return str(value.get("email") or value.get("id") or "")
    return "" if value is None else str(value)


def write(documents: Iterable[Document], path: Path) -> None:
    """One task per document; gold and decision spans in `annotations` (one per source and
    reviewer), predictions in `predictions` (one per reviewer, usually the model). Beside it,
    `<name>.labeling-config.xml`: the project's labeling config naming every label used."""
    path = Path(path)
    labels: set[str] = set()
    with path.open("w", encoding="utf-8") as f:
        f.write("[")
        for i, doc in enumerate(documents):
            labels.update(span.label for span in doc.spans)
            f.write(("," if i else "") + "\n" + json.dumps(_task(doc), ensure_ascii=False))
        f.write("\n]\n")
    config_path(path).write_text(labeling_config(labels), encoding="utf-8")


def config_path(path: Path) -> Path:
    return path.with_name(f"{path.stem}.labeling-config.xml")


def labeling_config(labels: Iterable[str]) -> str:
    """Label Studio's labeling config for the regions `write` makes (from_name "label", to_name
    "text", the task's `data.text`): paste it into the project's Labeling Interface (Code)."""
    lines = ["<View>", '  <Labels name="label" toName="text">']
    lines += [f"    <Label value={quoteattr(label)}/>" for label in sorted(labels)]
    lines += ["  </Labels>", '  <Text name="text" value="$text"/>', "</View>"]
    return "\n".join(lines) + "\n"


def _task(doc: Document) -> dict:
    units = Utf16Offsets(doc.text)
    groups: dict[tuple[str, str], list[dict]] = {}
    for n, span in enumerate(doc.spans, 1):
        rid = span.id or f"s{n}"
        meta = [f"source: {span.source}"] + ([f"reviewer: {span.reviewer}"] if span.reviewer else [])
        meta += [f"attribute {k}: {v}" for k, v in span.attributes]
        for k, (s, e) in enumerate(span.ranges, 1):
            groups.setdefault((span.source, span.reviewer), []).append(
                {
                    "id": rid if k == 1 else f"{rid}/{k}",
                    "from_name": "label",
                    "to_name": "text",
                    "type": "labels",
                    "value": {
                        "start": units.to_units(s),
                        "end": units.to_units(e),
                        "text": doc.text[s:e],
                        "labels": [span.label],
                    },
                    "meta": {"text": meta},
                }
            )
    task = {"data": {"text": doc.text, "note_id": doc.id}, "annotations": [], "predictions": []}
    for (source, reviewer), results in groups.items():
        if source == "prediction":
            task["predictions"].append({"model_version": reviewer or "decselfmask", "result": results})
        else:
            task["annotations"].append({"result": results})
    return task
