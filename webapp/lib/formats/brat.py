"""brat standoff: a folder (or a zip) of X.txt (the text) and X.ann (the annotations) pairs. The
one brat reader: notes and gold labels are read from a brat folder alike, and a line either import
refuses, the other refuses too, naming the file, the line and why.

Every line of an .ann file is parsed, or reported with its line (https://brat.nlplab.org/standoff.html):

    T1<TAB>Type start end[;start end...]<TAB>covered text   entity
    R1<TAB>Type Arg1:T1 Arg2:T2                             relation
    E1<TAB>Type:T1 Role:T2 ...                              event
    A1<TAB>Type T1 [value]   (M1: the older name)           attribute (no value: "true")
    N1<TAB>Reference T1 Database:Id<TAB>text                normalization
    #1<TAB>AnnotatorNotes T1<TAB>text                       note
    *<TAB>Equiv T1 T2 ...                                   equivalence

Blank lines are allowed; any other line is a problem, and so is a line that names an id the file
does not define, or an id defined twice: the document is then not read (nothing of a bad file is
half imported). Entities become the document's spans, with the attributes of their A lines and
the source and reviewer of a span from an AnnotatorNotes line of the form
`source: prediction; reviewer: alice` (as `write` puts them); relations, events, normalizations
and other notes are checked, not imported (one warning says how many). Each entity is also kept in
the document's metadata, `{"brat": {"entities": [{"id", "type", "spans"}]}}`, which a note keeps
(the de-identifier carries those spans into the new text: webapp.deid.policy).

Offsets: code points (brat is written in Python), half-open, at most 18 digits; the covered text
is checked against the .txt (brat joins fragments with one space and writes a line break as a
space). Fragments out of text order are taken in text order, fragments that overlap are refused.
The document's id is the file's name without .txt (%XX escapes undone: `_files.safe_name`); a
name that is not UTF-8 or holds an invisible character is refused, and so are two names of one
id in two Unicode forms. Both files must be plain UTF-8 text (a compressed one is refused).
Messages show the file's ids quoted and cut (`validators.quoted`), so a long or odd id cannot
flood a message, and the audit log's reason categories leave them out.

Memory stays bounded whatever the file (IMPORT_MAX_FILE_BYTES bounds its bytes, not what they
would become): an .ann is read a line at a time, stopping at the line whose entities no longer fit
in a note's metadata (IMPORT_MAX_METADATA_BYTES), or past MAX_OTHER_LINES lines of the other kinds
(their ids are kept to check the references). No Django here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.lib import validators
from webapp.lib.formats._files import id_of_name, safe_name
from webapp.lib.formats.document import SOURCES, Document, Span
from webapp.lib.import_limits import ImportLimits, over_limit_message
from webapp.lib.input_files import open_lines, read_text_file
from webapp.lib.messages import Message, gettext_noop, message
from webapp.lib.validators import hidden_character, nfc, quoted

CARRIES = ("discontinuous", "attributes", "source", "reviewer")
MEMBERS = (".txt", ".ann")
_ENTITY_SHAPE = gettext_noop("entity line must be 'T<n><TAB><type> <start> <end>[;<start> <end>...]<TAB><text>'")
_LINE_SHAPE = gettext_noop("%(what)s line must be %(shape)s")
_ENTITY = gettext_noop("entity %(id)s")
# first character -> (what the line is, its whole-line pattern whose groups hold the ids it refers to, its shape)
_OTHER = {
    "R": (
        gettext_noop("relation"),
        re.compile(r"R\S*\t[^\s:]+ [^\s:]+:(\S+) [^\s:]+:(\S+)[\t ]*"),
        "'R<n><TAB><type> Arg1:<id> Arg2:<id>'",
    ),
    "E": (
        gettext_noop("event"),
        re.compile(r"E\S*\t[^\s:]+:(\S+)((?: [^\s:]+:\S+)*)[\t ]*"),
        "'E<n><TAB><type>:<id> [<role>:<id> ...]'",
    ),
    "A": (
        gettext_noop("attribute"),
        re.compile(r"[AM]\S*\t\S+ (\S+)(?: \S+)?[\t ]*"),
        "'A<n><TAB><type> <id> [<value>]'",
    ),
    "N": (
        gettext_noop("normalization"),
        re.compile(r"N\S*\t\S+ (\S+) [^\s:]+:\S+(?:\t.*)?"),
        "'N<n><TAB><type> <id> <database>:<id><TAB><text>'",
    ),
    "#": (gettext_noop("note"), re.compile(r"#\S*\t\S+ (\S+)(?:\t.*)?"), "'#<n><TAB><type> <id><TAB><text>'"),
    "*": (gettext_noop("equivalence"), re.compile(r"\*\t\S+((?: \S+)+)[\t ]*"), "'*<TAB><type> <id> <id> ...'"),
}
_OTHER["M"] = _OTHER["A"]
_ATTRIBUTE = re.compile(r"[AM]\S*\t(\S+) (\S+)(?: (\S+))?[\t ]*")
_ANNOTATOR_NOTES = re.compile(r"#\S*\tAnnotatorNotes (\S+)\t(.*)")
MAX_OFFSET_DIGITS = 18  # int() of a few thousand digits is slow, then refused
MAX_OTHER_LINES = 100_000  # relations, events...: E3C's notes have tens; their ids are kept to check references


@dataclass
class AnnFile:
    entities: list[dict]  # {"id", "type", "spans"}: what a note keeps in its metadata
    spans: list[Span]
    other_lines: int  # relations, events, normalizations, equivalences, other notes: checked, not read


def read(path: Path, options, problems) -> Iterator[Document]:
    """One document per X.txt (id X, text exactly the file's content) with its X.ann entities."""
    folder, limits = path, options.limits
    if not folder.is_dir():
        problems.add(folder.name, None, gettext_noop("brat needs a folder (or a zip) of .txt and .ann files"))
        return
    named = [p for p in sorted(folder.glob("*.txt")) + sorted(folder.glob("*.ann")) if _name_ok(p, problems)]
    texts = [p for p in named if p.suffix == ".txt"]
    for orphan in sorted({p.stem for p in named if p.suffix == ".ann"} - {p.stem for p in texts}):
        problems.add(f"{orphan}.ann", None, gettext_noop("has no .txt file of the same name beside it"))
    if not texts and not problems:
        problems.add(folder.name, None, gettext_noop("the folder holds no .txt files"))
    other_lines = other_files = 0
    first_named: dict[str, str] = {}  # document id -> the .txt file that gave it
    for txt in texts:
        options.checkpoint()
        first = first_named.setdefault(nfc(id_of_name(txt.stem)), txt.name)
        if first != txt.name:
            problems.add(
                txt.name,
                None,
                gettext_noop("names the same document as %(first)s (one id in two Unicode forms)"),
                first=repr(first),
            )
            continue
        ann = txt.with_suffix(".ann")
        if not ann.exists():
            problems.add(txt.name, None, gettext_noop("has no .ann file of the same name beside it"))
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
        yield Document(
            id_of_name(txt.stem),
            text,
            spans=parsed.spans,
            metadata={"brat": {"entities": parsed.entities}},
            where=txt.name,
        )
    if other_lines:
        problems.warn(
            folder.name,
            None,
            gettext_noop(
                "%(lines)s relation, event, normalization, equivalence or note line(s) in %(files)s .ann file(s) "
                "were checked but not imported (only entities are, with their attributes)"
            ),
            lines=f"{other_lines:,}",
            files=f"{other_files:,}",
        )


def _name_ok(path: Path, problems) -> bool:
    """A brat file's name is its document's id: UTF-8 (Python gives the bytes of a name that is not
    as surrogates, U+DC80-U+DCFF), without control or invisible characters."""
    hidden = hidden_character(path.name)
    if not hidden:
        return True
    byte = next((ord(c) - 0xDC00 for c in path.name if 0xDC80 <= ord(c) <= 0xDCFF), None)
    if byte is not None:
        problems.add(
            path.name,
            None,
            gettext_noop("the file name is not UTF-8 (byte %(byte)s); rename the file"),
            byte=f"0x{byte:02x}",
        )
    else:
        problems.add(
            path.name,
            None,
            gettext_noop("the file name (the note's id) contains %(what)s; rename the file"),
            what=hidden,
        )
    return False


def read_ann(ann: Path, text: str, problems, limits: ImportLimits) -> AnnFile | None:
    """The entities of a .ann file, checked against its document's text; None if any line is wrong
    (each reported with its line)."""
    entities, other_lines, unread, ok = [], 0, 0, True
    metadata_bytes = len('{"brat":{"entities":[]}}')  # as validators.metadata_problems counts it
    defined: dict[str, int] = {}  # id -> line
    references: list[tuple[int, str, str]] = []  # (line, what refers, id referred to)
    attributes: dict[str, dict[str, str]] = {}  # entity id -> {name: value}
    notes: dict[str, tuple[str, str]] = {}  # entity id -> (source, reviewer)
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
                            gettext_noop(
                                "the entities up to this line take more than the %(most)s bytes of a note's "
                                "metadata (IMPORT_MAX_METADATA_BYTES); nothing after it was read"
                            ),
                            most=f"{limits.metadata_bytes:,}",
                        )
                        return None
                continue
            if kind not in _OTHER:
                problems.add(
                    ann.name,
                    line_no,
                    gettext_noop(
                        "not a brat annotation line (a line starts with T, R, E, A, M, N, # or * and an id, then a tab)"
                    ),
                )
                ok = False
                continue
            name, pattern, shape = _OTHER[kind]
            match = pattern.fullmatch(line)
            if match is None:
                problems.add(ann.name, line_no, _LINE_SHAPE, what=Message(name), shape=shape)
                ok = False
                continue
            other_lines += 1
            if other_lines > MAX_OTHER_LINES:
                problems.add(
                    ann.name,
                    line_no,
                    gettext_noop(
                        "more than %(most)s relation, event, attribute, normalization, note or equivalence lines "
                        "(MAX_OTHER_LINES in webapp/lib/formats/brat.py); nothing after this one was read"
                    ),
                    most=f"{MAX_OTHER_LINES:,}",
                )
                return None
            line_id = line.split("\t", 1)[0]
            if kind not in "#*":
                ok &= _define(line_id, name, line_no, defined, ann, problems)
            for group in match.groups():
                for ref in group.split():
                    references.append(
                        (
                            line_no,
                            message("%(what)s %(id)s", what=Message(name), id=quoted(line_id)),
                            ref.rpartition(":")[2],
                        )
                    )
            if (attribute := _ATTRIBUTE.fullmatch(line)) is not None:
                key, target, value = attribute.groups()
                attributes.setdefault(target, {})[key] = value or "true"
            elif (note := _ANNOTATOR_NOTES.fullmatch(line)) is not None:
                notes[note.group(1)] = _source_and_reviewer(note.group(2), *notes.get(note.group(1), ("gold", "")))
            else:
                unread += 1
    for line_no, what, ref in references:
        if ref not in defined:
            problems.add(
                ann.name,
                line_no,
                gettext_noop("%(what)s refers to %(id)s, which the file does not define"),
                what=what,
                id=quoted(ref),
            )
            ok = False
    if not ok or problems.total != before:
        return None
    spans = [
        Span.of(e["spans"], e["type"], attributes.get(e["id"]), **_noted(notes.get(e["id"])), id=e["id"])
        for e in entities
    ]
    return AnnFile(entities, spans, unread)


