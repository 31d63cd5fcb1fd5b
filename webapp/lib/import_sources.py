"""Records of import files: notes read through the format table, gold labels JSONL. No Django here.

`read_notes(path, fmt, ...)` reads any format of the table (webapp.lib.formats: JSONL, CSV,
brat, XMI, Label Studio, doccano, and whatever is registered) with its one reader, the one the
gold import reads it with too, and makes each document a note: its id, its text, its metadata
(brat's entities among it, `{"brat": {"entities": [...]}}`). A document's spans are not gold
labels yet: those need a mapping of the file's labels to tasks, and the gold import of the same
file gives it (the notes now hold the documents' texts); the reading counts them in a warning.
`read_annotations` reads our gold labels JSONL (`{"note_id", "task", "label", "evidence"}`).

Each reader streams records (one at a time, so memory stays flat on large files) and reports
what it cannot read to a `Problems` collector (webapp.lib.problems). A problem names the file,
the line and the reason, with character or byte offsets where useful, and never quotes note text.
What an import accepts but its user should hear about is a warning, collected beside the
problems: a UTF-8 byte order mark (dropped), top-level fields of a notes line (kept in its
metadata), overlapping evidence spans (kept as given), brat lines other than entities (checked,
not imported), spans read with notes.

A reading given a `checkpoint` calls it before each document (a line, a CSV row, a brat note):
it raises to stop the reading (an import cancelled, or taken over by another worker), so a stop
never waits for the rest of a file.

Bytes become lines in `input_files` (compression told by content, UTF-8 only, bounded lines).
Shape checks that need no database (types, empty text, span order, metadata, the size limits of
`limits`) happen here and in the readers; the importer adds the checks that need the corpus, the
task catalog or the whole file.
"""

import math
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.lib import validators
from webapp.lib.formats import ReadOptions, detect_format, folder_formats, get_format, go_on, position
from webapp.lib.formats._files import (
    NON_EMPTY_STRING,
    STRING,
    STRING_OR_INTEGER,
    json_objects,
    missing_fields,
    must_be,
)
from webapp.lib.formats.unpack import is_zip
from webapp.lib.import_limits import ImportLimits, over_limit_message
from webapp.lib.input_files import MAX_ZIP_MEMBERS, declared_zip_entries, open_lines
from webapp.lib.messages import gettext_noop, message
from webapp.lib.problems import Problems
from webapp.lib.validators import hidden_character, nfc, shown_names

MAX_ID_LENGTH = 200
MAX_TASK_LENGTH = 200
ANNOTATION_FIELDS = ("note_id", "task", "label", "evidence")
_FIELD = gettext_noop("field '%(field)s'")
_FIELD_SAYS = gettext_noop("field '%(field)s': %(reason)s")
_NOTE = gettext_noop("note %(id)s")
_EMPTY = gettext_noop("field '%(field)s' is empty")
_LONGER = gettext_noop("field '%(field)s' is longer than %(most)s characters")
_CONTAINS = gettext_noop("field '%(field)s' contains %(what)s")


@dataclass(frozen=True, slots=True)
class NoteRecord:
    source: str
    line: int | None  # None: a document of a folder, or a record ("export.json task 3")
    external_id: str
    text: str
    metadata: dict


@dataclass(frozen=True, slots=True)
class AnnotationRecord:
    source: str
    line: int | None
    note_id: str
    task: str
    label: str
    evidence: list
    annotator: str = ""  # whose annotation; "" for the import's annotator (annotation-tool files name their own)


