"""Readers for import files: JSONL, CSV and brat standoff folders. No Django here.

Each reader streams records (one at a time, so memory stays flat on large files) and reports
what it cannot read to a `Problems` collector. A problem names the file, the line and the
reason, with character or byte offsets where useful, and never quotes note text. What an import
accepts but its user should hear about is a warning, collected beside the problems: a UTF-8 byte
order mark (dropped), top-level fields of a notes line (kept in its metadata), overlapping
evidence spans (kept as given), brat lines other than entities (checked, not imported).

A reader given a `checkpoint` calls it before each document (a line, a CSV row, a brat note):
it raises to stop the reading (an import cancelled, or taken over by another worker), so a stop
never waits for the rest of a file.

A problem line never holds a character that is not printable (`validators.printable`): it is
shown on pages, stored in jsonb and audited, and PostgreSQL refuses a \\u0000 there.

A CSV row may span lines (a quoted field holds line breaks): its characters are counted as its
lines are read and a row longer than a note and its metadata can take (`ImportLimits.csv_row_chars`)
stops the file, as does a header of more than MAX_CSV_COLUMNS columns. A first line that lacks
the id and text columns may be data, so the message gives its number of columns, never its cells.

Bytes become lines in `input_files` (compression told by content, UTF-8 only, bounded lines);
brat .ann files are parsed in `brat`. Shape checks that need no database (types, empty text,
span order, metadata, the size limits of `limits`) happen here; the importer adds the checks
that need the corpus, the task catalog or the whole file.
"""

import csv
import json
import math
import unicodedata
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ml.jsonl import LineError, json_kind, parse_line
from webapp.lib import validators
from webapp.lib.brat import read_ann
from webapp.lib.import_limits import ImportLimits, over_limit
from webapp.lib.input_files import NAMED, open_lines, read_text_file, sniff
from webapp.lib.validators import hidden_character, printable

MAX_PROBLEMS = 50  # problem lines shown at once (a command's output, a page of an import's problems)
# Problems kept, and stored with a refused import's job: every one can be read (the import's
# page, a page at a time; the API and a download, whole). The bound keeps memory and the job's row
# small (~150 bytes a line) whatever the file; past it, the count says how many more there were.
KEPT_PROBLEMS = 10_000
MAX_ID_LENGTH = 200
MAX_TASK_LENGTH = 200
MAX_NAMES_SHOWN = 10
MAX_CSV_COLUMNS = 1000
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
    """Keeps the first `limit` problems (and MAX_PROBLEMS warnings) and counts them all. Problems
    stop an import; warnings are shown with its summary."""

    limit: int = KEPT_PROBLEMS
    kept: list[Problem] = field(default_factory=list)
    total: int = 0
    warnings: list[Problem] = field(default_factory=list)
    warning_total: int = 0

    def __bool__(self):
        return self.total > 0

    def add(self, source: str, line: int | None, message: str) -> None:
        self.total += 1
        if len(self.kept) < self.limit:
            self.kept.append(Problem(printable(source), line, printable(message)))

    def warn(self, source: str, line: int | None, message: str) -> None:
        self.warning_total += 1
        if len(self.warnings) < MAX_PROBLEMS:
            self.warnings.append(Problem(printable(source), line, printable(message)))

    def lines(self) -> list[str]:
        return numbered_lines(self.kept, self.total, "problems")


def numbered_lines(kept: list[Problem], total: int, what: str) -> list[str]:
    """The first MAX_PROBLEMS lines, then how many more there are."""
    kept = kept[:MAX_PROBLEMS]
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
    annotator: str = ""  # whose annotation; "" for the import's annotator (annotation-tool files name their own)


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


def go_on() -> None:
    """The checkpoint of a reading nobody stops."""


def read_notes(
    path: Path, fmt: str, problems: Problems, limits: ImportLimits, checkpoint=go_on
) -> Iterator[NoteRecord]:
    if fmt == "jsonl":
        yield from _notes_from_jsonl(path, problems, limits, checkpoint)
    elif fmt == "csv":
        yield from _notes_from_csv(path, problems, limits, checkpoint)
    elif fmt == "brat":
        yield from _notes_from_brat(path, problems, limits, checkpoint)
    else:
        raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def read_annotations(
    path: Path, problems: Problems, limits: ImportLimits, checkpoint=go_on
) -> Iterator[AnnotationRecord]:
    source = path.name
    first = _first_line(path, limits)
    if first is not None and first[1].lstrip().startswith("["):
        problems.add(
            source,
            first[0],
            "the file is one JSON array, not JSON lines (one object a line): a Label Studio export? Import it as "
            "gold labels from Label Studio JSON (import_annotations --format labelstudio, with a mapping)",
        )
        return
    for line, obj in _json_lines(path, problems, limits, checkpoint):
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
            elif hidden_character(obj[name]):
                problems.add(source, line, f"field '{name}' contains {hidden_character(obj[name])}")
                ok = False
        evidence = obj.get("evidence", [])
        ok &= _evidence_ok(evidence, source, line, problems, limits)
        unknown = sorted(set(obj) - set(ANNOTATION_FIELDS))
        if unknown:
            names = ", ".join(_names(unknown))
            problems.add(source, line, f"unknown field(s) {names} (allowed: {', '.join(ANNOTATION_FIELDS)})")
            ok = False
        if ok:
            yield AnnotationRecord(
                source, line, note_id, nfc(obj["task"]), nfc(obj["label"]), [list(s) for s in evidence]
            )


