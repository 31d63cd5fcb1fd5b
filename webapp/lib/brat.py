"""brat standoff annotation (.ann) files: every line parsed, or reported with its line.

Entities (T lines) become the note's metadata, `{"brat": {"entities": [{"id", "type",
"spans"}]}}`, after their offsets are checked against the note's .txt and their covered text
compared with it. The other kinds of line are checked for their shape and for the ids they name
(which must be defined in the same file), but not imported; the import summary counts them in a
warning. The shapes (https://brat.nlplab.org/standoff.html):

    T1<TAB>Type start end[;start end...]<TAB>covered text   entity
    R1<TAB>Type Arg1:T1 Arg2:T2                             relation
    E1<TAB>Type:T1 Role:T2 ...                              event
    A1<TAB>Type T1 [value]   (M1: the older name)           attribute
    N1<TAB>Reference T1 Database:Id<TAB>text                normalization
    #1<TAB>AnnotatorNotes T1<TAB>text                       note
    *<TAB>Equiv T1 T2 ...                                   equivalence

Blank lines are allowed; any other line is a problem. An .ann file is plain UTF-8 text (a
compressed one is refused, like a compressed .txt). Messages show the file's ids quoted and cut
(`validators.quoted`), so a long or odd id cannot flood a message, and the audit log's reason
categories leave them out. Offsets have at most 18 digits. No Django here.

Memory stays bounded whatever the file (IMPORT_MAX_FILE_BYTES bounds its bytes, not what they
would become): reading stops at the line whose entities no longer fit in a note's metadata
(IMPORT_MAX_METADATA_BYTES, where they go), or past MAX_OTHER_LINES lines of the other kinds
(their ids are kept to check the references).
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

from webapp.lib import validators
from webapp.lib.import_limits import ImportLimits, over_limit
from webapp.lib.input_files import open_lines
from webapp.lib.validators import quoted

_ENTITY_SHAPE = "entity line must be 'T<n><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>'"
# first character -> (what the line is, its whole-line pattern whose groups hold the ids it refers to, its shape)
_OTHER = {
    "R": (
        "relation",
        re.compile(r"R\S*\t[^\s:]+ [^\s:]+:(\S+) [^\s:]+:(\S+)[\t ]*"),
        "'R<n><TAB><type> Arg1:<id> Arg2:<id>'",
    ),
    "E": (
        "event",
        re.compile(r"E\S*\t[^\s:]+:(\S+)((?: [^\s:]+:\S+)*)[\t ]*"),
        "'E<n><TAB><type>:<id> [<role>:<id> ...]'",
    ),
    "A": ("attribute", re.compile(r"[AM]\S*\t\S+ (\S+)(?: \S+)?[\t ]*"), "'A<n><TAB><type> <id> [<value>]'"),
    "N": (
        "normalization",
        re.compile(r"N\S*\t\S+ (\S+) [^\s:]+:\S+(?:\t.*)?"),
        "'N<n><TAB><type> <id> <database>:<id><TAB><text>'",
    ),
    "#": ("note", re.compile(r"#\S*\t\S+ (\S+)(?:\t.*)?"), "'#<n><TAB><type> <id><TAB><text>'"),
    "*": ("equivalence", re.compile(r"\*\t\S+((?: \S+)+)[\t ]*"), "'*<TAB><type> <id> <id> ...'"),
}
_OTHER["M"] = _OTHER["A"]
MAX_OFFSET_DIGITS = 18  # int() of a few thousand digits is slow, then refused
MAX_OTHER_LINES = 100_000  # relations, events...: E3C's notes have tens; their ids are kept to check references


@dataclass
class AnnFile:
    entities: list[dict]
    other_lines: int  # relations, events, ...: checked, not imported


def read_ann(ann: Path, text: str, problems, limits: ImportLimits) -> AnnFile | None:
    """The entities of a .ann file, checked against its note's text; None if any line is wrong."""
    entities, other_lines, ok = [], 0, True
    metadata_bytes = len('{"brat":{"entities":[]}}')  # as validators.metadata_problems counts it
    defined: dict[str, int] = {}  # id -> line
    references: list[tuple[int, str, str]] = []  # (line, what refers, id referred to)
    before = problems.total
    with open_lines(ann, problems, limits, text_only=True) as lines:
        for line_no, line in lines:
            line = line.removesuffix("\n").removesuffix("\r")
            if not line.strip():
                continue
            kind = line[0]
            if kind == "T":
                entity = _entity(line, line_no, ann, text, problems, limits)
                ok &= entity is not None
                if entity is not None:
                    ok &= _define(entity["id"], "entity", line_no, defined, ann, problems)
                    entities.append(entity)
                    metadata_bytes += len(json.dumps(entity, ensure_ascii=False, separators=(",", ":")).encode())
                    metadata_bytes += len(entities) > 1  # the comma before it
                    if metadata_bytes > limits.metadata_bytes:
                        problems.add(
                            ann.name,
                            line_no,
                            f"the entities up to this line take more than the {limits.metadata_bytes:,} bytes of "
                            "a note's metadata (IMPORT_MAX_METADATA_BYTES); nothing after it was read",
                        )
                        return None
                continue
            if kind not in _OTHER:
                problems.add(
                    ann.name,
                    line_no,
                    "not a brat annotation line (a line starts with T, R, E, A, M, N, # or * and an id, then a tab)",
                )
                ok = False
                continue
            name, pattern, shape = _OTHER[kind]
            match = pattern.fullmatch(line)
            if match is None:
                problems.add(ann.name, line_no, f"{name} line must be {shape}")
                ok = False
                continue
            other_lines += 1
            if other_lines > MAX_OTHER_LINES:
                problems.add(
                    ann.name,
                    line_no,
                    f"more than {MAX_OTHER_LINES:,} relation, event, attribute, normalization, note or "
                    "equivalence lines (MAX_OTHER_LINES in webapp/lib/brat.py); nothing after this one was read",
                )
                return None
            line_id = line.split("\t", 1)[0]
            if kind not in "#*":
                ok &= _define(line_id, name, line_no, defined, ann, problems)
            for group in match.groups():
                for ref in group.split():
                    references.append((line_no, f"{name} {quoted(line_id)}", ref.rpartition(":")[2]))
    for line_no, what, ref in references:
        if ref not in defined:
            problems.add(ann.name, line_no, f"{what} refers to {quoted(ref)}, which the file does not define")
            ok = False
    return AnnFile(entities, other_lines) if ok and problems.total == before else None