def _source_and_reviewer(note: str, source: str, reviewer: str) -> tuple[str, str]:
    """`source: prediction; reviewer: alice` (as `write` puts them); other notes change nothing."""
    for part in note.split("; "):
        key, sep, value = part.partition(": ")
        if sep and key == "source" and value in SOURCES:
            source = value
        elif sep and key == "reviewer":
            reviewer = value
    return source, reviewer


def _noted(note: tuple[str, str] | None) -> dict:
    source, reviewer = note or ("gold", "")
    return {"source": source, "reviewer": reviewer}


def _define(line_id: str, name: str, line_no: int, defined: dict, ann: Path, problems) -> bool:
    first = defined.setdefault(line_id, line_no)
    if first != line_no:
        problems.add(
            ann.name,
            line_no,
            gettext_noop("%(what)s %(id)s is defined twice (first on line %(first)s)"),
            what=Message(name),
            id=quoted(line_id),
            first=first,
        )
        return False
    return True


def _entity(line: str, line_no: int, ann: Path, text: str, problems, limits: ImportLimits) -> dict | None:
    parts = line.split("\t", 2)
    if len(parts) != 3 or " " not in parts[1]:
        problems.add(ann.name, line_no, _ENTITY_SHAPE)
        return None
    entity_id, (kind, _, offsets), covered = parts[0], parts[1].partition(" "), parts[2]
    entity = message(_ENTITY, id=quoted(entity_id))
    spans = _offsets(offsets)
    if spans is None:
        problems.add(
            ann.name,
            line_no,
            gettext_noop(
                "%(entity)s: offsets must be integer pairs 'start end' separated by ';', each of at most "
                "%(most)s digits"
            ),
            entity=entity,
            most=MAX_OFFSET_DIGITS,
        )
        return None
    if len(spans) > limits.evidence_spans:
        problems.add(
            ann.name,
            line_no,
            over_limit_message(entity, len(spans), limits.evidence_spans, "IMPORT_MAX_EVIDENCE_SPANS", "fragments"),
        )
        return None
    span_problems = validators.span_messages(spans, len(text))
    for reason in span_problems:
        problems.add(
            ann.name,
            line_no,
            gettext_noop("%(entity)s: %(reason)s of %(file)s"),
            entity=entity,
            reason=reason,
            file=f"{ann.stem}.txt",
        )
    if span_problems:
        return None
    if not _covers(text, spans, covered):
        where = ", ".join(f"[{s}, {e})" for s, e in spans)
        problems.add(
            ann.name,
            line_no,
            gettext_noop("%(entity)s: the covered text differs from %(file)s at %(where)s"),
            entity=entity,
            file=f"{ann.stem}.txt",
            where=where,
        )
        return None
    spans, overlap = fragments_in_text_order(spans)
    if overlap:
        problems.add(ann.name, line_no, "%(entity)s: %(reason)s", entity=entity, reason=overlap)
        return None
    return {"id": entity_id, "type": kind, "spans": spans}


