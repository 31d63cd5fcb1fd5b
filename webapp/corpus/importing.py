"""Import notes and gold annotations into a corpus: the one place for import logic.

Both imports read the file twice and keep no note text between records:
1. validate the whole file (its size, format, encoding, fields, metadata, limits, duplicates,
   the corpus, tasks, labels, spans), keeping only ids, line numbers and hashes; if anything
   is wrong, write nothing and return the problems (each with its file, line and reason, never
   note text);
2. write in one transaction, in batches (COPY on PostgreSQL, bulk_create elsewhere), and
   record an audit entry. Should the database still refuse a record (a rule the validation
   does not know, or a row another import wrote meanwhile), the transaction rolls back and the
   problem names the record's line and the error's type only: the database's message quotes
   the row, so it is neither shown nor logged.
Warnings (what the import accepted but its user should hear about, webapp.lib.import_sources) come
from the first reading and are returned with the report, whether it succeeded or not.

Re-importing a file changes nothing: a note whose id exists with the same text (content hash)
is counted `unchanged`, likewise an annotation with the same label and evidence. A note whose
id exists with different text, or an annotation with a different label or evidence, is a
problem unless `update=True`, which replaces text/hash/metadata (or label/evidence). A note
that already has annotations never changes text: its spans would point into other text.

Names that come from outside (the corpus, the annotator) are checked before any query: psycopg
cannot encode an unpaired surrogate, which a command-line argument holds when its bytes are not
UTF-8. A file name is shown (in the audit log, a new corpus's source) with such characters
escaped (`validators.printable`).
"""

import json
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import DatabaseError, DataError, IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.db.models.functions import Length
from django.utils import timezone

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note, Task, language_code, text_hash
from webapp.db.postgres_copy import copy_rows
from webapp.lib.formats import FORMATS, folder_formats, go_on, readers
from webapp.lib.formats.unpack import readable, shape_problem
from webapp.lib.import_limits import THE_FILE, ImportLimits, over_limit_message
from webapp.lib.import_sources import NoteRecord, guess_format, read_annotations, read_notes
from webapp.lib.input_files import CANNOT_BE_READ, NO_SUCH_FILE_OR_FOLDER, input_size, name_mismatch, sniff
from webapp.lib.messages import Message, gettext_noop, message
from webapp.lib.problems import Problem, Problems, numbered_items, numbered_lines
from webapp.lib.validators import hidden_character, label_messages, printable, span_messages
from webapp.projects.models import Project, ProjectNotChosen, resolve_project

log = logging.getLogger(__name__)

BATCH_SIZE = 2000
BATCH_CHARS = 32_000_000  # a batch of long notes ends sooner: memory stays bounded
# SQLSTATE classes of errors a record causes, not the connection: data exception, integrity
# constraint (and our triggers' check_violation), program limit exceeded, raised by PL/pgSQL.
RECORD_SQLSTATES = ("22", "23", "54", "P0")
COPY_ROW = re.compile(r"^COPY [^,\n]+, line (\d+)", re.MULTILINE)


@dataclass
class ImportReport:
    created: int = 0
    unchanged: int = 0
    updated: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    warnings: list[Problem] = field(default_factory=list)
    warning_count: int = 0
    # de-identified on the way in: identifiers replaced per type in the file's notes, never values
    deid_counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    def problem_lines(self) -> list[str]:
        return numbered_lines(self.problems, self.problem_count, "problems")

    def warning_lines(self) -> list[str]:
        return numbered_lines(self.warnings, self.warning_count, "warnings")

    def problem_items(self) -> list[dict]:
        """Every problem kept, as a job stores them (webapp.corpus.problem_text shows them)."""
        return [p.as_json() for p in self.problems]

    def warning_items(self) -> list[dict]:
        """warning_lines as a job stores them."""
        return numbered_items(self.warnings, self.warning_count, "warnings")


class _Abort(Exception):
    """Raised inside the write transaction to roll it back."""


def import_limits() -> ImportLimits:
    """The IMPORT_MAX_* settings as the readers' limits, read afresh for each import."""
    return ImportLimits(
        note_chars=settings.IMPORT_MAX_NOTE_CHARS,
        upload_bytes=settings.IMPORT_MAX_UPLOAD_BYTES,
        unpacked_bytes=settings.IMPORT_MAX_UNPACKED_BYTES,
        lines=settings.IMPORT_MAX_LINES,
        evidence_spans=settings.IMPORT_MAX_EVIDENCE_SPANS,
        metadata_bytes=settings.IMPORT_MAX_METADATA_BYTES,
        file_bytes=settings.IMPORT_MAX_FILE_BYTES,
    )


