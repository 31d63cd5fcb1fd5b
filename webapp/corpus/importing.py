"""Import notes and gold annotations into a corpus: the one place for import logic.

Both imports read the file twice and keep no note text between records:
1. validate the whole file (format, fields, duplicates, the corpus, tasks, labels, spans),
   keeping only ids, line numbers and hashes; if anything is wrong, write nothing and
   return the problems (each with its file, line and reason, never note text);
2. write in one transaction, in batches (COPY on PostgreSQL, bulk_create elsewhere), and
   record an audit entry.

Re-importing a file changes nothing: a note whose id exists with the same text (content hash)
is counted `unchanged`, likewise an annotation with the same label and evidence. A note whose
id exists with different text, or an annotation with a different label or evidence, is a
problem unless `update=True`, which replaces text/hash/metadata (or label/evidence). A note
that already has annotations never changes text: its spans would point into other text.
"""
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count
from django.db.models.functions import Length
from django.utils import timezone

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Corpus, Note, Task, language_code, text_hash
from webapp.corpus.sources import FORMATS, Problem, Problems, detect_format, read_annotations, read_notes
from webapp.corpus.validators import label_problems, span_problems

BATCH_SIZE = 2000


@dataclass
class ImportReport:
    created: int = 0
    unchanged: int = 0
    updated: int = 0
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0

    @property
    def ok(self) -> bool:
        return self.problem_count == 0

    def problem_lines(self) -> list[str]:
        lines = [str(p) for p in self.problems]
        if self.problem_count > len(self.problems):
            more = self.problem_count - len(self.problems)
            lines.append(f"... and {more} more problems ({self.problem_count} in all)")
        return lines


class _Abort(Exception):
    """Raised inside the write transaction to roll it back."""


def import_notes(
    path, corpus_name: str, *, language: str = "", create: bool = False, update: bool = False,
    fmt: str = "", actor=None, batch_size: int = BATCH_SIZE, progress=None,
) -> ImportReport:
    """Import a JSONL file, a CSV file or a brat folder of notes into the corpus `corpus_name`.

    `progress(phase, records_done)`, if given, is called after each batch with phase
    "validate" or "write".
    """
    path = Path(path)
    problems = Problems()
    fmt = fmt or detect_format(path) or ""
    corpus = _corpus_for_notes(path, corpus_name, language, create, fmt, problems)
    if problems:
        return _failed(problems)

    plan = _NotePlan(corpus, update, problems)
    seen: dict[str, int] = {}  # id -> first line; ids only, never text
    for batch in _batched(read_notes(path, fmt, problems), batch_size):
        fresh = []
        for rec in batch:
            first = seen.setdefault(rec.external_id, rec.line)
            if first != rec.line:
                problems.add(rec.source, rec.line, f"duplicate id {rec.external_id!r} (first on line {first})")
            else:
                fresh.append(rec)
        plan.check(fresh)
        _report_progress(progress, "validate", len(seen))
    if not seen and not problems:
        problems.add(path.name, None, "the file holds no notes")
    del seen
    if problems:
        return _failed(problems)

    report = ImportReport()
    try:
        with transaction.atomic():
            corpus_is_new = corpus.pk is None
            if corpus_is_new:
                corpus.save()
            writer = _NotePlan(corpus, update, problems, corpus_is_new=corpus_is_new)
            done = 0
            for batch in _batched(read_notes(path, fmt, problems), batch_size):
                writer.write(batch, report)
                done += len(batch)
                _report_progress(progress, "write", done)
            if problems or (report.created, report.unchanged, report.updated) != plan.counts():
                problems.add(path.name, None, "the file changed while it was imported; nothing was imported")
                raise _Abort
            record(actor, AuditEvent.Action.IMPORT_NOTES, corpus, file=path.name, format=fmt,
                   created=report.created, unchanged=report.unchanged, updated=report.updated)
    except _Abort:
        return _failed(problems)
    except IntegrityError as exc:
        # Another import wrote the same notes between our checks and our writes.
        problems.add(path.name, None, f"the database refused the notes ({_first_line(exc)}); nothing was imported")
        return _failed(problems)
    return report


