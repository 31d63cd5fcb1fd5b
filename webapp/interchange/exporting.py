"""A corpus's notes as neutral documents, for any format of the table (webapp.lib.formats),
and the export itself: to a folder or file (the command line) or a streamed zip (the corpus page).

What a document holds, each part asked for:
- gold: each imported or typed annotation's evidence ranges, one span each, labelled
  `task-slug:label value` (so an export imports back with no mapping), reviewer = the
  annotation's annotator name; an annotation without evidence has no span to show. With them,
  the spans reviewers added in review (webapp.review.gold; a curator's choice in place of its
  round's group), each a gold span of its reviewer (the curator's for a choice), attribute
  `origin` (added_span / curator), labelled `task-slug:value` with the note's label value for
  the task (the reviewer's own annotation's, else the one value its annotations agree on; the
  task's slug alone when there is none: a mapping `slug=slug` imports it as evidence only);
- peaks: the peaks of one model version's relevance maps (method, template, configuration, and
  the peak parameters of a profile) as predictions, labelled with the task's slug, reviewer = the
  model version's name: pre-annotations for Label Studio (`predictions`), a layer of their own in
  XMI (DsmPeak), AnnotatorNotes in brat;
- decisions: each reviewer's decision on a peak, the span as decided (an adjusted span where
  adjusted), labelled with the task's slug, attributes `decision` (accept / reject / adjust) and
  `peak` (the span shown), reviewer = the reviewer's user name; a curator's adjudication is a
  decision with the attribute `adjudicated` true.

Notes are read by keyset, BATCH at a time, so memory stays bounded by a batch, whatever the
corpus; the writers stream documents as they come. Every export is audited (corpus, format,
what was included, notes written; never note text).

The notes leave only through the gate (webapp.deid.gate): a corpus that is not de-identified is
refused unless a project admin (or the command line, with its flag) confirmed, audited. Each
note's text is scanned as it is written (webapp.deid_ops.scanning.ExportScan, the project's
detector): the counts per identifier type, never a value, go in the export's audit row
(details["residual"]), which the corpus's export page lists (`recent_exports`).
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Note
from webapp.deid import gate
from webapp.deid_ops.scanning import ExportScan
from webapp.lib.formats import Document, Span, get_writer

BATCH = 500


@dataclass(frozen=True)
class PeakSource:
    """Which maps' peaks to export: a model version, a relevance configuration and peak parameters."""

    model_version: object
    method: str
    template: str
    config_key: str
    params: object  # ml.peaks.PeakParams
    profile_name: str = ""


@dataclass(frozen=True)
class ExportChoice:
    gold: bool = True
    peaks: PeakSource | None = None
    decisions: bool = False

    def summary(self) -> dict:
        return {
            "gold": self.gold,
            "peaks": self.peaks.model_version.name if self.peaks else None,
            "decisions": self.decisions,
        }


class _Count:
    """The notes written, and the residual scan of their text (None: not scanned)."""

    def __init__(self, scan: ExportScan | None = None):
        self.notes = 0
        self.scan = scan


def corpus_documents(corpus, choice: ExportChoice, counter: _Count | None = None) -> Iterator[Document]:
    after = 0
    scan = counter.scan if counter is not None else None
    fields = ("pk", "external_id", "text", "metadata") if scan is not None else ("pk", "external_id", "text")
    while True:
        notes = list(Note.objects.filter(corpus=corpus, pk__gt=after).order_by("pk").values_list(*fields)[:BATCH])
        if not notes:
            return
        after = notes[-1][0]
        spans: dict[int, list[Span]] = defaultdict(list)
        ids = [note[0] for note in notes]
        if choice.gold:
            _gold(ids, spans)
            _added(ids, spans)
        if choice.peaks is not None:
            _peaks(ids, {note[0]: note[2] for note in notes}, choice.peaks, spans)
        if choice.decisions:
            _decisions(ids, spans)
        for pk, external_id, text, *metadata in notes:
            if counter is not None:
                counter.notes += 1
            if scan is not None:
                scan.item([text], metadata[0] if metadata else None)
            yield Document(external_id, text, sorted(spans[pk], key=_order))


def _order(span: Span):
    return ({"gold": 0, "prediction": 1, "decision": 2}[span.source], span.start, span.end, span.label, span.reviewer)


