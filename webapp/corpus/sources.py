"""Readers for import files: JSONL, CSV and brat standoff folders. No Django here.

Each reader streams records (one at a time, so memory stays flat on large files) and reports
what it cannot read to a `Problems` collector. A problem names the file, the line and the
reason, with character or byte offsets where useful, and never quotes note text.
Shape checks that need no database (types, empty text, span order) happen here too;
the importer adds the checks that need the corpus, the task catalog or the whole file.
"""
import csv
import gzip
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from webapp.corpus import validators

MAX_PROBLEMS = 50
MAX_ID_LENGTH = 200
BOM = b"\xef\xbb\xbf"
NOTE_FIELDS = ("id", "text", "metadata")
ANNOTATION_FIELDS = ("note_id", "task", "label", "evidence")
FORMATS = ("jsonl", "csv", "brat")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Problem:
    source: str
    line: int | None
    message: str

    def __str__(self):
        where = f"{self.source} line {self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"


@dataclass
class Problems:
    """Keeps the first `limit` problems and counts them all."""

    limit: int = MAX_PROBLEMS
    kept: list[Problem] = field(default_factory=list)
    total: int = 0

    def __bool__(self):
        return self.total > 0

    def add(self, source: str, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem(source, line, message))

    def lines(self) -> list[str]:
        out = [str(p) for p in self.kept]
        if self.total > len(self.kept):
            out.append(f"... and {self.total - len(self.kept)} more problems ({self.total} in all)")
        return out


@dataclass(frozen=True, slots=True)
class NoteRecord:
    source: str
    line: int
    external_id: str
    text: str
    metadata: dict


@dataclass(frozen=True, slots=True)
class AnnotationRecord:
    source: str
    line: int
    note_id: str
    task: str
    label: str
    evidence: list


def detect_format(path: Path) -> str | None:
    if path.is_dir():
        return "brat"
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    suffix = suffixes[-1] if suffixes else ""
    return {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv"}.get(suffix)


def read_notes(path: Path, fmt: str, problems: Problems) -> Iterator[NoteRecord]:
    if fmt == "jsonl":
        yield from _notes_from_jsonl(path, problems)
    elif fmt == "csv":
        yield from _notes_from_csv(path, problems)
    elif fmt == "brat":
        yield from _notes_from_brat(path, problems)
    else:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def read_annotations(path: Path, problems: Problems) -> Iterator[AnnotationRecord]:
    source = path.name
    for line, obj in _json_lines(path, problems):
        if not _has_fields(obj, ("note_id", "task", "label"), source, line, problems):
            continue
        ok = True
        note_id = _external_id(obj["note_id"], "note_id", source, line, problems)
        ok &= note_id is not None
        for name in ("task", "label"):
            if not isinstance(obj[name], str) or not obj[name].strip():
                problems.add(source, line, f"field '{name}' must be a non-empty string, not {_kind(obj[name])}")
                ok = False
        evidence = obj.get("evidence", [])
        for message in _span_shape_problems(evidence):
            problems.add(source, line, f"field 'evidence': {message}")
            ok = False
        unknown = sorted(set(obj) - set(ANNOTATION_FIELDS))
        if unknown:
            problems.add(source, line, f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(ANNOTATION_FIELDS)})")
            ok = False
        if ok:
            yield AnnotationRecord(source, line, note_id, obj["task"], obj["label"], [list(s) for s in evidence])


# --- notes: JSONL and CSV -------------------------------------------------------------------


def _notes_from_jsonl(path: Path, problems: Problems) -> Iterator[NoteRecord]:
    source = path.name
    for line, obj in _json_lines(path, problems):
        if not _has_fields(obj, ("id", "text"), source, line, problems):
            continue
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            problems.add(source, line, f"field 'metadata' must be an object, not {_kind(metadata)}")
            continue
        extra = {k: v for k, v in obj.items() if k not in NOTE_FIELDS}
        clash = sorted(set(extra) & set(metadata))
        if clash:
            problems.add(source, line, f"field(s) {', '.join(clash)} given both at top level and in 'metadata'")
            continue
        record = _note(source, line, obj["id"], obj["text"], {**metadata, **extra}, problems)
        if record:
            yield record


