"""Readers for import files: JSONL, CSV and brat standoff folders. No Django here.

Each reader streams records (one at a time, so memory stays flat on large files) and reports
what it cannot read to a `Problems` collector. A problem names the file, the line and the
reason, with character or byte offsets where useful, and never quotes note text. What an import
accepts but its user should hear about is a warning, collected beside the problems: a UTF-8 byte
order mark (dropped), top-level fields of a notes line (kept in its metadata), overlapping
evidence spans (kept as given), brat lines other than entities (checked, not imported).

Bytes become lines in `input_files` (compression told by content, UTF-8 only, bounded lines);
brat .ann files are parsed in `brat`. Shape checks that need no database (types, empty text,
span order, metadata, the size limits of `limits`) happen here; the importer adds the checks
that need the corpus, the task catalog or the whole file.
"""
import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from webapp.corpus import validators
from webapp.corpus.validators import json_kind
from webapp.corpus.brat import read_ann
from webapp.corpus.input_files import NAMED, open_lines, read_text_file, sniff
from webapp.corpus.limits import ImportLimits, over_limit

MAX_PROBLEMS = 50
MAX_ID_LENGTH = 200
MAX_TASK_LENGTH = 200
MAX_NAMES_SHOWN = 10
NOTE_FIELDS = ("id", "text", "metadata")
ANNOTATION_FIELDS = ("note_id", "task", "label", "evidence")
FORMATS = ("jsonl", "csv", "brat")
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv"}


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
    """Keeps the first `limit` problems and warnings and counts them all. Problems stop an
    import; warnings are shown with its summary."""

    limit: int = MAX_PROBLEMS
    kept: list[Problem] = field(default_factory=list)
    total: int = 0
    warnings: list[Problem] = field(default_factory=list)
    warning_total: int = 0

    def __bool__(self):
        return self.total > 0

    def add(self, source: str, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem(source, line, message))

    def warn(self, source: str, line: int | None, message: str) -> None:
        self.warning_total += 1
        if len(self.warnings) < self.limit:
            self.warnings.append(Problem(source, line, message))

    def lines(self) -> list[str]:
        return numbered_lines(self.kept, self.total, "problems")


def numbered_lines(kept: list[Problem], total: int, what: str) -> list[str]:
    out = [str(p) for p in kept]
    if total > len(kept):
        out.append(f"... and {total - len(kept)} more {what} ({total} in all)")
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
    """brat for a folder or a zip archive (by its bytes); otherwise by the name, compression
    suffixes (.gz, .bz2, .xz) aside: JSONL or CSV."""
    if path.is_dir():
        return "brat"
    try:
        if sniff(path) == "zip":
            return "brat"
    except OSError:
        pass  # reported when the file is opened
    suffixes = [s.lower() for s in path.suffixes if s.lower() not in NAMED]
    return SUFFIX_FORMATS.get(suffixes[-1] if suffixes else "")


def read_notes(path: Path, fmt: str, problems: Problems, limits: ImportLimits) -> Iterator[NoteRecord]:
    if fmt == "jsonl":
        yield from _notes_from_jsonl(path, problems, limits)
    elif fmt == "csv":
        yield from _notes_from_csv(path, problems, limits)
    elif fmt == "brat":
        yield from _notes_from_brat(path, problems, limits)
    else:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def read_annotations(path: Path, problems: Problems, limits: ImportLimits) -> Iterator[AnnotationRecord]:
    source = path.name
    for line, obj in _json_lines(path, problems, limits):
        if not _has_fields(obj, ("note_id", "task", "label"), source, line, problems):
            continue
        ok = True
        note_id = _external_id(obj["note_id"], "note_id", source, line, problems)
        ok &= note_id is not None
        for name, longest in (("task", MAX_TASK_LENGTH), ("label", validators.MAX_LABEL_LENGTH)):
            if not isinstance(obj[name], str) or not obj[name].strip():
                problems.add(source, line, f"field '{name}' must be a non-empty string, not {json_kind(obj[name])}")
                ok = False
            elif len(obj[name]) > longest:
                problems.add(source, line, f"field '{name}' is longer than {longest} characters")
                ok = False
        evidence = obj.get("evidence", [])
        ok &= _evidence_ok(evidence, source, line, problems, limits)
        unknown = sorted(set(obj) - set(ANNOTATION_FIELDS))
        if unknown:
            names = ", ".join(_names(unknown))
            problems.add(source, line, f"unknown field(s) {names} (allowed: {', '.join(ANNOTATION_FIELDS)})")
            ok = False
        if ok:
            yield AnnotationRecord(source, line, note_id, obj["task"], obj["label"], [list(s) for s in evidence])