def import_notes(
    path,
    corpus_name: str,
    *,
    language: str = "",
    create: bool = False,
    update: bool = False,
    fmt: str = "",
    actor=None,
    batch_size: int = BATCH_SIZE,
    progress=None,
    unpack_dir=None,
    on_written=None,
    project=None,
    checkpoint=go_on,
    deidentify: bool = False,
) -> ImportReport:
    """Import the notes of a file, a folder or a zip in format `fmt`, a name of the format table
    (webapp.lib.formats: JSONL or CSV, plain or compressed; brat or XMI, a folder or a zip of one;
    Label Studio; doccano; any format registered) or, when empty, the one its names tell
    (import_sources.guess_format), into the corpus `corpus_name` of `project` (a Project, or a
    slug; "" or None: the only project). Each document becomes a note: its id, its text, its
    metadata; its spans are not gold labels yet (the gold import of the same file, with a mapping,
    makes them so; webapp.corpus.gold).

    `deidentify`: each note goes through the project's de-identification policy before it is
    written (webapp.deid.policy): its text and metadata are replaced, brat entities' spans carried
    into the new text, the original never stored. A new corpus is made de-identified; an existing
    one must be de-identified already (and one that is can only take notes this way). The report's
    `deid_counts` are the identifiers replaced per type.

    `progress(phase, records_done)`, if given, is called after each batch with phase
    "validate" or "write". `on_written(report)`, if given, is called inside the write transaction
    once every row is written, so what it writes commits with the rows (a background job's end);
    it may raise to roll everything back. Validation runs outside any transaction. A zip is
    unpacked into a temporary folder under `unpack_dir` (default: the system's), removed at the end.
    `checkpoint()` is called before each note is read, in both readings; it raises to stop the
    import (a cancel, a job taken over), rolling back whatever was written.
    """
    path = Path(path)
    limits = import_limits()
    problems = Problems()
    fmt = fmt or (guess_format(path) if path.exists() else "") or ""
    project = _project(project, path, problems)
    corpus = _corpus_for_notes(path, corpus_name, language, create, fmt, problems, limits, project, deidentify)
    deid = _deidentifier(corpus, path, problems) if deidentify and corpus is not None else None
    if problems:
        return _failed(problems)
    with readable(path, FORMATS[fmt], problems, limits, unpack_dir) as source:
        if source is None:
            return _failed(problems)

        def read(problems: Problems) -> Iterator:
            return read_notes(source, fmt, problems, limits, checkpoint)

        return _import_notes(
            read, printable(path.name), corpus, fmt, update, actor, batch_size, progress, problems, on_written, deid
        )


def _import_notes(
    read, name, corpus, fmt, update, actor, batch_size, progress, problems, on_written, deid=None
) -> ImportReport:
    """`read(problems)`: the notes of the file, read again on each call. `deid`: a _Deidentifying
    that replaces each note before it is checked against the corpus and written."""
    plan = _NotePlan(corpus, update, problems)
    seen: dict[str, int | str] = {}  # id -> its first line, or file (a folder's); ids only, never text
    checked = read(problems)
    if deid is not None and corpus.pk is not None:  # a new corpus has no note to compare texts with
        checked = deid.records(checked)
    for batch in _batched(checked, batch_size):
        fresh = []
        for rec in batch:
            here = rec.source if rec.line is None else rec.line
            first = seen.setdefault(rec.external_id, here)
            if first != here:
                problems.add(rec.source, rec.line, _duplicate_id(rec.external_id, first))
            else:
                fresh.append(rec)
        plan.check(fresh)
        _report_progress(progress, "validate", len(seen))
    if not seen and not problems:
        problems.add(name, None, gettext_noop("the file holds no notes"))
    del seen
    if problems:
        return _failed(problems)

    report = _succeeded(problems)
    writer = None
    try:
        with transaction.atomic():
            corpus_is_new = corpus.pk is None
            if corpus_is_new:
                corpus.save()
            writer = _NotePlan(corpus, update, problems, corpus_is_new=corpus_is_new)
            reread = Problems()  # the file is read again: its warnings were collected the first time
            records = read(reread)
            if deid is not None:
                records, writer = deid.records(records, tally=True), _DeidentifiedWriter(writer, deid)
            _write_pass(
                writer,
                records,
                reread,
                plan,
                report,
                problems,
                name,
                batch_size,
                progress,
            )
            if deid is not None:
                report.deid_counts = deid.tally.counts_dict()
            record(
                actor,
                AuditEvent.Action.IMPORT_NOTES,
                corpus,
                file=name,
                format=fmt,
                created=report.created,
                unchanged=report.unchanged,
                updated=report.updated,
                **({"deidentified": True, "identifiers": report.deid_counts} if deid is not None else {}),
            )
            if on_written is not None:
                on_written(report)  # commits with the rows (it may raise to roll them back)
    except _Abort:
        return _failed(problems)
    except DatabaseError as exc:
        if not _caused_by_a_record(exc):
            raise
        _refused(exc, writer.pending if writer else [], name, corpus, problems)
        return _failed(problems)
    return report


