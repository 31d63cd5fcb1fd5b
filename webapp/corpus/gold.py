"""Import gold evidence from an annotation tool's files: read them in any format of the table
(webapp.lib.formats), turn each document's gold spans into annotations through a mapping
(webapp.lib.formats.mapping), and hand those to the annotation import (webapp.corpus.importing),
which validates everything first and writes in one transaction, or nothing (a dry run never
writes). Re-importing the same files changes nothing.

Checked besides what every annotation import checks (note in the corpus, task, label value,
spans inside the note, duplicates): each document's text must be its note's text (by content
hash: offsets into other text would point at the wrong words); a document id appears once; every
gold label is mapped (or skipped on purpose); in one document, one task gets one label value;
"evidence only" needs the note to have exactly one label value for the task already.

Into a de-identified corpus (webapp.deid), a document may hold the ORIGINAL text of its note (the
tool was fed the notes before they were de-identified): its text is then de-identified the same
way on the way in (webapp.deid.policy: the same patient, read from the note's stored metadata,
gives the same surrogates; the known identifiers come from the document's own metadata, or from
the project's kept mapping) and its spans carried into the new text (Replacement.map_span). If
the result still differs from the note, the document is refused, the reason without its text.
The original text is only held while it is read; nothing of it is stored.

All spans of one document that map to one task, by one annotator, become that annotator's
annotation's evidence, in order (ranges of a discontinuous span each a range of evidence).

The annotator: the one the user names (a person or a source, e.g. "e3c"), else the one each span
carries in the file (our exports write each gold span's annotator: an export imports back as
"unchanged", never as a second annotator's copy). A gold span with neither stops the import: an
annotator made up from the file name would turn each re-import under another name into a copy.
Predictions and review decisions in a file are counted in the preview and skipped: only gold
spans are evidence.

`preview` (the same call with dry_run=True) says, for each label of the files, how many spans and
documents carry it and what it maps to, then what would be created, unchanged or updated.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from webapp.corpus.importing import ImportReport, _TaskResolver, import_annotations, import_limits
from webapp.corpus.models import Annotation, Note, text_hash
from webapp.lib.formats import (
    MISSING_FEATURE,
    WITHOUT_FEATURE,
    ReadOptions,
    UnsupportedFormat,
    get_format,
    go_on,
    position,
)
from webapp.lib.formats.mapping import Mapping, MappingError, parse_mapping
from webapp.lib.formats.unpack import readable, shape_problem
from webapp.lib.import_limits import over_limit_message
from webapp.lib.import_sources import AnnotationRecord
from webapp.lib.input_files import NO_SUCH_FILE_OR_FOLDER
from webapp.lib.messages import Message, gettext_noop, message
from webapp.lib.problems import Problem, Problems
from webapp.lib.validators import hidden_character, nfc, overlapping_spans, printable

BATCH = 500  # documents whose notes are looked up in one query
PREVIEW_ONLY = "Preview only"
PREVIEW_NOTE = gettext_noop("nothing was written; 'Import now' on this page imports the same file (kept 24 hours)")


@dataclass
class GoldReport:
    report: ImportReport
    preview: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.report.ok


def import_gold(
    path,
    corpus_name: str,
    *,
    fmt: str,
    mapping: list[str] | Mapping,
    layer: str = "",
    feature: str = "",
    missing_feature: str = "refuse",
    feature_default: str = "",
    annotator: str = "",
    update: bool = False,
    dry_run: bool = False,
    actor=None,
    progress=None,
    on_written=None,
    unpack_dir=None,
    project=None,
    checkpoint=go_on,
) -> GoldReport:
    """Import (or with dry_run, preview) the gold spans of `path` (a file, a folder, or a zip of
    brat or XMI files) in format `fmt` into corpus `corpus_name`; module docstring.
    `missing_feature` (XMI, with `feature`): what becomes of an annotation without that feature:
    "refuse" (the file), "skip" (the span) or "default" (labelled `feature_default`).
    `checkpoint()`, if given, is called after each document read; it raises to stop the import
    (a cancel, a job another worker took over), so one slow document is the most a stop waits."""
    path = Path(path)
    name = printable(path.name)
    problems = Problems()
    try:
        format_ = get_format(fmt)
        plan = mapping if isinstance(mapping, Mapping) else parse_mapping(mapping)
    except (UnsupportedFormat, MappingError) as exc:
        problems.add(name, None, getattr(exc, "said", None) or str(exc))
        return GoldReport(_failed(problems), dry_run=dry_run)
    if reason := _missing_feature_problem(missing_feature, feature_default, feature):
        problems.add(name, None, reason)
        return GoldReport(_failed(problems), dry_run=dry_run)
    if not format_.spans:
        problems.add(
            name,
            None,
            gettext_noop("%(format)s carries no spans: gold labels come from a format that has them"),
            format=format_.label,
        )
        return GoldReport(_failed(problems), dry_run=dry_run)
    if not path.exists():
        problems.add(name, None, NO_SUCH_FILE_OR_FOLDER)
        return GoldReport(_failed(problems), dry_run=dry_run)
    if reason := shape_problem(path, format_):
        problems.add(name, None, reason)
        return GoldReport(_failed(problems), dry_run=dry_run)
    limits = import_limits()
    with readable(path, format_, problems, limits, unpack_dir) as source:
        if source is None:
            return GoldReport(_failed(problems), dry_run=dry_run)
        options = ReadOptions(
            layer,
            feature,
            missing_feature=missing_feature,
            feature_default=nfc(feature_default.strip()),
            limits=limits,
            checkpoint=checkpoint,
        )
        reading = _Reading(format_, source, options, plan, name, nfc(annotator.strip()))
        report = import_annotations(
            path,
            corpus_name,
            annotator=reading.annotator,
            update=update,
            read=reading,
            dry_run=dry_run,
            actor=actor,
            progress=progress,
            on_written=on_written,
            audit={"format": format_.name, "mapping": plan.lines()[:50], "annotators": reading.annotator_names()},
            **({"project": project} if project else {}),  # corpora owned by projects: the corpus's project
        )
    preview = reading.preview_lines(report, dry_run)
    if dry_run and report.ok and on_written is not None:
        _end_preview(report, preview, name, on_written)
    return GoldReport(report, [str(line) for line in preview], dry_run=dry_run)


def _end_preview(report: ImportReport, preview: list[Message], name: str, on_written) -> None:
    """A background preview ends like an import that wrote nothing: its counts 0, its preview
    lines first among the warnings (the Import page's job shows them, in its reader's language)."""
    lines = [Problem(PREVIEW_ONLY, None, PREVIEW_NOTE), *(Problem.of(name, None, line) for line in preview)]
    shown = ImportReport(warnings=lines + report.warnings, warning_count=len(lines) + report.warning_count)
    with transaction.atomic():
        on_written(shown)


class _Reading:
    """The records of the files, read on each call (the import reads twice); counts for the
    preview are kept from the first reading."""

    def __init__(self, format_, source: Path, options: ReadOptions, mapping: Mapping, name: str, annotator=""):
        self.format, self.source, self.options, self.mapping, self.name = format_, source, options, mapping, name
        self.annotator = annotator  # named by the user; "" for each span's own
        self.annotator_spans: Counter = Counter()  # annotator -> gold spans mapped to a task
        self.unnamed_spans = 0  # gold spans mapped to a task with no annotator, none named
        self.calls = 0
        self.limits = import_limits()
        self.documents = 0
        self.label_spans: Counter = Counter()
        self.label_docs: Counter = Counter()
        self.label_target: dict[str, Counter] = defaultdict(Counter)  # label -> {what it maps to: spans}
        self.other_sources: Counter = Counter()
        self.without_feature = 0  # XMI spans without the chosen feature, skipped or given the default
        self.deidentified_docs = 0  # documents of a de-identified corpus that held the original text
        self._deid = None  # the project's de-identifier, made at the first such document

    def __call__(self, problems: Problems, corpus):
        self.calls += 1
        first = self.calls == 1
        tasks = _task_resolver(corpus)
        seen: dict[str, str] = {}
        unmapped: Counter = Counter()
        batch = []
        for item in self.format.read(self.source, self.options, problems):
            doc_id = nfc(item.id)
            here = self._where(item)
            first_at = seen.setdefault(doc_id, str(here[0]) + (f" line {here[1]}" if here[1] else ""))
            if first_at != str(here[0]) + (f" line {here[1]}" if here[1] else ""):
                problems.add(
                    *here,
                    gettext_noop("document %(id)s appears twice (first in %(first)s)"),
                    id=repr(doc_id),
                    first=first_at,
                )
                continue
            batch.append(item)
            if len(batch) >= BATCH:
                yield from self._records(batch, corpus, tasks, problems, unmapped, first)
                batch = []
        if batch:
            yield from self._records(batch, corpus, tasks, problems, unmapped, first)
        if self.unnamed_spans and first:
            problems.add(
                self.name,
                None,
                gettext_noop(
                    "%(count)s gold span(s) name no annotator: name the annotator of this import (a person or a "
                    "source, e.g. the corpus's annotation project): --annotator, or Annotator on the Import page"
                ),
                count=f"{self.unnamed_spans:,}",
            )
        if unmapped:
            shown = [
                message(gettext_noop("%(label)s (%(count)s span)"), label=repr(label), count=n)
                if n == 1
                else message(gettext_noop("%(label)s (%(count)s spans)"), label=repr(label), count=n)
                for label, n in unmapped.most_common(10)
            ]
            labels = _joined(shown)
            if len(unmapped) > 10:
                labels = message(gettext_noop("%(labels)s and %(more)s more"), labels=labels, more=len(unmapped) - 10)
            problems.add(
                self.name,
                None,
                gettext_noop(
                    "no mapping for the label(s) %(labels)s: map each as LABEL=TASK:VALUE, LABEL=TASK (evidence "
                    "only) or LABEL=- (skip), or skip every other label with *=-"
                ),
                labels=labels,
            )

    def _deidentified(self, docs, notes, corpus, problems, first) -> list:
        """The documents, each that holds its note's original text de-identified on the way in
        with its spans carried (module docstring); one that cannot be is left out, with a problem."""
        differing = [d for d in docs if (n := notes.get(nfc(d.id))) is not None and n[1] != text_hash(d.text)]
        if not differing:
            return docs
        from webapp.deid.policy import NoteDeidentifier, PolicyError

        stored = dict(
            Note.objects.filter(pk__in=[notes[nfc(d.id)][0] for d in differing]).values_list("pk", "metadata")
        )
        out, refused = [], set()
        for doc in differing:
            doc_id, (source, line) = nfc(doc.id), self._where(doc)
            note = notes[doc_id]
            try:
                self._deid = self._deid or NoteDeidentifier(corpus.project, corpus.language)
                new = self._deid_document(doc, stored.get(note[0]) or {}, corpus.project_id)
            except PolicyError as exc:
                problems.add(
                    source,
                    line,
                    gettext_noop("document %(id)s: its text is not its note's, and %(reason)s"),
                    id=repr(doc_id),
                    reason=str(exc),
                )
                refused.add(id(doc))
                continue
            if text_hash(new.text) != note[1]:
                problems.add(
                    source,
                    line,
                    gettext_noop(
                        "the text of document %(id)s differs from note %(id)s of this de-identified corpus, and "
                        "de-identified with the project's policy it still does (content hash), so its offsets "
                        "cannot be carried: give the note's metadata (its patient and known identifiers) with the "
                        "document, or export the notes from this corpus to annotate them"
                    ),
                    id=repr(doc_id),
                )
                refused.add(id(doc))
                continue
            if first:
                self.deidentified_docs += 1
            out.append((id(doc), new))
        replaced = dict(out)
        return [replaced.get(id(d), d) for d in docs if id(d) not in refused]

    def _deid_document(self, doc, metadata: dict, project_id: int):
        """The document de-identified as its note was: its patient from the note's stored metadata
        (the keyed hash), its known identifiers from the document's metadata or the kept mapping."""
        from dataclasses import replace

        from webapp.deid.policy import known_values, map_ranges, note_key, patient_key, stored_patient_key

        policy = self._deid.policy
        patient = patient_key(doc.metadata, policy) or stored_patient_key(metadata, policy) or note_key(nfc(doc.id))
        known = known_values(doc.metadata, policy) or self._known_from_mapping(metadata, patient, project_id)
        replacement = self._deid.text(doc.text, {}, patient=patient, known=known)
        spans = [
            replace(span, ranges=tuple(tuple(r) for r in map_ranges(replacement, span.ranges, merge=True)))
            for span in doc.spans
        ]
        return replace(doc, text=replacement.text, spans=spans)

    def _known_from_mapping(self, metadata: dict, patient: str, project_id: int) -> dict[str, str]:
        """The known identifiers' originals, from the encrypted mapping the project keeps: each known
        field's stored value is a surrogate, and the mapping says of which original (when one only)."""
        from webapp.deid import mapping as kept

        policy = self._deid.policy
        if not (policy.keep_mapping and patient and kept.key_set()):
            return {}
        originals: dict[str, set] = defaultdict(set)
        for original, surrogate in kept.pairs_of(project_id, patient):
            originals[surrogate].add(original)
        known = {}
        for name in policy.known_fields:
            found = originals.get(str(metadata.get(name, "")), set())
            if len(found) == 1:
                known[name] = next(iter(found))
        return known

    def _where(self, doc) -> tuple[str, int | None]:
        return position(doc, self.name)

    def _records(self, docs, corpus, tasks, problems, unmapped, first):
        notes = {}
        if corpus is not None:
            rows = Note.objects.filter(corpus=corpus, external_id__in=[nfc(d.id) for d in docs]).values_list(
                "external_id", "pk", "content_hash"
            )
            notes = {ext: (pk, digest) for ext, pk, digest in rows}
        if corpus is not None and corpus.deidentified:
            docs = self._deidentified(docs, notes, corpus, problems, first)
        wanted = []  # (doc, note pk, {task name: (label or None, evidence)})
        for doc in docs:
            doc_id, (source, line) = nfc(doc.id), self._where(doc)
            if first:
                self.documents += 1
                self.without_feature += doc.metadata.get(WITHOUT_FEATURE, 0)
            note = notes.get(doc_id)
            if note is None:
                problems.add(
                    source, line, gettext_noop("document %(id)s: the corpus has no note with this id"), id=repr(doc_id)
                )
                continue
            if note[1] != text_hash(doc.text):
                problems.add(
                    source,
                    line,
                    gettext_noop(
                        "the text of document %(id)s differs from note %(id)s of the corpus (content hash), so its "
                        "offsets would point at other words"
                    ),
                    id=repr(doc_id),
                )
                continue
            by_task: dict[str, list] = {}
            labels_here = set()
            for span in doc.spans:
                if span.source != "gold":
                    if first:
                        self.other_sources[span.source] += 1
                    continue
                target = self.mapping.target(span.label, span.attrs)
                if first:
                    self.label_spans[span.label] += 1
                    if span.label not in labels_here:
                        self.label_docs[span.label] += 1
                        labels_here.add(span.label)
                    self.label_target[span.label][
                        "skipped" if target is None else "no mapping" if target == "unmapped" else str(target)
                    ] += 1
                if target == "unmapped":
                    unmapped[span.label] += 1
                    continue
                if target is None:
                    continue
                annotator = self.annotator or nfc(span.reviewer.strip())
                if first:
                    if annotator:
                        self.annotator_spans[annotator] += 1
                    else:
                        self.unnamed_spans += 1
                if not annotator:
                    continue
                if len(annotator) > 150 or hidden_character(annotator):
                    problems.add(
                        source,
                        line,
                        gettext_noop(
                            "document %(id)s: the annotator name %(name)s is longer than 150 characters or holds a "
                            "hidden character"
                        ),
                        id=repr(doc_id),
                        name=repr(annotator[:60]),
                    )
                    continue
                entry = by_task.setdefault((target.task, annotator), [set(), []])
                entry[0].add(target.label)
                entry[1].extend([s, e] for s, e in span.ranges)
            if by_task:
                wanted.append((doc_id, source, line, note, by_task))
        existing = self._existing_labels(wanted, tasks)
        for doc_id, source, line, note, by_task in wanted:
            for (task_name, annotator), (labels, evidence) in by_task.items():
                given = sorted(label for label in labels if label is not None)
                if len(given) > 1:
                    problems.add(
                        source,
                        line,
                        gettext_noop("document %(id)s: task %(task)s gets the labels %(labels)s"),
                        id=repr(doc_id),
                        task=repr(task_name),
                        labels=", ".join(map(repr, given)),
                    )
                    continue
                label = given[0] if given else self._evidence_only_label(task_name, note, tasks, existing)
                if isinstance(label, tuple):
                    problems.add(
                        source,
                        line,
                        gettext_noop(
                            "document %(id)s: task %(task)s is mapped as evidence only, but the note has several "
                            "labels for it (%(labels)s); map it as TASK:VALUE"
                        )
                        if label
                        else gettext_noop(
                            "document %(id)s: task %(task)s is mapped as evidence only, but the note has no label "
                            "for it; map it as TASK:VALUE"
                        ),
                        id=repr(doc_id),
                        task=repr(task_name),
                        labels=", ".join(map(repr, label)),
                    )
                    continue
                evidence = _ordered(evidence)
                most = self.limits.evidence_spans
                if len(evidence) > most:
                    what = message(
                        gettext_noop("document %(id)s: the evidence of task %(task)s"),
                        id=repr(doc_id),
                        task=repr(task_name),
                    )
                    problems.add(
                        source,
                        line,
                        over_limit_message(
                            what, len(evidence), self.limits.evidence_spans, "IMPORT_MAX_EVIDENCE_SPANS", "spans"
                        ),
                    )
                    continue
                if first and (overlap := overlapping_spans(evidence)):
                    (a, b), (c, d) = overlap
                    problems.warn(
                        source,
                        line,
                        gettext_noop("document %(id)s, task %(task)s: spans %(first)s and %(second)s overlap"),
                        id=repr(doc_id),
                        task=repr(task_name),
                        first=f"[{a}, {b})",
                        second=f"[{c}, {d})",
                    )
                yield AnnotationRecord(source, line, doc_id, nfc(task_name), nfc(label), evidence, annotator)

    def _existing_labels(self, wanted, tasks) -> dict[tuple[int, int], set[str]]:
        needed = [
            (note[0], name)
            for _, _, _, note, by_task in wanted
            if note
            for (name, _), (labels, _) in by_task.items()
            if None in labels
        ]
        if not needed:
            return {}
        task_pks = {t.pk for _, name in needed if (t := tasks.by_name.get(name)) is not None}
        out: dict[tuple[int, int], set[str]] = defaultdict(set)
        rows = Annotation.objects.filter(note_id__in={n for n, _ in needed}, task_id__in=task_pks).values_list(
            "note_id", "task_id", "label"
        )
        for note_id, task_id, label in rows:
            out[(note_id, task_id)].add(label)
        return out

    def _evidence_only_label(self, task_name, note, tasks, existing) -> str | tuple:
        """The one label value the note has for the task; a tuple of them when not exactly one.
        An unknown task gives "" (the import names it)."""
        task = tasks.by_name.get(task_name)
        if task is None:
            return ""
        labels = existing.get((note[0], task.pk), set())
        return next(iter(labels)) if len(labels) == 1 else tuple(sorted(labels))

    def preview_lines(self, report: ImportReport, dry_run: bool) -> list[Message]:
        """What the import would do (did), each line a Message: str() the English the command prints."""
        out = [
            message(
                gettext_noop("%(count)s document(s) read in %(format)s"),
                count=f"{self.documents:,}",
                format=str(self.format.label),
            )
        ]
        if self.deidentified_docs:
            out.append(
                message(
                    gettext_noop(
                        "%(count)s document(s) held the original text of their note: de-identified on the way in, "
                        "their spans carried into the note's text"
                    ),
                    count=f"{self.deidentified_docs:,}",
                )
            )
        for label, n in sorted(self.label_spans.items()):
            targets = self.label_target[label]
            if len(targets) == 1:
                shown = _target_words(next(iter(targets)))
            else:
                shown = _joined(
                    [
                        message(gettext_noop("%(target)s (%(count)s)"), target=_target_words(t), count=f"{c:,}")
                        for t, c in sorted(targets.items())
                    ]
                )
            out.append(
                message(
                    gettext_noop("%(label)s: %(spans)s span(s) in %(documents)s document(s) -> %(targets)s"),
                    label=label,
                    spans=f"{n:,}",
                    documents=f"{self.label_docs[label]:,}",
                    targets=shown,
                )
            )
        if self.options.missing_feature != "refuse":
            treated = (
                Message(gettext_noop("skipped"))
                if self.options.missing_feature == "skip"
                else message(gettext_noop("labelled %(label)s"), label=repr(self.options.feature_default))
            )
            out.append(
                message(
                    gettext_noop("%(count)s span(s) without the feature %(feature)s: %(treated)s"),
                    count=f"{self.without_feature:,}",
                    feature=repr(self.options.feature),
                    treated=treated,
                )
            )
        if self.annotator_spans:
            out.append(self._annotator_line())
        for source, n in sorted(self.other_sources.items()):
            out.append(
                message(
                    gettext_noop("%(count)s %(source)s span(s) skipped (only gold spans are evidence)"),
                    count=f"{n:,}",
                    source=source,
                )
            )
        if report.ok:
            values = {"created": f"{report.created:,}", "unchanged": f"{report.unchanged:,}"}
            values["updated"] = f"{report.updated:,}"
            if dry_run:
                template = gettext_noop(
                    "annotations: %(created)s to create, %(unchanged)s unchanged, %(updated)s to update"
                )
            else:
                template = gettext_noop(
                    "annotations: %(created)s created, %(unchanged)s unchanged, %(updated)s updated"
                )
            out.append(message(template, **values))
        return out

    def _annotator_line(self) -> Message:
        if self.annotator:
            return message(gettext_noop("annotator: %(name)s (named for this import)"), name=self.annotator)
        shown = _joined(
            [
                message(gettext_noop("%(target)s (%(count)s)"), target=name, count=f"{n:,}")
                for name, n in self.annotator_spans.most_common(10)
            ]
        )
        if len(self.annotator_spans) > 10:
            shown = message(
                gettext_noop("%(labels)s and %(more)s more"), labels=shown, more=len(self.annotator_spans) - 10
            )
        return message(gettext_noop("annotator(s) as written in the file, by gold spans: %(names)s"), names=shown)

    def annotator_names(self) -> list[str]:
        return [self.annotator] if self.annotator else sorted(self.annotator_spans)[:50]