def _evidence_ok(evidence, source, line, problems, limits) -> bool:
    """Shape and count; overlapping spans are kept as given, with a warning."""
    if isinstance(evidence, list) and len(evidence) > limits.evidence_spans:
        problems.add(source, line, over_limit("field 'evidence'", len(evidence), limits.evidence_spans,
                                              "IMPORT_MAX_EVIDENCE_SPANS", "spans"))
        return False
    shape_problems = _span_shape_problems(evidence)
    for message in shape_problems:
        problems.add(source, line, f"field 'evidence': {message}")
    if shape_problems:
        return False
    overlap = validators.overlapping_spans(evidence)
    if overlap:
        (a, b), (c, d) = overlap
        problems.warn(source, line, f"evidence spans [{a}, {b}) and [{c}, {d}) overlap; imported as given")
    return True


# --- notes: JSONL and CSV -------------------------------------------------------------------


def _notes_from_jsonl(path: Path, problems: Problems, limits: ImportLimits) -> Iterator[NoteRecord]:
    """Fields besides id, text and metadata are kept in the metadata (a flat export needs no
    nesting), with one warning for the file."""
    source = path.name
    extra_names: set[str] = set()
    extra_lines, first_extra_line = 0, None
    for line, obj in _json_lines(path, problems, limits):
        if not _has_fields(obj, ("id", "text"), source, line, problems):
            continue
        metadata = obj.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            problems.add(source, line, f"field 'metadata' must be an object, not {json_kind(metadata)}")
            continue
        extra = {k: v for k, v in obj.items() if k not in NOTE_FIELDS}
        clash = sorted(set(extra) & set(metadata))
        if clash:
            problems.add(source, line, f"field(s) {', '.join(_names(clash))} given both at top level and in 'metadata'")
            continue
        record = _note(source, line, obj["id"], obj["text"], {**metadata, **extra}, problems, limits)
        if record:
            if extra:
                extra_lines += 1
                first_extra_line = first_extra_line or line
                if len(extra_names) <= MAX_NAMES_SHOWN:
                    extra_names.update(extra)
            yield record
    if extra_lines:
        problems.warn(source, first_extra_line,
                      f"{extra_lines:,} line(s), this one first, have fields besides id, text and metadata "
                      f"({', '.join(_names(sorted(extra_names)))}); they were kept in each note's metadata")


def _notes_from_csv(path: Path, problems: Problems, limits: ImportLimits) -> Iterator[NoteRecord]:
    source = path.name
    csv.field_size_limit(limits.line_bytes)  # a long note gets the clearer "has N characters" message
    with open_lines(path, problems, limits, keep_bad_lines=True) as numbered:
        reader = csv.reader((text for _, text in numbered), strict=True)
        try:
            header = next(reader, None)
        except csv.Error as exc:
            problems.add(source, 1, f"unreadable CSV header: {exc}")
            return
        if header is None:
            if not problems:
                problems.add(source, None, "the file is empty")
            return
        header = [name.strip() for name in header]
        missing = [c for c in ("id", "text") if c not in header]
        if missing:
            found = ", ".join(_names(header))
            problems.add(source, 1, f"CSV header lacks column(s) {', '.join(missing)} (found: {found})")
            return
        duplicated = sorted({c for c in header if header.count(c) > 1})
        if duplicated:
            problems.add(source, 1, f"CSV header repeats column(s) {', '.join(_names(duplicated))}")
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
            record = _note(source, start_line, row[id_at], row[text_at], metadata, problems, limits)
            if record:
                yield record