def _gold(note_ids, spans) -> None:
    rows = Annotation.objects.filter(note_id__in=note_ids).values_list(
        "pk", "note_id", "task__slug", "label", "evidence", "annotator_name"
    )
    for pk, note_id, slug, label, evidence, annotator in rows:
        for k, (start, end) in enumerate(evidence or [], 1):
            spans[note_id].append(Span.of([[start, end]], f"{slug}:{label}", reviewer=annotator, id=f"g{pk}-{k}"))


def _added(note_ids, spans) -> None:
    """The spans reviewers added to these notes, as gold spans of their reviewer (module doc)."""
    from webapp.corpus.models import Task
    from webapp.review import gold
    from webapp.review.models import AddedSpan, SpanAdjudication

    pairs = set(AddedSpan.objects.filter(note_id__in=note_ids).values_list("note_id", "task_id").order_by())
    chosen = SpanAdjudication.objects.filter(note_id__in=note_ids, decision=SpanAdjudication.Decision.ACCEPT)
    pairs |= set(chosen.values_list("note_id", "task_id").order_by())
    if not pairs:
        return
    slugs = dict(Task.objects.filter(pk__in={t for _, t in pairs}).values_list("pk", "slug"))
    own, values = {}, defaultdict(set)
    labels = Annotation.objects.filter(note_id__in={n for n, _ in pairs}, task_id__in=set(slugs))
    for note_id, task_id, annotator, label in labels.values_list("note_id", "task_id", "annotator_name", "label"):
        own[(note_id, task_id, annotator)] = label
        values[(note_id, task_id)].add(label)
    for (note_id, task_id), items in gold.evidence(pairs).items():
        added = [g for g in items if g.origin in ("added_span", "curator")]
        for k, g in enumerate(added, 1):
            agreed = values[(note_id, task_id)]
            value = own.get((note_id, task_id, g.annotator)) or (next(iter(agreed)) if len(agreed) == 1 else "")
            label = f"{slugs[task_id]}:{value}" if value else slugs[task_id]
            spans[note_id].append(
                Span.of(
                    [[g.start, g.end]],
                    label,
                    {"origin": g.origin},
                    reviewer=g.annotator,
                    id=f"r{note_id}-{task_id}-{k}",
                )
            )


def _peaks(note_ids, texts, source: PeakSource, spans) -> None:
    from ml.peaks import peaks_of_arrays
    from webapp.pipeline.models import RelevanceMap

    rows = list(
        RelevanceMap.objects.filter(note_id__in=note_ids, model_version=source.model_version)
        .for_config(source.method, source.template, source.config_key)
        .with_arrays("note_id", "task_id", "task__slug")
    )
    if not rows:
        return
    keys = [(None, note_id, task_id) for note_id, task_id, _, _ in rows]
    found = peaks_of_arrays(keys, [arrays for *_, arrays in rows], texts, source.params)
    attributes = {"method": source.method, **({"profile": source.profile_name} if source.profile_name else {})}
    for (note_id, _, slug, _), peaks in zip(rows, found):
        for k, (start, end) in enumerate(peaks.char_spans, 1):
            if start < end:
                spans[note_id].append(
                    Span.of(
                        [[start, end]],
                        slug,
                        attributes,
                        source="prediction",
                        reviewer=source.model_version.name,
                        id=f"p{note_id}-{slug}-{k}",
                    )
                )


def _decisions(note_ids, spans) -> None:
    from webapp.review.models import Adjudication, PeakDecision

    rows = PeakDecision.objects.filter(note_id__in=note_ids).values_list(
        "pk",
        "note_id",
        "task__slug",
        "start",
        "end",
        "decision",
        "adjusted_start",
        "adjusted_end",
        "reviewer__username",
    )
    for pk, note_id, slug, start, end, decision, a_start, a_end, reviewer in rows:
        ranges = [[a_start, a_end]] if decision == "adjust" else [[start, end]]
        attributes = {"decision": decision, "peak": f"{start}-{end}"}
        spans[note_id].append(Span.of(ranges, slug, attributes, source="decision", reviewer=reviewer, id=f"d{pk}"))
    rows = Adjudication.objects.filter(note_id__in=note_ids).values_list(
        "pk", "note_id", "task__slug", "start", "end", "decision", "curator__username"
    )
    for pk, note_id, slug, start, end, decision, curator in rows:
        attributes = {"decision": decision, "peak": f"{start}-{end}", "adjudicated": "true"}
        spans[note_id].append(
            Span.of([[start, end]], slug, attributes, source="decision", reviewer=curator, id=f"a{pk}")
        )