def import_annotations(
    path,
    corpus_name: str,
    *,
    annotator: str = "",
    update: bool = False,
    read=None,
    dry_run: bool = False,
    audit: dict | None = None,
    actor=None,
    batch_size: int = BATCH_SIZE,
    progress=None,
    on_written=None,
    project=None,
    checkpoint=go_on,
) -> ImportReport:
    """Import gold labels: JSONL lines {"note_id", "task", "label", "evidence": [[start, end], ...]}.

    `task` is a task's slug, its description or one of its aliases. Imported annotations
    belong to the annotator name given, by default 'import:<file name>' (records that name their own
    annotator, as `read` may give, keep theirs unless one is given). `progress(phase,
    records_done)` as for import_notes.

    `read(problems, corpus)`, if given, gives the AnnotationRecords instead of the JSONL file
    `path` (webapp.corpus.gold: annotation-tool formats with a mapping); it is called twice,
    to validate and to write, and reports what it cannot read to `problems`. `dry_run`:
    validate and count (created, unchanged, updated), write nothing. `audit`: more fields for
    the audit entry. `checkpoint()` as for import_notes (a `read` given calls its own).
    """
    path = Path(path)
    limits = import_limits()
    problems = Problems()
    name = printable(path.name)
    annotator = annotator or ("" if read else f"import:{name}")  # `read`'s records name their own
    name_ok = _corpus_name_ok(corpus_name, name, problems)
    project = _project(project, path, problems)
    corpus = Corpus.objects.filter(name=corpus_name, project=project).first() if name_ok and project else None
    if not path.exists() or (read is None and not path.is_file()):
        problems.add(name, None, gettext_noop("no such file"))
    else:
        _check_size(path, problems, limits)
    if name_ok and project and corpus is None:
        problems.add(
            name,
            None,
            gettext_noop("corpus %(corpus)s does not exist in project %(project)s"),
            corpus=repr(corpus_name),
            project=repr(project.slug),
        )
    if len(annotator) > 150:
        problems.add(name, None, gettext_noop("the annotator name is longer than %(most)s characters"), most=150)
    elif hidden_character(annotator):
        problems.add(name, None, gettext_noop("the annotator name contains %(what)s"), what=hidden_character(annotator))
    if problems:
        return _failed(problems)

    plan = _AnnotationPlan(corpus, annotator, update, problems)
    checked = 0
    records = read or (lambda problems, corpus: read_annotations(path, problems, limits, checkpoint))
    for batch in _batched(records(problems, corpus), batch_size):
        plan.check(batch)
        checked += len(batch)
        _report_progress(progress, "validate", checked)
    if plan.counts() == (0, 0, 0) and not problems:
        problems.add(name, None, gettext_noop("the file holds no annotations"))
    plan.forget_pairs()
    if problems:
        return _failed(problems)
    if dry_run:
        report = _succeeded(problems)
        report.created, report.unchanged, report.updated = plan.counts()
        return report

    report = _succeeded(problems)
    writer = None
    try:
        with transaction.atomic():
            writer = _AnnotationPlan(corpus, annotator, update, problems)
            reread = Problems()
            _write_pass(
                writer,
                records(reread, corpus),
                reread,
                plan,
                report,
                problems,
                name,
                batch_size,
                progress,
            )
            record(
                actor,
                AuditEvent.Action.IMPORT_ANNOTATIONS,
                corpus,
                file=name,
                annotator=annotator,
                **(audit or {}),
                created=report.created,
                unchanged=report.unchanged,
                updated=report.updated,
            )
            if on_written is not None:
                on_written(report)
    except _Abort:
        return _failed(problems)
    except DatabaseError as exc:
        if not _caused_by_a_record(exc):
            raise
        _refused(exc, writer.pending if writer else [], name, corpus, problems)
        return _failed(problems)
    return report