# --- notes: brat standoff -------------------------------------------------------------------


def _notes_from_brat(folder: Path, problems: Problems, limits: ImportLimits) -> Iterator[NoteRecord]:
    """One note per X.txt (id X, text exactly the file's content) with its X.ann entities in metadata."""
    texts = sorted(folder.glob("*.txt"))
    for orphan in sorted({p.stem for p in folder.glob("*.ann")} - {p.stem for p in texts}):
        problems.add(f"{orphan}.ann", None, f"has no {orphan}.txt beside it")
    if not texts and not problems:
        problems.add(folder.name, None, "the folder holds no .txt files")
    other_lines = other_files = 0
    for txt in texts:
        ann = txt.with_suffix(".ann")
        if not ann.exists():
            problems.add(txt.name, None, f"has no {ann.name} beside it")
            continue
        text = read_text_file(txt, problems, limits)
        if text is None:
            continue
        parsed = read_ann(ann, text, problems, limits)
        if parsed is None:
            continue
        if parsed.other_lines:
            other_lines += parsed.other_lines
            other_files += 1
        record = _note(txt.name, 1, txt.stem, text, {"brat": {"entities": parsed.entities}}, problems, limits)
        if record:
            yield record
    if other_lines:
        problems.warn(folder.name, None, f"{other_lines:,} relation, event, attribute, normalization or note "
                                         f"line(s) in {other_files:,} .ann file(s) were checked but not imported "
                                         "(only entities are)")


# --- shared ---------------------------------------------------------------------------------


def _note(source, line, raw_id, text, metadata, problems, limits) -> NoteRecord | None:
    external_id = _external_id(raw_id, "id", source, line, problems)
    ok = external_id is not None
    if not isinstance(text, str):
        problems.add(source, line, f"field 'text' must be a string, not {json_kind(text)}")
        return None
    if len(text) > limits.note_chars:
        what = f"note {external_id!r}" if external_id else "field 'text'"
        problems.add(source, line, over_limit(what, len(text), limits.note_chars, "IMPORT_MAX_NOTE_CHARS", "characters"))
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
    for message in validators.metadata_problems(metadata, limits.metadata_bytes):
        problems.add(source, line, message)
        ok = False
    return NoteRecord(source, line, external_id, text, metadata) if ok else None


def _external_id(raw, name, source, line, problems) -> str | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        problems.add(source, line, f"field '{name}' must be a string or an integer, not {json_kind(raw)}")
        return None
    value = str(raw)
    if not value.strip():
        problems.add(source, line, f"field '{name}' is empty")
    elif len(value) > MAX_ID_LENGTH:
        problems.add(source, line, f"field '{name}' is longer than {MAX_ID_LENGTH} characters")
    elif value != value.strip() or _has_control(value):
        problems.add(source, line, f"field '{name}' has surrounding spaces or control characters")
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


def _json_lines(path: Path, problems: Problems, limits: ImportLimits) -> Iterator[tuple[int, dict]]:
    source = path.name
    with open_lines(path, problems, limits) as lines:
        for line_no, line in lines:
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                # Some of json's messages end in "at" ("Invalid control character at"): say it once.
                problems.add(source, line_no, f"invalid JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}")
                continue
            except RecursionError:
                problems.add(source, line_no, "invalid JSON: nested too deeply")
                continue
            except ValueError:  # an integer of more than sys.get_int_max_str_digits() digits
                problems.add(source, line_no, "invalid JSON: a number too long to read")
                continue
            if not isinstance(obj, dict):
                problems.add(source, line_no, f"expected a JSON object, got {json_kind(obj)}")
                continue
            yield line_no, obj


def _has_control(value: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)


def _names(names: list[str]) -> list[str]:
    """Field names fit to show: the first few, each short, control characters escaped."""
    shown = [n if len(n) <= 40 and not _has_control(n) and n.isprintable() else json.dumps(n[:40]) for n in names]
    if len(shown) > MAX_NAMES_SHOWN:
        shown = [*shown[:MAX_NAMES_SHOWN], f"and {len(shown) - MAX_NAMES_SHOWN} more"]
    return shown