def export_corpus(
    corpus,
    fmt: str,
    out,
    choice: ExportChoice,
    *,
    actor=None,
    delivery: str = "file",
    confirm_identifiable: bool = False,
) -> int:
    """Write the corpus's documents in format `fmt` to `out` (a folder for brat and XMI, else a
    file), scanning their text; audited. Returns the notes written. Raises gate.Refused for a
    corpus that is not de-identified, unconfirmed (before anything is written)."""
    format_ = get_writer(fmt)
    passage = gate.gate_for([corpus], actor)
    confirmed = passage.check(actor, confirm_identifiable, "annotation export")
    counter = _Count(ExportScan(corpus.project, corpus.language, unit="notes"))
    format_.write(corpus_documents(corpus, choice, counter), Path(out))
    event = record(
        actor,
        AuditEvent.Action.EXPORT,
        corpus,
        name=corpus.name,
        format=format_.name,
        notes=counter.notes,
        delivery=delivery,
        residual=counter.scan.summary(),
        **choice.summary(),
    )
    if confirmed:
        passage.record(actor, "annotation export", corpus, format=format_.name, export_event=event.pk)
    return counter.notes


def recent_exports(corpus, limit: int = 10):
    """The corpus's latest annotation-tool exports, from their audit rows (who, when, format,
    notes, the residual scan's counts): what its export page lists."""
    rows = AuditEvent.objects.filter(
        action=AuditEvent.Action.EXPORT, object_type=corpus._meta.label, object_id=str(corpus.pk)
    )
    return list(rows.order_by("-created", "-id")[:limit])


def download_name(corpus, fmt: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in corpus.name)
    return f"{safe}-{fmt}.zip"


def zip_export(
    corpus, fmt: str, choice: ExportChoice, *, actor=None, confirm_identifiable: bool = False
) -> Iterator[bytes]:
    """The export as a zip, written to a temporary folder, then streamed 1 MB at a time and
    removed (the writers of brat and XMI make many files; Label Studio's writes its labeling
    config beside the JSON: every file written goes in)."""
    format_ = get_writer(fmt)
    tmp = Path(tempfile.mkdtemp(prefix="annotation-export-"))
    try:
        written = tmp / "written"
        written.mkdir()
        target = written / (fmt if format_.writes_folder else f"{fmt}{format_.suffix}")
        export_corpus(
            corpus, fmt, target, choice, actor=actor, delivery="download", confirm_identifiable=confirm_identifiable
        )
        archive = tmp / "export.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
            for path in sorted(p for p in written.rglob("*") if p.is_file()):
                zf.write(path, path.relative_to(written).as_posix())
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return _stream(archive, tmp)


def _stream(archive: Path, tmp: Path) -> Iterator[bytes]:
    try:
        with archive.open("rb") as f:
            while chunk := f.read(1 << 20):
                yield chunk
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class ExportChoiceError(ValueError):
    """A model version, profile or configuration that cannot be found; said as written."""


def peak_source(
    corpus,
    model_name: str,
    *,
    method: str = "attnlrp",
    template: str = "",
    config_key: str = "",
    profile_name: str = "",
) -> PeakSource:
    """The peaks of `model_name`'s maps of the corpus, under the named peak profile (its latest
    version; default: the default profile, else the paper's parameters). `template` defaults
    to the corpus's language."""
    from django.db.models import F

    from ml.peaks import PAPER
    from webapp.pipeline.models import ModelVersion, PeakProfile
    from webapp.review.selection import default_profile

    # the corpus's project's and shared ones only: another project's is unknown here
    model = ModelVersion.objects.of_project(corpus.project_id).filter(name=model_name).first()
    if model is None:
        raise ExportChoiceError(f"no model version named {model_name!r}")
    if profile_name:
        named = PeakProfile.objects.of_project(corpus.project_id).filter(name=profile_name)
        profile = named.order_by(F("project").asc(nulls_last=True), "-version").first()  # its own before a shared one
        if profile is None:
            raise ExportChoiceError(f"no peak profile named {profile_name!r}")
    else:
        profile = default_profile(corpus.project_id)
    params = profile.params if profile is not None else PAPER
    return PeakSource(model, method, template or corpus.language, config_key, params, str(profile) if profile else "")
