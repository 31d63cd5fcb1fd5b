"""brat standoff: a folder of X.txt (the text) and X.ann (the annotations) pairs.

    T1<TAB>Type 0 4;9 12<TAB>covered text        an entity; several ranges: discontinuous
    A1<TAB>Name T1 [Value]                      an attribute of T1 (no value: "true")
    #1<TAB>AnnotatorNotes T1<TAB>source: prediction; reviewer: alice

Offsets: code points (brat is written in Python), half-open; the covered text is checked
against the .txt (brat joins fragments with one space and writes a line break as a space).
Fragments out of text order are taken in text order, fragments that overlap are refused: the
notes import's verdict on the same file (`webapp.lib.brat.fragments_in_text_order`).
The document's id is the file's name without .txt (%XX escapes undone: `_files.safe_name`).
Relations, events, normalizations and other notes are skipped; a line that is none of these is
an error naming the file and line. The source and reviewer of a span travel in an
AnnotatorNotes line of the form above (other notes are skipped). An .ann is read a line at a
time, at most MAX_ANN_LINES of them (what they hold is kept until the document is done). No Django
here."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from webapp.lib.brat import fragments_in_text_order
from webapp.lib.formats._files import (
    FileLimit,
    checked,
    file_limit,
    id_of_name,
    read_text,
    safe_name,
    text_lines,
)
from webapp.lib.formats.document import SOURCES, Document, FormatError, Span
from webapp.lib.validators import quoted

CARRIES = ("discontinuous", "attributes", "source", "reviewer")
_ENTITY = re.compile(r"(T\S*)\t(\S+) (\d{1,18} \d{1,18}(?:;\d{1,18} \d{1,18})*)\t(.*)")
_ATTRIBUTE = re.compile(r"[AM]\S*\t(\S+) (\S+)(?: (\S+))?[\t ]*")
_NOTE = re.compile(r"#\S*\tAnnotatorNotes (\S+)\t(.*)")
_SKIPPED = tuple("RENM#*")
MAX_ANN_LINES = 100_000  # of one .ann: each line read is kept until its document is done; E3C's have tens


def read(path: Path, options=None) -> Iterator[Document | FormatError]:
    if not path.is_dir():
        yield FormatError(path.name, None, "brat needs a folder (or a zip) of .txt and .ann files")
        return
    limit = file_limit(options)
    texts = sorted(path.glob("*.txt"))
    if not texts:
        yield FormatError(path.name, None, "the folder holds no .txt files")
    for txt in texts:
        ann = txt.with_suffix(".ann")
        if not ann.is_file():
            yield FormatError(txt.name, None, "has no .ann file of the same name beside it")
            continue
        try:
            text = read_text(txt, limit)
            doc = Document(id_of_name(txt.stem), text, spans=_spans(ann, text, limit), where=ann.name)
        except FormatError as exc:
            yield exc
            continue
        yield checked(doc, ann.name, "")


def _spans(ann: Path, text: str, limit: FileLimit) -> list[Span]:
    entities: dict[str, dict] = {}
    for number, line in text_lines(ann, limit):
        if not line.strip():
            continue
        where = f"line {number}"
        if number > MAX_ANN_LINES:
            raise FormatError(
                ann.name, where, f"the file has more than {MAX_ANN_LINES:,} lines (MAX_ANN_LINES in formats/brat.py)"
            )
        if m := _ENTITY.fullmatch(line):
            tid, label, offsets, covered = m.groups()
            ranges = [tuple(map(int, part.split())) for part in offsets.split(";")]
            if any(e > len(text) or s >= e for s, e in ranges):
                raise FormatError(
                    ann.name, where, f"entity {tid}: a range is empty or ends past the text ({len(text)} characters)"
                )
            joined = " ".join(text[s:e] for s, e in ranges)
            if covered not in (joined, joined.replace("\n", " ")):
                raise FormatError(ann.name, where, f"entity {tid}: the covered text differs from {ann.stem}.txt")
            ranges, overlap = fragments_in_text_order(ranges)  # the notes import's verdict too
            if overlap:
                raise FormatError(ann.name, where, f"entity {quoted(tid)}: {overlap}")
            if tid in entities:
                raise FormatError(ann.name, where, f"entity {tid} is defined twice")
            entities[tid] = {"ranges": ranges, "label": label, "attributes": {}, "source": "gold", "reviewer": ""}
        elif m := _ATTRIBUTE.fullmatch(line):
            name, target, value = m.groups()
            if target in entities:
                entities[target]["attributes"][name] = value or "true"
        elif m := _NOTE.fullmatch(line):
            target, note = m.groups()
            if target in entities:
                for part in note.split("; "):
                    key, sep, value = part.partition(": ")
                    if sep and key == "source" and value in SOURCES:
                        entities[target]["source"] = value
                    elif sep and key == "reviewer":
                        entities[target]["reviewer"] = value
        elif not line.startswith(_SKIPPED):
            raise FormatError(
                ann.name, where, "not a brat annotation line (T, R, E, A, M, N, # or * and an id, then a tab)"
            )
    return [
        Span.of(e["ranges"], e["label"], e["attributes"], source=e["source"], reviewer=e["reviewer"], id=tid)
        for tid, e in entities.items()
    ]


def write(documents: Iterable[Document], path: Path) -> None:
    """X.txt and X.ann per document into the folder `path` (created), and annotation.conf naming
    the types and attributes used, so brat shows them configured. Labels and attribute names
    may not hold whitespace in brat: it is replaced by '_'."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    types: set[str] = set()
    attributes: dict[str, set[str]] = {}
    for doc in documents:
        name = safe_name(doc.id)
        (folder / f"{name}.txt").write_text(doc.text, encoding="utf-8", newline="")
        lines, a, n = [], 0, 0
        for t, span in enumerate(doc.spans, 1):
            offsets = ";".join(f"{s} {e}" for s, e in span.ranges)
            covered = " ".join(doc.text[s:e] for s, e in span.ranges).replace("\n", " ").replace("\r", " ")
            lines.append(f"T{t}\t{_token(span.label)} {offsets}\t{covered}")
            types.add(_token(span.label))
            for key, value in span.attributes:
                a += 1
                lines.append(f"A{a}\t{_token(key)} T{t} {_token(value)}")
                attributes.setdefault(_token(key), set()).add(_token(value))
            note = [f"source: {span.source}"] + ([f"reviewer: {span.reviewer}"] if span.reviewer else [])
            n += 1
            lines.append(f"#{n}\tAnnotatorNotes T{t}\t{'; '.join(note)}")
        (folder / f"{name}.ann").write_text("".join(line + "\n" for line in lines), encoding="utf-8", newline="")
    (folder / "annotation.conf").write_text(annotation_conf(types, attributes), encoding="utf-8")


def annotation_conf(types: Iterable[str], attributes: dict[str, set[str]]) -> str:
    """brat's annotation.conf for what `write` wrote: every entity type, and every attribute with
    every value it took (brat knows no free-text attribute, so a peak's "12-30" is listed too)."""
    lines = ["[entities]", *sorted(types), "", "[relations]", "", "[events]", "", "[attributes]"]
    lines += [f"{key}\tArg:<ENTITY>, Value:{'|'.join(sorted(values))}" for key, values in sorted(attributes.items())]
    return "\n".join(lines) + "\n"


def _token(value: str) -> str:
    return re.sub(r"\s", "_", value) or "_"