def fragments_in_text_order(fragments: list) -> tuple[list, Message | None]:
    """A discontinuous entity's fragments out of text order are taken, in text order (the covered
    text is checked in the file's order first: brat joins them as written); fragments that share
    characters are refused, with the reason. Returns (fragments, reason)."""
    ordered = sorted([int(s), int(e)] for s, e in fragments)
    for (a, b), (c, d) in zip(ordered, ordered[1:]):
        if c < b:
            return ordered, message(
                gettext_noop("its fragments %(first)s and %(second)s overlap"),
                first=f"[{a}, {b})",
                second=f"[{c}, {d})",
            )
    return ordered, None


def _covers(text: str, spans: list[list[int]], covered: str) -> bool:
    """brat joins the fragments of a discontinuous entity with one space (and writes a line
    break inside a fragment as a space). The lengths are compared first: no copy of a long text
    for a line that cannot match."""
    if sum(e - s for s, e in spans) + len(spans) - 1 != len(covered):
        return False
    joined = " ".join(text[s:e] for s, e in spans)
    return joined == covered or joined.replace("\n", " ") == covered


def _offsets(offsets: str) -> list[list[int]] | None:
    spans = []
    for fragment in offsets.split(";"):
        pieces = fragment.split()
        if len(pieces) != 2 or not all(p.isascii() and p.isdigit() and len(p) <= MAX_OFFSET_DIGITS for p in pieces):
            return None
        spans.append([int(pieces[0]), int(pieces[1])])
    return spans


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