# --- the input as given ---------------------------------------------------------------------


def _check_size(path: Path, problems: Problems, limits: ImportLimits) -> None:
    try:
        size = input_size(path)
    except OSError as exc:
        problems.add(path.name, None, CANNOT_BE_READ, reason=exc.strerror or type(exc).__name__)
        return
    if size > limits.upload_bytes:
        what = Message(gettext_noop("the folder (its .txt and .ann files)")) if path.is_dir() else THE_FILE
        problems.add(
            path.name, None, over_limit_message(what, size, limits.upload_bytes, "IMPORT_MAX_UPLOAD_BYTES", "bytes")
        )


# --- notes ----------------------------------------------------------------------------------


def _project(project, path, problems: Problems):
    """The Project to import into (see import_notes), or None with the reason in `problems`."""
    if isinstance(project, Project):
        return project
    try:
        return resolve_project(project or "")
    except ProjectNotChosen as exc:
        problems.add(Path(path).name, None, str(exc))
        return None


def _corpus_for_notes(path, name, language, create, fmt, problems, limits, project, deidentify=False) -> Corpus | None:
    if not path.exists():
        problems.add(path.name, None, NO_SUCH_FILE_OR_FOLDER)
    elif fmt not in FORMATS:
        mismatch = name_mismatch(path, _kind_of(path)) if path.is_file() else ""
        if mismatch:
            template = gettext_noop("unsupported format; it %(mismatch)s; %(formats)s")
        else:
            template = gettext_noop("unsupported format; %(formats)s")
        problems.add(path.name, None, template, mismatch=mismatch, formats=_formats_named())
    elif reason := shape_problem(path, FORMATS[fmt]):
        problems.add(path.name, None, reason)
    else:
        _check_size(path, problems, limits)
    if not _corpus_name_ok(name, path.name, problems) or project is None:
        return None
    corpus = Corpus.objects.filter(name=name, project=project).first()  # names are unique per project
    if corpus is not None:
        if language and language != corpus.language:
            problems.add(
                path.name,
                None,
                gettext_noop("corpus %(corpus)s is in language %(language)s, not %(asked)s"),
                corpus=repr(name),
                language=repr(corpus.language),
                asked=repr(language),
            )
        if reason := deidentified_mismatch(corpus, deidentify):
            problems.add(path.name, None, reason)
        return corpus
    if not create:
        problems.add(
            path.name,
            None,
            gettext_noop("corpus %(corpus)s does not exist (use --create to create it)"),
            corpus=repr(name),
        )
        return None
    if not name.strip() or len(name) > 200:
        problems.add(path.name, None, gettext_noop("the corpus name must be 1 to 200 characters"))
    try:
        language_code(language)
    except ValidationError:
        problems.add(
            path.name,
            None,
            gettext_noop("creating a corpus needs --language, an ISO 639 code such as 'it' (got %(language)s)"),
            language=repr(language),
        )
    return Corpus(project=project, name=name, language=language, source=printable(path.name), deidentified=deidentify)


def deidentified_mismatch(corpus: Corpus, deidentify: bool) -> str | None:
    """Why notes may not go into an existing corpus de-identified (or not) as asked: a corpus is
    de-identified only while every note of it went through the de-identifier."""
    if corpus.deidentified and not deidentify:
        return (
            f"corpus {corpus.name!r} is de-identified: notes go into it de-identified only "
            "(De-identify on the way in, --deidentify)"
        )
    if deidentify and not corpus.deidentified:
        return (
            f"corpus {corpus.name!r} holds notes that were not de-identified, so it would not be de-identified "
            "even with these: import them into a new corpus, or de-identify this one into a new corpus first"
        )
    return None