def import_annotations(
    path, corpus_name: str, *, annotator: str = "", update: bool = False, actor=None, batch_size: int = BATCH_SIZE,
    progress=None,
) -> ImportReport:
    """Import gold labels: JSONL lines {"note_id", "task", "label", "evidence": [[start, end], ...]}.

    `task` is a task's slug, its description or one of its aliases. Imported annotations
    belong to the annotator name given, by default 'import:<file name>'. `progress(phase,
    records_done)` as for import_notes.
    """
    path = Path(path)
    problems = Problems()
    annotator = annotator or f"import:{path.name}"
    corpus = Corpus.objects.filter(name=corpus_name).first()
    if not path.is_file():
        problems.add(path.name, None, "no such file")
    if corpus is None:
        problems.add(path.name, None, f"corpus {corpus_name!r} does not exist")
    if len(annotator) > 150:
        problems.add(path.name, None, "the annotator name is longer than 150 characters")
    if problems:
        return _failed(problems)

    plan = _AnnotationPlan(corpus, annotator, update, problems)
    checked = 0
    for batch in _batched(read_annotations(path, problems), batch_size):
        plan.check(batch)
        checked += len(batch)
        _report_progress(progress, "validate", checked)
    if plan.counts() == (0, 0, 0) and not problems:
        problems.add(path.name, None, "the file holds no annotations")
    plan.forget_pairs()
    if problems:
        return _failed(problems)

    report = ImportReport()
    try:
        with transaction.atomic():
            writer = _AnnotationPlan(corpus, annotator, update, problems)
            done = 0
            for batch in _batched(read_annotations(path, problems), batch_size):
                writer.write(batch, report)
                done += len(batch)
                _report_progress(progress, "write", done)
            if problems or (report.created, report.unchanged, report.updated) != plan.counts():
                problems.add(path.name, None, "the file changed while it was imported; nothing was imported")
                raise _Abort
            record(actor, AuditEvent.Action.IMPORT_ANNOTATIONS, corpus, file=path.name, annotator=annotator,
                   created=report.created, unchanged=report.unchanged, updated=report.updated)
    except _Abort:
        return _failed(problems)
    except IntegrityError as exc:
        problems.add(path.name, None, f"the database refused the annotations ({_first_line(exc)}); nothing was imported")
        return _failed(problems)
    return report


# --- notes ----------------------------------------------------------------------------------


def _corpus_for_notes(path, name, language, create, fmt, problems) -> Corpus | None:
    if not path.exists():
        problems.add(path.name, None, "no such file or folder")
    elif fmt not in FORMATS:
        problems.add(path.name, None, "unknown format; name the file .jsonl or .csv, or give a folder (brat)")
    elif (fmt == "brat") != path.is_dir():
        problems.add(path.name, None, "the brat format needs a folder; JSONL and CSV need a file")
    corpus = Corpus.objects.filter(name=name).first()
    if corpus is not None:
        if language and language != corpus.language:
            problems.add(path.name, None, f"corpus {name!r} is in language {corpus.language!r}, not {language!r}")
        return corpus
    if not create:
        problems.add(path.name, None, f"corpus {name!r} does not exist (use --create to create it)")
        return None
    if not name.strip() or len(name) > 200:
        problems.add(path.name, None, "the corpus name must be 1 to 200 characters")
    try:
        language_code(language)
    except ValidationError:
        problems.add(path.name, None, f"creating a corpus needs --language, an ISO 639 code such as 'it' (got {language!r})")
    return Corpus(name=name, language=language, source=path.name)


class _NotePlan:
    """Classifies notes against the corpus (created / unchanged / updated) and writes them."""

    def __init__(self, corpus, update, problems, corpus_is_new=False):
        self.corpus, self.update, self.problems = corpus, update, problems
        self.corpus_is_new = corpus_is_new
        self.created = self.unchanged = self.updated = 0

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
                self.problems.add(rec.source, rec.line, f"note {rec.external_id!r} already exists with different "
                                  "text (content hash differs); use --update to replace it")
            else:
                self.updated += 1
                if old["content_hash"] != digest:
                    changed.append(rec)
        if changed:
            annotated = dict(
                Note.objects.filter(pk__in=[existing[r.external_id]["pk"] for r in changed])
                .annotate(n=Count("annotations")).filter(n__gt=0).values_list("external_id", "n")
            )
            for rec in changed:
                if rec.external_id in annotated:
                    self.problems.add(rec.source, rec.line, f"note {rec.external_id!r} has {annotated[rec.external_id]} "
                                      "annotation(s), so its text cannot change (their spans point into it)")

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
                changed.append(Note(pk=old["pk"], text=rec.text, content_hash=digest, metadata=rec.metadata))
            else:
                self.problems.add(rec.source, rec.line, f"note {rec.external_id!r} changed since validation")
        if new:
            _insert_notes(self.corpus, new)
            report.created += len(new)
        if changed:
            Note.objects.bulk_update(changed, ["text", "content_hash", "metadata"])
            report.updated += len(changed)

    def _existing(self, records) -> dict[str, dict]:
        if self.corpus.pk is None or self.corpus_is_new or not records:
            return {}
        fields = ["pk", "external_id", "content_hash"] + (["metadata"] if self.update else [])
        rows = Note.objects.filter(corpus=self.corpus, external_id__in=[r.external_id for r in records]).values(*fields)
        return {row["external_id"]: row for row in rows}


def _insert_notes(corpus, items):
    now = timezone.now()
    if connection.vendor == "postgresql":
        rows = ((corpus.pk, rec.external_id, rec.text, digest, json.dumps(rec.metadata, ensure_ascii=False), now)
                for rec, digest in items)
        _copy(Note, ["corpus_id", "external_id", "text", "content_hash", "metadata", "created"], rows)
    else:
        Note.objects.bulk_create(
            [Note(corpus=corpus, external_id=rec.external_id, text=rec.text, content_hash=digest,
                  metadata=rec.metadata, created=now) for rec, digest in items],
            batch_size=500,
        )