def _define(line_id: str, name: str, line_no: int, defined: dict, ann: Path, problems) -> bool:
    first = defined.setdefault(line_id, line_no)
    if first != line_no:
        problems.add(ann.name, line_no, f"{name} {quoted(line_id)} is defined twice (first on line {first})")
        return False
    return True


def _entity(line: str, line_no: int, ann: Path, text: str, problems, limits: ImportLimits) -> dict | None:
    parts = line.split("\t", 2)
    if len(parts) != 3 or " " not in parts[1]:
        problems.add(ann.name, line_no, _ENTITY_SHAPE)
        return None
    entity_id, (kind, _, offsets), covered = parts[0], parts[1].partition(" "), parts[2]
    entity = f"entity {quoted(entity_id)}"
    spans = _spans(offsets)
    if spans is None:
        problems.add(
            ann.name,
            line_no,
            f"{entity}: offsets must be integer pairs 'start end' separated by ';', "
            f"each of at most {MAX_OFFSET_DIGITS} digits",
        )
        return None
    if len(spans) > limits.evidence_spans:
        problems.add(
            ann.name,
            line_no,
            over_limit(entity, len(spans), limits.evidence_spans, "IMPORT_MAX_EVIDENCE_SPANS", "fragments"),
        )
        return None
    span_problems = validators.span_problems(spans, len(text))
    for message in span_problems:
        problems.add(ann.name, line_no, f"{entity}: {message} of {ann.stem}.txt")
    if span_problems:
        return None
    if not _covers(text, spans, covered):
        where = ", ".join(f"[{s}, {e})" for s, e in spans)
        problems.add(ann.name, line_no, f"{entity}: the covered text differs from {ann.stem}.txt at {where}")
        return None
    spans, overlap = fragments_in_text_order(spans)
    if overlap:
        problems.add(ann.name, line_no, f"{entity}: {overlap}")
        return None
    return {"id": entity_id, "type": kind, "spans": spans}


def fragments_in_text_order(fragments: list) -> tuple[list, str | None]:
    """The one verdict on a discontinuous entity's fragments, for the notes import and the gold
    import alike (webapp.lib.formats.brat): fragments out of text order are taken, in text
    order (the covered text is checked in the file's order first: brat joins them as written);
    fragments that share characters are refused, with the reason. Returns (fragments, reason)."""
    ordered = sorted([int(s), int(e)] for s, e in fragments)
    for (a, b), (c, d) in zip(ordered, ordered[1:]):
        if c < b:
            return ordered, f"its fragments [{a}, {b}) and [{c}, {d}) overlap"
    return ordered, None


def _covers(text: str, spans: list[list[int]], covered: str) -> bool:
    """brat joins the fragments of a discontinuous entity with one space (and writes a line
    break inside a fragment as a space). The lengths are compared first: no copy of a long text
    for a line that cannot match."""
    if sum(e - s for s, e in spans) + len(spans) - 1 != len(covered):
        return False
    joined = " ".join(text[s:e] for s, e in spans)
    return joined == covered or joined.replace("\n", " ") == covered


def _spans(offsets: str) -> list[list[int]] | None:
    spans = []
    for fragment in offsets.split(";"):
        pieces = fragment.split()
        if len(pieces) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= MAX_OFFSET_DIGITS for p in pieces):
            return None
        spans.append([int(pieces[0]), int(pieces[1])])
    return spans