def _deidentifier(corpus: Corpus, path: Path, problems: Problems):
    """The project's policy ready for this corpus's notes, or None with the reason in `problems`."""
    from webapp.deid.policy import NoteDeidentifier, PolicyError

    try:
        return _Deidentifying(NoteDeidentifier(corpus.project, corpus.language))
    except PolicyError as exc:
        problems.add(path.name, None, f"cannot de-identify: {exc}")
        return None


class _Deidentifying:
    """Notes replaced on the way in (import_notes(deidentify=True)): the records of a reading,
    each with its de-identified text and metadata; with `tally`, counted (per type, never a value)
    and their pairs gathered for the encrypted mapping when the policy keeps one."""

    def __init__(self, deid):
        from webapp.deid.policy import Tally

        self.deid = deid
        self.tally = Tally()

    def records(self, records: Iterable[NoteRecord], tally: bool = False) -> Iterator[NoteRecord]:
        for rec in records:
            done = self.deid.note(rec.text, rec.metadata, rec.external_id)
            if tally:
                self.tally.add(done, self.deid.keeps_mapping)
            yield NoteRecord(rec.source, rec.line, rec.external_id, done.text, done.metadata)

    def keep_pairs(self, project_id: int) -> None:
        if self.deid.keeps_mapping:
            self.tally.keep_pairs(project_id)


class _DeidentifiedWriter:
    """A _NotePlan whose batches also merge their pairs into the mapping, in the write transaction."""

    def __init__(self, writer, deid: _Deidentifying):
        self.writer, self.deid = writer, deid

    @property
    def pending(self):
        return self.writer.pending

    def write(self, records, report):
        self.writer.write(records, report)
        self.deid.keep_pairs(self.writer.corpus.project_id)


def _corpus_name_ok(name: str, file_name: str, problems: Problems) -> bool:
    """Checked before it is looked up: the database driver cannot send an unpaired surrogate."""
    hidden = hidden_character(name)
    if hidden:
        problems.add(file_name, None, gettext_noop("the corpus name contains %(what)s"), what=hidden)
    return not hidden


def _formats_named() -> Message:
    """The formats notes are read in, for a message."""
    return message(
        gettext_noop(
            "notes are read in these formats: %(formats)s; JSONL and CSV files may be compressed with gzip, bz2 "
            "or xz, the files of %(folders)s may come in a folder or a zip; name the format (--format, the "
            "Import page's Format) when the name of the file does not tell it"
        ),
        formats=", ".join(f"{f.name} ({f.label})" for f in readers()),
        folders=" or ".join(f.label for f in folder_formats()),
    )


def _kind_of(path: Path) -> str:
    try:
        return sniff(path)
    except OSError:
        return ""


class _NotePlan:
    """Classifies notes against the corpus (created / unchanged / updated) and writes them.
    `pending`: the records of the statement being written, to name the one the database refuses."""

    def __init__(self, corpus, update, problems, corpus_is_new=False):
        self.corpus, self.update, self.problems = corpus, update, problems
        self.corpus_is_new = corpus_is_new
        self.created = self.unchanged = self.updated = 0
        self.pending = []

    def counts(self):
        return self.created, self.unchanged, self.updated

    def check(self, records):
        existing = self._existing(records)
        changed = []
        for rec in records:
            digest = text_hash(rec.text)
            old = existing.get(rec.external_id)
            if old is None:
                self.created += 1
            elif old["content_hash"] == digest and (not self.update or old["metadata"] == rec.metadata):
                self.unchanged += 1
            elif not self.update:
                self.problems.add(
                    rec.source,
                    rec.line,
                    gettext_noop(
                        "note %(id)s already exists with different text (content hash differs); "
                        "use --update to replace it"
                    ),
                    id=repr(rec.external_id),
                )
            else:
                self.updated += 1
                if old["content_hash"] != digest:
                    changed.append(rec)
        if changed:
            annotated = dict(
                Note.objects.filter(pk__in=[existing[r.external_id]["pk"] for r in changed])
                .annotate(n=Count("annotations"))
                .filter(n__gt=0)
                .values_list("external_id", "n")
            )
            for rec in changed:
                if rec.external_id in annotated:
                    self.problems.add(
                        rec.source,
                        rec.line,
                        gettext_noop(
                            "note %(id)s has %(count)s annotation(s), so its text cannot change "
                            "(their spans point into it)"
                        ),
                        id=repr(rec.external_id),
                        count=annotated[rec.external_id],
                    )

    def write(self, records, report):
        existing = self._existing(records)
        new, changed = [], []
        for rec in records:
            digest = text_hash(rec.text)
            old = existing.get(rec.external_id)
            if old is None:
                new.append((rec, digest))
            elif old["content_hash"] == digest and (not self.update or old["metadata"] == rec.metadata):
                report.unchanged += 1
            elif self.update:
                changed.append((rec, Note(pk=old["pk"], text=rec.text, content_hash=digest, metadata=rec.metadata)))
            else:
                self.problems.add(
                    rec.source, rec.line, gettext_noop("note %(id)s changed since validation"), id=repr(rec.external_id)
                )
        if new:
            self.pending = [rec for rec, _ in new]
            _insert_notes(self.corpus, new)
            report.created += len(new)
        if changed:
            self.pending = [rec for rec, _ in changed]
            Note.objects.bulk_update([note for _, note in changed], ["text", "content_hash", "metadata"])
            report.updated += len(changed)
        self.pending = []

    def _existing(self, records) -> dict[str, dict]:
        if self.corpus.pk is None or self.corpus_is_new or not records:
            return {}
        fields = ["pk", "external_id", "content_hash"] + (["metadata"] if self.update else [])
        rows = Note.objects.filter(corpus=self.corpus, external_id__in=[r.external_id for r in records]).values(*fields)
        return {row["external_id"]: row for row in rows}