# --- annotations ----------------------------------------------------------------------------


class _AnnotationPlan:
    def __init__(self, corpus, annotator, update, problems):
        self.corpus, self.annotator, self.update, self.problems = corpus, annotator, update, problems
        self.tasks = _TaskResolver()
        self.pairs: dict[tuple[str, int], int] = {}  # (note id, task pk) -> first line
        self.created = self.unchanged = self.updated = 0

    def counts(self):
        return self.created, self.unchanged, self.updated

    def forget_pairs(self):
        self.pairs = {}

    def check(self, records):
        notes = self._notes(records)
        existing = self._existing(notes.values())
        for rec in records:
            task = self.tasks.resolve(rec, self.problems)
            note = notes.get(rec.note_id)
            if note is None:
                self.problems.add(rec.source, rec.line, f"note_id {rec.note_id!r} is not in corpus {self.corpus.name!r}")
            if task is None:
                continue
            for message in label_problems(rec.label, task.options):
                self.problems.add(rec.source, rec.line, f"task {task.slug!r}: {message}")
            if note is None:
                continue
            for message in span_problems(rec.evidence, note["length"]):
                self.problems.add(rec.source, rec.line, f"note {rec.note_id!r}: {message}")
            first = self.pairs.setdefault((rec.note_id, task.pk), rec.line)
            if first != rec.line:
                self.problems.add(rec.source, rec.line, f"duplicate annotation of note {rec.note_id!r} for task "
                                  f"{task.slug!r} (first on line {first})")
                continue
            old = existing.get((note["pk"], task.pk))
            if old is None:
                self.created += 1
            elif (old.label, old.evidence) == (rec.label, rec.evidence):
                self.unchanged += 1
            elif self.update:
                self.updated += 1
            else:
                self.problems.add(rec.source, rec.line, f"note {rec.note_id!r} already has a different "
                                  f"{task.slug!r} annotation by {self.annotator!r}; use --update to replace it")

    def write(self, records, report):
        notes = self._notes(records)
        existing = self._existing(notes.values())
        new, changed = [], []
        for rec in records:
            task, note = self.tasks.resolve(rec, self.problems), notes.get(rec.note_id)
            if task is None or note is None:
                self.problems.add(rec.source, rec.line, "the note or task disappeared since validation")
                continue
            old = existing.get((note["pk"], task.pk))
            if old is None:
                new.append(Annotation(note_id=note["pk"], task=task, label=rec.label, evidence=rec.evidence,
                                      annotator_name=self.annotator))
            elif (old.label, old.evidence) == (rec.label, rec.evidence):
                report.unchanged += 1
            else:
                old.label, old.evidence = rec.label, rec.evidence
                changed.append(old)
        if new:
            _insert_annotations(new)
            report.created += len(new)
        if changed:
            Annotation.objects.bulk_update(changed, ["label", "evidence"])
            report.updated += len(changed)

    def _notes(self, records) -> dict[str, dict]:
        ids = {r.note_id for r in records}
        rows = (Note.objects.filter(corpus=self.corpus, external_id__in=ids)
                .annotate(length=Length("text")).values("pk", "external_id", "length"))
        return {row["external_id"]: row for row in rows}

    def _existing(self, notes) -> dict[tuple[int, int], Annotation]:
        pks = [n["pk"] for n in notes]
        if not pks:
            return {}
        rows = Annotation.objects.filter(note_id__in=pks, annotator_name=self.annotator).only(
            "pk", "note_id", "task_id", "label", "evidence")
        return {(a.note_id, a.task_id): a for a in rows}


class _TaskResolver:
    """Finds a task by slug, then description, then alias (aliases only when unambiguous)."""

    def __init__(self):
        tasks = list(Task.objects.all())
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
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            problems.add(rec.source, rec.line, f"unknown task {rec.task!r} (give a task slug or description{hint})")
        return task


def _insert_annotations(annotations):
    now = timezone.now()
    if connection.vendor == "postgresql":
        rows = ((a.note_id, a.task_id, a.label, json.dumps(a.evidence), None, a.annotator_name, now)
                for a in annotations)
        _copy(Annotation, ["note_id", "task_id", "label", "evidence", "annotator_id", "annotator_name", "created"], rows)
    else:
        for a in annotations:
            a.created = now
        Annotation.objects.bulk_create(annotations, batch_size=500)


# --- shared ---------------------------------------------------------------------------------


def _copy(model, columns: list[str], rows: Iterable[tuple]) -> None:
    """Stream rows into the model's table with PostgreSQL COPY (psycopg 3). Triggers and constraints apply."""
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def _batched(items: Iterable, size: int) -> Iterator[list]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _report_progress(progress, phase: str, done: int) -> None:
    if progress is not None:
        progress(phase, done)


def _failed(problems: Problems) -> ImportReport:
    return ImportReport(problems=list(problems.kept), problem_count=problems.total)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