def _notes_from_csv(path: Path, problems: Problems) -> Iterator[NoteRecord]:
    source = path.name
    csv.field_size_limit(2**31 - 1)  # clinical notes can exceed csv's 128 KiB default
    with _open_lines(path, problems) as lines:
        reader = csv.reader(lines, strict=True)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            problems.add(source, 1, f"unreadable CSV header: {exc}")
            return
        if header is None:
            problems.add(source, None, "the file is empty")
            return
        header = [name.strip() for name in header]
        missing = [c for c in ("id", "text") if c not in header]
        if missing:
            problems.add(source, 1, f"CSV header lacks column(s) {', '.join(missing)} (found: {', '.join(header)})")
            return
        duplicated = sorted({c for c in header if header.count(c) > 1})
        if duplicated:
            problems.add(source, 1, f"CSV header repeats column(s) {', '.join(duplicated)}")
            return
        id_at, text_at = header.index("id"), header.index("text")
        end_line = reader.line_num
        while True:
            start_line = end_line + 1
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                problems.add(source, start_line, f"unreadable CSV row: {exc}")
                return
            end_line = reader.line_num
            if not row:
                continue
            if len(row) != len(header):
                problems.add(source, start_line, f"row has {len(row)} fields, the header has {len(header)}")
                continue
            metadata = {name: value for i, (name, value) in enumerate(zip(header, row)) if i not in (id_at, text_at)}
            record = _note(source, start_line, row[id_at], row[text_at], metadata, problems)
            if record:
                yield record


# --- notes: brat standoff -------------------------------------------------------------------


def _notes_from_brat(folder: Path, problems: Problems) -> Iterator[NoteRecord]:
    """One note per X.txt (id X, text exactly the file's content) with its X.ann entities in metadata."""
    texts = sorted(folder.glob("*.txt"))
    for orphan in sorted({p.stem for p in folder.glob("*.ann")} - {p.stem for p in texts}):
        problems.add(f"{orphan}.ann", None, f"has no {orphan}.txt beside it")
    if not texts and not problems:
        problems.add(folder.name, None, "the folder holds no .txt files")
    for txt in texts:
        ann = txt.with_suffix(".ann")
        if not ann.exists():
            problems.add(txt.name, None, f"has no {ann.name} beside it")
            continue
        text = _read_text_file(txt, problems)
        if text is None:
            continue
        entities = _brat_entities(ann, text, problems)
        if entities is None:
            continue
        record = _note(txt.name, 1, txt.stem, text, {"brat": {"entities": entities}}, problems)
        if record:
            yield record


def _read_text_file(path: Path, problems: Problems) -> str | None:
    data = path.read_bytes()
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        problems.add(path.name, line, f"not valid UTF-8 (byte {column} of the line, byte {exc.start} of the file)")
        return None


def _brat_entities(ann: Path, text: str, problems: Problems) -> list[dict] | None:
    """Parse the T (text-bound) lines of a .ann file; other lines (relations, notes) are skipped."""
    content = _read_text_file(ann, problems)
    if content is None:
        return None
    entities, seen, ok = [], set(), True
    for line_no, line in enumerate(content.split("\n"), start=1):  # not splitlines(): \x0c etc. may be in text
        line = line.removesuffix("\r")
        if not line.startswith("T"):
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3 or " " not in parts[1]:
            problems.add(ann.name, line_no, "entity line must be 'T<n><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>'")
            ok = False
            continue
        entity_id, (kind, _, offsets), covered = parts[0], parts[1].partition(" "), parts[2]
        if entity_id in seen:
            problems.add(ann.name, line_no, f"entity {entity_id} is defined twice")
            ok = False
            continue
        seen.add(entity_id)
        spans = _brat_spans(offsets)
        if spans is None:
            problems.add(ann.name, line_no, f"entity {entity_id}: offsets must be integer pairs 'start end' separated by ';'")
            ok = False
            continue
        span_problems = validators.span_problems(spans, len(text))
        for message in span_problems:
            problems.add(ann.name, line_no, f"entity {entity_id}: {message} of {ann.stem}.txt")
        if span_problems:
            ok = False
            continue
        # brat joins the fragments of a discontinuous entity with one space.
        if " ".join(text[s:e] for s, e in spans) != covered and " ".join(
            text[s:e].replace("\n", " ") for s, e in spans
        ) != covered:
            where = ", ".join(f"[{s}, {e})" for s, e in spans)
            problems.add(ann.name, line_no, f"entity {entity_id}: the covered text differs from {ann.stem}.txt at {where}")
            ok = False
            continue
        entities.append({"id": entity_id, "type": kind, "spans": spans})
    return entities if ok else None