def _insert_notes(corpus, items):
    now = timezone.now()
    if connection.vendor == "postgresql":
        rows = (
            (corpus.pk, rec.external_id, rec.text, digest, json.dumps(rec.metadata, ensure_ascii=False), now)
            for rec, digest in items
        )
        copy_rows(Note, ["corpus_id", "external_id", "text", "content_hash", "metadata", "created"], rows)
    else:
        Note.objects.bulk_create(
            [
                Note(
                    corpus=corpus,
                    external_id=rec.external_id,
                    text=rec.text,
                    content_hash=digest,
                    metadata=rec.metadata,
                    created=now,
                )
                for rec, digest in items
            ],
            batch_size=500,
        )


# --- annotations ----------------------------------------------------------------------------


class _AnnotationPlan:
    def __init__(self, corpus, annotator, update, problems):
        self.corpus, self.annotator, self.update, self.problems = corpus, annotator, update, problems
        self.tasks = _TaskResolver(corpus.project_id)
        self.pairs: dict[tuple[str, int, str], int] = {}  # (note id, task pk, annotator) -> first line
        self.created = self.unchanged = self.updated = 0
        self.pending = []  # as _NotePlan's

    def counts(self):
        return self.created, self.unchanged, self.updated

    def forget_pairs(self):
        self.pairs = {}

    def annotator_of(self, rec) -> str:
        """The import's annotator when one was given, else the one the record names."""
        return self.annotator or rec.annotator

    def check(self, records):
        notes = self._notes(records)
        existing = self._existing(notes.values(), records)
        for rec in records:
            task = self.tasks.resolve(rec, self.problems)
            note = notes.get(rec.note_id)
            if note is None:
                self.problems.add(
                    rec.source,
                    rec.line,
                    gettext_noop("note_id %(id)s is not in corpus %(corpus)s"),
                    id=repr(rec.note_id),
                    corpus=repr(self.corpus.name),
                )
            if task is None:
                continue
            for reason in label_messages(rec.label, task.options):
                self.problems.add(
                    rec.source, rec.line, gettext_noop("task %(task)s: %(reason)s"), task=repr(task.slug), reason=reason
                )
            if note is None:
                continue
            for reason in span_messages(rec.evidence, note["length"]):
                self.problems.add(
                    rec.source, rec.line, gettext_noop("note %(id)s: %(reason)s"), id=repr(rec.note_id), reason=reason
                )
            annotator = self.annotator_of(rec)
            first = self.pairs.setdefault((rec.note_id, task.pk, annotator), rec.line)
            if first != rec.line:
                self.problems.add(
                    rec.source,
                    rec.line,
                    gettext_noop("duplicate annotation of note %(id)s for task %(task)s (first on line %(first)s)"),
                    id=repr(rec.note_id),
                    task=repr(task.slug),
                    first=first,
                )
                continue
            old = existing.get((note["pk"], task.pk, annotator))
            if old is None:
                self.created += 1
            elif (old.label, old.evidence) == (rec.label, rec.evidence):
                self.unchanged += 1
            elif self.update:
                self.updated += 1
            else:
                self.problems.add(
                    rec.source,
                    rec.line,
                    gettext_noop(
                        "note %(id)s already has a different %(task)s annotation by %(annotator)s; "
                        "use --update to replace it"
                    ),
                    id=repr(rec.note_id),
                    task=repr(task.slug),
                    annotator=repr(annotator),
                )

    def write(self, records, report):
        notes = self._notes(records)
        existing = self._existing(notes.values(), records)
        new, changed = [], []
        for rec in records:
            task, note = self.tasks.resolve(rec, self.problems), notes.get(rec.note_id)
            if task is None or note is None:
                self.problems.add(rec.source, rec.line, gettext_noop("the note or task disappeared since validation"))
                continue
            annotator = self.annotator_of(rec)
            old = existing.get((note["pk"], task.pk, annotator))
            if old is None:
                new.append(
                    (
                        rec,
                        Annotation(
                            note_id=note["pk"],
                            task=task,
                            label=rec.label,
                            evidence=rec.evidence,
                            annotator_name=annotator,
                        ),
                    )
                )
            elif (old.label, old.evidence) == (rec.label, rec.evidence):
                report.unchanged += 1
            else:
                old.label, old.evidence = rec.label, rec.evidence
                changed.append((rec, old))
        if new:
            self.pending = [rec for rec, _ in new]
            _insert_annotations([annotation for _, annotation in new])
            report.created += len(new)
        if changed:
            self.pending = [rec for rec, _ in changed]
            Annotation.objects.bulk_update([annotation for _, annotation in changed], ["label", "evidence"])
            report.updated += len(changed)
        self.pending = []

    def _notes(self, records) -> dict[str, dict]:
        ids = {r.note_id for r in records}
        rows = (
            Note.objects.filter(corpus=self.corpus, external_id__in=ids)
            .annotate(length=Length("text"))
            .values("pk", "external_id", "length")
        )
        return {row["external_id"]: row for row in rows}

    def _existing(self, notes, records) -> dict[tuple[int, int, str], Annotation]:
        """The annotations of these notes by the records' annotators, by (note, task, annotator)."""
        pks = [n["pk"] for n in notes]
        if not pks:
            return {}
        annotators = {self.annotator_of(rec) for rec in records}
        rows = Annotation.objects.filter(note_id__in=pks, annotator_name__in=annotators).only(
            "pk", "note_id", "task_id", "label", "evidence", "annotator_name"
        )
        return {(a.note_id, a.task_id, a.annotator_name): a for a in rows}