def _evidence_ok(evidence, source, line, problems, limits) -> bool:
    """Shape and count; overlapping spans are kept as given, with a warning."""
    if isinstance(evidence, list) and len(evidence) > limits.evidence_spans:
        problems.add(
            source,
            line,
            over_limit("field 'evidence'", len(evidence), limits.evidence_spans, "IMPORT_MAX_EVIDENCE_SPANS", "spans"),
        )
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


def _notes_from_jsonl(path: Path, problems: Problems, limits: ImportLimits, checkpoint) -> Iterator[NoteRecord]:
    """Fields besides id, text and metadata are kept in the metadata (a flat export needs no
    nesting), with one warning for the file."""
    source = path.name
    extra_names: set[str] = set()
    extra_lines, first_extra_line = 0, None
    for line, obj in _json_lines(path, problems, limits, checkpoint):
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
        problems.warn(
            source,
            first_extra_line,
            f"{extra_lines:,} line(s), this one first, have fields besides id, text and metadata "
            f"({', '.join(_names(sorted(extra_names)))}); they were kept in each note's metadata",
        )


class _RowTooLong(Exception):
    """A CSV row over ImportLimits.csv_row_chars: the file is read no further."""


class _CountedRows:
    """The text lines of a CSV file for csv.reader, counting the characters of the row being read:
    a row over `most` raises _RowTooLong before it fills the memory (an unclosed quote joins every
    line after it into one field)."""

    def __init__(self, numbered, most: int):
        self.numbered, self.most, self.chars = numbered, most, 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        _, text = next(self.numbered)
        self.chars += len(text)
        if self.chars > self.most:
            raise _RowTooLong
        return text

    def next_row(self, reader) -> list[str]:
        self.chars = 0
        return next(reader)