def guess_format(path: Path) -> str | None:
    """The format of the table a file, folder or zip is in, by the names (webapp.lib.formats.detect_format):
    a folder or a zip by the names of its files, a file by its own name. A zip whose names tell
    nothing is taken for the first folder format's (its unpacking says what is wrong with it)."""
    if not is_zip(path):
        return detect_format(path)
    fallback = folder_formats()[0].name
    declared = declared_zip_entries(path)
    if declared is None or declared > MAX_ZIP_MEMBERS:  # before ZipFile builds an object per entry
        return fallback
    try:
        with zipfile.ZipFile(path) as zf:
            names = [m.filename for m in zf.infolist() if not m.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return fallback
    return detect_format(path, names) or fallback


def read_notes(
    path: Path, fmt: str, problems: Problems, limits: ImportLimits, checkpoint=go_on
) -> Iterator[NoteRecord]:
    """The notes of `path` read in format `fmt` (a name of the table; UnsupportedFormat otherwise):
    each document a note, checked (module docstring)."""
    format_ = get_format(fmt)
    spans = documents = 0
    for doc in format_.read(path, ReadOptions(limits=limits, checkpoint=checkpoint), problems):
        source, line = position(doc, path.name)
        if doc.spans:
            spans += len(doc.spans)
            documents += 1
        record = _note(source, line, doc.id, doc.text, doc.metadata, problems, limits)
        if record:
            yield record
    if spans:
        problems.warn(
            path.name,
            None,
            message(
                gettext_noop(
                    "%(spans)s span(s) of %(documents)s document(s) are not gold labels yet: import the same file "
                    "as gold labels from %(format)s, mapping its labels to tasks, once the notes are in"
                ),
                spans=f"{spans:,}",
                documents=f"{documents:,}",
                format=format_.label,
            ),
        )


def read_annotations(
    path: Path, problems: Problems, limits: ImportLimits, checkpoint=go_on
) -> Iterator[AnnotationRecord]:
    source = path.name
    first = _first_line(path, limits)
    if first is not None and first[1].lstrip().startswith("["):
        problems.add(
            source,
            first[0],
            gettext_noop(
                "the file is one JSON array, not JSON lines (one object a line): a Label Studio export? Import it "
                "as gold labels from Label Studio JSON (import_annotations --format labelstudio, with a mapping)"
            ),
        )
        return
    for line, obj in json_objects(path, ReadOptions(limits=limits, checkpoint=checkpoint), problems):
        if not _has_fields(obj, ("note_id", "task", "label"), source, line, problems):
            continue
        ok = True
        note_id = _external_id(obj["note_id"], "note_id", source, line, problems)
        ok &= note_id is not None
        for name, longest in (("task", MAX_TASK_LENGTH), ("label", validators.MAX_LABEL_LENGTH)):
            if not isinstance(obj[name], str) or not obj[name].strip():
                problems.add(source, line, must_be(NON_EMPTY_STRING, name, obj[name]))
                ok = False
            elif len(obj[name]) > longest:
                problems.add(source, line, _LONGER, field=name, most=longest)
                ok = False
            elif hidden_character(obj[name]):
                problems.add(source, line, _CONTAINS, field=name, what=hidden_character(obj[name]))
                ok = False
        evidence = obj.get("evidence", [])
        ok &= _evidence_ok(evidence, source, line, problems, limits)
        unknown = sorted(set(obj) - set(ANNOTATION_FIELDS))
        if unknown:
            names = ", ".join(shown_names(unknown))
            problems.add(
                source,
                line,
                gettext_noop("unknown field(s) %(names)s (allowed: %(allowed)s)"),
                names=names,
                allowed=", ".join(ANNOTATION_FIELDS),
            )
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
            over_limit_message(
                message(_FIELD, field="evidence"),
                len(evidence),
                limits.evidence_spans,
                "IMPORT_MAX_EVIDENCE_SPANS",
                "spans",
            ),
        )
        return False
    shape_problems = _span_shape_problems(evidence)
    for reason in shape_problems:
        problems.add(source, line, _FIELD_SAYS, field="evidence", reason=reason)
    if shape_problems:
        return False
    overlap = validators.overlapping_spans(evidence)
    if overlap:
        (a, b), (c, d) = overlap
        problems.warn(
            source,
            line,
            gettext_noop("evidence spans %(first)s and %(second)s overlap; imported as given"),
            first=f"[{a}, {b})",
            second=f"[{c}, {d})",
        )
    return True


# --- shared ---------------------------------------------------------------------------------


def _note(source, line, raw_id, text, metadata, problems, limits) -> NoteRecord | None:
    external_id = _external_id(raw_id, "id", source, line, problems)
    ok = external_id is not None
    if not isinstance(text, str):
        problems.add(source, line, must_be(STRING, "text", text))
        return None
    if len(text) > limits.note_chars:
        what = message(_NOTE, id=repr(external_id)) if external_id else message(_FIELD, field="text")
        problems.add(
            source, line, over_limit_message(what, len(text), limits.note_chars, "IMPORT_MAX_NOTE_CHARS", "characters")
        )
        return None
    if not text.strip():
        problems.add(source, line, _EMPTY, field="text")
        return None
    nul = text.find("\x00")
    if nul >= 0:
        problems.add(
            source,
            line,
            gettext_noop("field '%(field)s' contains a NUL character at offset %(offset)s"),
            field="text",
            offset=nul,
        )
        ok = False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        problems.add(
            source,
            line,
            gettext_noop("field '%(field)s' contains an unpaired surrogate (\\u escape) at offset %(offset)s"),
            field="text",
            offset=exc.start,
        )
        ok = False
    for reason in validators.metadata_messages(metadata, limits.metadata_bytes):
        problems.add(source, line, reason)
        ok = False
    return NoteRecord(source, line, external_id, text, metadata) if ok else None


def _external_id(raw, name, source, line, problems) -> str | None:
    if isinstance(raw, bool) or not isinstance(raw, str | int):
        problems.add(source, line, must_be(STRING_OR_INTEGER, name, raw))
        return None
    value = nfc(str(raw))
    if not value.strip():
        problems.add(source, line, _EMPTY, field=name)
    elif len(value) > MAX_ID_LENGTH:
        problems.add(source, line, _LONGER, field=name, most=MAX_ID_LENGTH)
    elif hidden_character(value):
        problems.add(source, line, _CONTAINS, field=name, what=hidden_character(value))
    elif value != value.strip():
        problems.add(source, line, gettext_noop("field '%(field)s' has surrounding spaces"), field=name)
    else:
        return value
    return None


def _span_shape_problems(evidence) -> list[str]:
    """Span checks that need no note: pairs of integers, 0 <= start < end (the length comes later)."""
    return validators.span_messages(evidence, math.inf)


def _has_fields(obj, required, source, line, problems) -> bool:
    missing = [name for name in required if name not in obj]
    if missing:
        problems.add(source, line, missing_fields(missing))
    return not missing


def _first_line(path: Path, limits: ImportLimits) -> tuple[int, str] | None:
    """The first line that is not blank, read on its own (what it holds is reported by the reading)."""
    try:
        with open_lines(path, Problems(), limits) as lines:
            return next(((number, line) for number, line in lines if line.strip()), None)
    except OSError:
        return None