class _TaskResolver:
    """Finds a task by slug, then description, then alias (aliases only when unambiguous), among
    the catalog and the tasks of the corpus's project."""

    def __init__(self, project_id: int):
        tasks = list(Task.objects.filter(Q(project__isnull=True) | Q(project_id=project_id)))
        self.by_name = {t.description: t for t in tasks}
        aliases: dict[str, list[Task]] = {}
        for t in tasks:
            for alias in t.aliases:
                aliases.setdefault(alias, []).append(t)
        self.by_name.update({a: ts[0] for a, ts in aliases.items() if len(ts) == 1 and a not in self.by_name})
        self.by_name.update({t.slug: t for t in tasks})

    def resolve(self, rec, problems) -> Task | None:
        task = self.by_name.get(rec.task)
        if task is None:
            close = get_close_matches(rec.task, list(self.by_name), n=3)
            if close:
                template = gettext_noop(
                    "unknown task %(task)s (give a task slug or description; did you mean %(close)s?)"
                )
            else:
                template = gettext_noop("unknown task %(task)s (give a task slug or description)")
            names = ", ".join(repr(c) for c in close)
            problems.add(rec.source, rec.line, template, task=repr(rec.task), close=names)
        return task


def _insert_annotations(annotations):
    now = timezone.now()
    if connection.vendor == "postgresql":
        rows = (
            (a.note_id, a.task_id, a.label, json.dumps(a.evidence), None, a.annotator_name, now) for a in annotations
        )
        copy_rows(
            Annotation, ["note_id", "task_id", "label", "evidence", "annotator_id", "annotator_name", "created"], rows
        )
    else:
        for a in annotations:
            a.created = now
        Annotation.objects.bulk_create(annotations, batch_size=500)