def _brat_spans(offsets: str) -> list[list[int]] | None:
    spans = []
    for fragment in offsets.split(";"):
        pieces = fragment.split()
        if len(pieces) != 2 or not all(p.isascii() and p.isdigit() for p in pieces):
            return None
        spans.append([int(pieces[0]), int(pieces[1])])
    return spans


# --- shared ---------------------------------------------------------------------------------


def _note(source, line, raw_id, text, metadata, problems) -> NoteRecord | None:
    external_id = _external_id(raw_id, "id", source, line, problems)
    ok = external_id is not None
    if not isinstance(text, str):
        problems.add(source, line, f"field 'text' must be a string, not {_kind(text)}")
        return None
    if not text.strip():
        problems.add(source, line, "field 'text' is empty")
        return None
    nul = text.find("\x00")
    if nul >= 0:
        problems.add(source, line, f"field 'text' contains a NUL character at offset {nul}")
        ok = False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        problems.add(source, line, f"field 'text' contains an unpaired surrogate (\\u escape) at offset {exc.start}")
        ok = False
    try:
        json.dumps(metadata, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        problems.add(source, line, "field 'metadata' holds NaN/Infinity or an unpaired surrogate")
        ok = False
    return NoteRecord(source, line, external_id, text, metadata) if ok else None


def _external_id(raw, name, source, line, problems) -> str | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        problems.add(source, line, f"field '{name}' must be a string or an integer, not {_kind(raw)}")
        return None
    value = str(raw)
    if not value.strip():
        problems.add(source, line, f"field '{name}' is empty")
    elif value != value.strip() or _CONTROL.search(value):
        problems.add(source, line, f"field '{name}' has surrounding spaces or control characters")
    elif len(value) > MAX_ID_LENGTH:
        problems.add(source, line, f"field '{name}' is longer than {MAX_ID_LENGTH} characters")
    else:
        return value
    return None


def _span_shape_problems(evidence) -> list[str]:
    """Span checks that need no note: pairs of integers, 0 <= start < end (the length comes later)."""
    return validators.span_problems(evidence, math.inf)


def _has_fields(obj, required, source, line, problems) -> bool:
    missing = [name for name in required if name not in obj]
    if missing:
        problems.add(source, line, f"missing field(s) {', '.join(missing)}")
    return not missing


def _json_lines(path: Path, problems: Problems) -> Iterator[tuple[int, dict]]:
    source = path.name
    with _open_lines(path, problems) as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.add(source, line_no, f"invalid JSON: {exc.msg} at column {exc.colno}")
                continue
            except RecursionError:
                problems.add(source, line_no, "invalid JSON: nested too deeply")
                continue
            if not isinstance(obj, dict):
                problems.add(source, line_no, f"expected a JSON object, got {_kind(obj)}")
                continue
            yield line_no, obj


class _open_lines:
    """Context manager over the decoded lines of a (possibly gzipped) UTF-8 file.

    Lines are decoded one by one so a bad byte is reported with its line and offset; the
    line is then decoded with replacement characters so the rest of the file is still checked.
    A UTF-8 byte order mark at the start is dropped. Newlines inside lines are kept as they are.
    """

    def __init__(self, path: Path, problems: Problems):
        self.path, self.problems = path, problems

    def __enter__(self):
        opener = gzip.open if self.path.suffix.lower() == ".gz" else open
        self.raw = opener(self.path, "rb")
        return self._lines()

    def __exit__(self, *exc):
        self.raw.close()

    def _lines(self) -> Iterator[str]:
        offset = 0
        for line_no, raw in enumerate(self.raw, start=1):
            if line_no == 1 and raw.startswith(BOM):
                raw, offset = raw[len(BOM) :], len(BOM)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                self.problems.add(
                    self.path.name,
                    line_no,
                    f"not valid UTF-8 (byte {exc.start} of the line, byte {offset + exc.start} of the file)",
                )
                yield raw.decode("utf-8", errors="replace")
            offset += len(raw)


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