def _notes_from_csv(path: Path, problems: Problems, limits: ImportLimits, checkpoint) -> Iterator[NoteRecord]:
    source = path.name
    csv.field_size_limit(limits.line_bytes)  # a long note gets the clearer "has N characters" message
    with open_lines(path, problems, limits, keep_bad_lines=True) as numbered:
        rows = _CountedRows(numbered, limits.csv_row_chars)
        reader = csv.reader(rows, strict=True)
        try:
            header = rows.next_row(reader)
        except StopIteration:
            if not problems:
                problems.add(source, None, "the file is empty")
            return
        except csv.Error as exc:
            problems.add(source, 1, f"unreadable CSV header: {exc}")
            return
        except _RowTooLong:
            problems.add(source, 1, _row_too_long(limits))
            return
        header = [name.strip() for name in header]
        if not _header_ok(header, source, problems):
            return
        id_at, text_at = header.index("id"), header.index("text")
        end_line = reader.line_num
        while True:
            checkpoint()
            start_line = end_line + 1
            try:
                row = rows.next_row(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                problems.add(source, start_line, f"unreadable CSV row: {exc}")
                return
            except _RowTooLong:
                problems.add(source, start_line, _row_too_long(limits))
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


def _header_ok(header: list[str], source: str, problems: Problems) -> bool:
    if len(header) > MAX_CSV_COLUMNS:
        problems.add(
            source,
            1,
            over_limit(
                "the CSV header",
                len(header),
                MAX_CSV_COLUMNS,
                "MAX_CSV_COLUMNS in webapp/lib/import_sources.py",
                "columns",
            ),
        )
        return False
    missing = [c for c in ("id", "text") if c not in header]
    if missing:
        # The first line may be data: say how many columns it has, never what they hold.
        lower = {name.lower() for name in header}
        hint = "; column names are case-sensitive" if any(c in lower for c in missing) else ""
        problems.add(
            source,
            1,
            f"the first line must be a header naming the columns id and text (missing: "
            f"{', '.join(missing)}; it has {len(header):,} column(s){hint})",
        )
        return False
    duplicated = sorted(name for name, count in Counter(header).items() if count > 1)
    if duplicated:
        problems.add(source, 1, f"CSV header repeats column(s) {', '.join(_names(duplicated))}")
        return False
    return True


def _row_too_long(limits: ImportLimits) -> str:
    return (
        f"the CSV row starting here has more than {limits.csv_row_chars:,} characters, more than a note of "
        f"{limits.note_chars:,} characters (IMPORT_MAX_NOTE_CHARS) and its metadata can take (is a quote "
        "left open?); nothing after it was read"
    )


# --- notes: brat standoff -------------------------------------------------------------------


def _notes_from_brat(folder: Path, problems: Problems, limits: ImportLimits, checkpoint) -> Iterator[NoteRecord]:
    """One note per X.txt (id X, text exactly the file's content) with its X.ann entities in metadata."""
    named = [p for p in sorted(folder.glob("*.txt")) + sorted(folder.glob("*.ann")) if _brat_name_ok(p, problems)]
    texts = [p for p in named if p.suffix == ".txt"]
    for orphan in sorted({p.stem for p in named if p.suffix == ".ann"} - {p.stem for p in texts}):
        problems.add(f"{orphan}.ann", None, "has no .txt file of the same name beside it")
    if not texts and not problems:
        problems.add(folder.name, None, "the folder holds no .txt files")
    other_lines = other_files = 0
    first_named: dict[str, str] = {}  # note id -> the .txt file that gave it
    for txt in texts:
        checkpoint()
        first = first_named.setdefault(nfc(txt.stem), txt.name)
        if first != txt.name:
            problems.add(txt.name, None, f"names the same note as {first!r} (one id in two Unicode forms)")
            continue
        ann = txt.with_suffix(".ann")
        if not ann.exists():
            problems.add(txt.name, None, "has no .ann file of the same name beside it")
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
        problems.warn(
            folder.name,
            None,
            f"{other_lines:,} relation, event, attribute, normalization or note "
            f"line(s) in {other_files:,} .ann file(s) were checked but not imported "
            "(only entities are)",
        )


def _brat_name_ok(path: Path, problems: Problems) -> bool:
    """A brat file's name is its note's id: UTF-8 (Python gives the bytes of a name that is not
    as surrogates, U+DC80-U+DCFF), without control or invisible characters."""
    hidden = hidden_character(path.name)
    if not hidden:
        return True
    byte = next((ord(c) - 0xDC00 for c in path.name if 0xDC80 <= ord(c) <= 0xDCFF), None)
    if byte is not None:
        problems.add(path.name, None, f"the file name is not UTF-8 (byte 0x{byte:02x}); rename the file")
    else:
        problems.add(path.name, None, f"the file name (the note's id) contains {hidden}; rename the file")
    return False


# --- shared ---------------------------------------------------------------------------------


def _note(source, line, raw_id, text, metadata, problems, limits) -> NoteRecord | None:
    external_id = _external_id(raw_id, "id", source, line, problems)
    ok = external_id is not None
    if not isinstance(text, str):
        problems.add(source, line, f"field 'text' must be a string, not {json_kind(text)}")
        return None
    if len(text) > limits.note_chars:
        what = f"note {external_id!r}" if external_id else "field 'text'"
        problems.add(
            source, line, over_limit(what, len(text), limits.note_chars, "IMPORT_MAX_NOTE_CHARS", "characters")
        )
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


def nfc(text: str) -> str:
    """Ids, task names and labels are compared in Unicode NFC form: "café" typed with a composed é or
    with e and a combining accent looks the same to people, so it is the same id to us."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _external_id(raw, name, source, line, problems) -> str | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        problems.add(source, line, f"field '{name}' must be a string or an integer, not {json_kind(raw)}")
        return None
    value = nfc(str(raw))
    if not value.strip():
        problems.add(source, line, f"field '{name}' is empty")
    elif len(value) > MAX_ID_LENGTH:
        problems.add(source, line, f"field '{name}' is longer than {MAX_ID_LENGTH} characters")
    elif hidden_character(value):
        problems.add(source, line, f"field '{name}' contains {hidden_character(value)}")
    elif value != value.strip():
        problems.add(source, line, f"field '{name}' has surrounding spaces")
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


def _json_lines(path: Path, problems: Problems, limits: ImportLimits, checkpoint) -> Iterator[tuple[int, dict]]:
    """Every line that is a JSON object; each line that is not is a problem of the file."""
    source = path.name
    with open_lines(path, problems, limits) as lines:
        for line_no, line in lines:
            checkpoint()
            if not line.strip():
                continue
            try:
                yield line_no, parse_line(line)
            except LineError as exc:
                problems.add(source, line_no, str(exc))


def _first_line(path: Path, limits: ImportLimits) -> tuple[int, str] | None:
    """The first line that is not blank, read on its own (what it holds is reported by the reading)."""
    try:
        with open_lines(path, Problems(), limits) as lines:
            return next(((number, line) for number, line in lines if line.strip()), None)
    except OSError:
        return None


def _names(names: list[str]) -> list[str]:
    """Field names fit to show: the first few, each short, control characters escaped."""
    shown = [n if len(n) <= 40 and n.isprintable() else json.dumps(n[:40]) for n in names]
    if len(shown) > MAX_NAMES_SHOWN:
        shown = [*shown[:MAX_NAMES_SHOWN], f"and {len(shown) - MAX_NAMES_SHOWN} more"]
    return shown