def _target_words(target: str):
    """A label's target in the preview: "task:value" as it is; "skipped" and "no mapping" as words."""
    return Message(target) if target in ("skipped", "no mapping") else target


_TARGET_WORDS = (gettext_noop("skipped"), gettext_noop("no mapping"))


def _joined(items: list):
    """Messages joined by ", " (translated with them)."""
    out = items[0]
    for item in items[1:]:
        out = message(gettext_noop("%(first)s, %(rest)s"), first=out, rest=item)
    return out


def _missing_feature_problem(missing: str, default: str, feature: str):
    """None, or why the options for spans without the feature do not go together (a Message)."""
    if missing not in MISSING_FEATURE:
        return message(
            gettext_noop("spans without the feature: %(missing)s is not one of %(choices)s"),
            missing=repr(missing),
            choices=", ".join(MISSING_FEATURE),
        )
    if missing != "refuse" and not feature:
        return message(gettext_noop("spans without the feature: choose the feature (XMI) first"))
    if missing == "default" and not default.strip():
        return message(gettext_noop("spans without the feature are to be given a default label: give it"))
    if missing != "default" and default.strip():
        return message(
            gettext_noop("a default label for spans without the feature goes with 'default' (or leave it empty)")
        )
    return None


def _task_resolver(corpus) -> _TaskResolver:
    """The import's own task lookup: the catalog and the tasks of the corpus's project."""
    return _TaskResolver(corpus.project_id)


def _ordered(evidence: list) -> list:
    """The evidence in text order, a range given twice (two spans over the same words) once."""
    return [list(r) for r in sorted({tuple(r) for r in evidence})]


def _failed(problems: Problems) -> ImportReport:
    return ImportReport(problems=list(problems.kept), problem_count=problems.total)