# --- shared ---------------------------------------------------------------------------------


def _write_pass(
    writer,
    records: Iterable,
    reread: Problems,
    plan,
    report: ImportReport,
    problems: Problems,
    name: str,
    batch_size: int,
    progress,
) -> None:
    """Write the records (the file read a second time) in batches, inside the caller's
    transaction; _Abort if they no longer match what the validation pass planned: the file
    changed in between, and nothing is imported."""
    done = 0
    for batch in _batched(records, batch_size):
        writer.write(batch, report)
        done += len(batch)
        _report_progress(progress, "write", done)
    if reread or problems or (report.created, report.unchanged, report.updated) != plan.counts():
        problems.add(name, None, gettext_noop("the file changed while it was imported; nothing was imported"))
        raise _Abort


def _batched(items: Iterable, size: int) -> Iterator[list]:
    """Lists of at most `size` records, fewer when their note texts reach BATCH_CHARS."""
    batch, chars = [], 0
    for item in items:
        batch.append(item)
        chars += len(getattr(item, "text", ""))
        if len(batch) >= size or chars >= BATCH_CHARS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _report_progress(progress, phase: str, done: int) -> None:
    if progress is not None:
        progress(phase, done)


def _failed(problems: Problems) -> ImportReport:
    return ImportReport(
        problems=list(problems.kept),
        problem_count=problems.total,
        warnings=list(problems.warnings),
        warning_count=problems.warning_total,
    )


def _succeeded(problems: Problems) -> ImportReport:
    return ImportReport(warnings=list(problems.warnings), warning_count=problems.warning_total)


def _duplicate_id(external_id: str, first: int | str) -> Message:
    """`first`: the line of the file, or the file (or record) of a folder, where the id was first read."""
    # Two forms of one accented id look identical: say why they count as one (validators.nfc).
    if isinstance(first, int):
        if external_id.isascii():
            template = gettext_noop("duplicate id %(id)s (first on line %(first)s)")
        else:
            template = gettext_noop(
                "duplicate id %(id)s (first on line %(first)s; ids are compared in Unicode NFC form)"
            )
    elif external_id.isascii():
        template = gettext_noop("duplicate id %(id)s (first in %(first)s)")
    else:
        template = gettext_noop("duplicate id %(id)s (first in %(first)s; ids are compared in Unicode NFC form)")
    return message(template, id=repr(external_id), first=first)


def _caused_by_a_record(exc: DatabaseError) -> bool:
    """A record's data or a rule refused it, not a lost connection (that one is retried)."""
    sqlstate = getattr(exc.__cause__, "sqlstate", None) or ""
    return isinstance(exc, DataError | IntegrityError) or sqlstate[:2] in RECORD_SQLSTATES


def _refused(exc: DatabaseError, pending: list, name: str, corpus: Corpus, problems: Problems) -> None:
    """Report which record the database refused, by its line, with the error's type only: its
    message, context and detail quote the row."""
    kind = type(exc).__name__
    log.warning("import into corpus %s: the database refused a record (%s); rolled back", corpus.pk, kind)
    row = _copy_row(exc)
    if row is not None and 0 < row <= len(pending):
        pending = [pending[row - 1]]
    if not pending:
        problems.add(
            name, None, gettext_noop("the database refused the import (%(kind)s); nothing was imported"), kind=kind
        )
    elif len(pending) == 1:
        problems.add(
            pending[0].source,
            pending[0].line,
            gettext_noop("the database refused this record (%(kind)s); nothing was imported"),
            kind=kind,
        )
    else:
        first, last = pending[0], pending[-1]
        where = (
            f"lines {first.line} to {last.line}" if first.source == last.source else f"{first.source} to {last.source}"
        )
        problems.add(
            first.source,
            first.line,
            f"the database refused one of the {len(pending):,} records of {where} ({kind}); nothing was imported",
        )


def _copy_row(exc: DatabaseError) -> int | None:
    """The row (from 1) of a COPY that failed, from PostgreSQL's error context ("COPY t, line 3")."""
    diag = getattr(exc.__cause__, "diag", None)
    match = COPY_ROW.search(getattr(diag, "context", None) or "")
    return int(match.group(1)) if match else None
