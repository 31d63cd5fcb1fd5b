"""De-identify a corpus into a new one: the work of a DeidJob (action deidentify), in a worker.

The new corpus (made at launch, webapp.deid_ops.jobs) has the source's project and language, the name
"<name> (de-identified)", `deidentified=True` and `deidentified_from` the source. Each source note
becomes a note of the same external id whose text and metadata went through the project's policy
(webapp.deid.policy.NoteDeidentifier); its annotations are copied with their evidence carried into
the new text (Replacement.map_span). Relevance maps, peaks and tokens are not copied: they belong
to the old text, and the usual jobs compute them on the new corpus.

Resumable without duplicates: the source's notes are read in id order, DEID_BATCH at a time; each
batch's notes and annotations, its counts and the job's cursor (`last_note`) commit in one
transaction, which first locks the job's row while this attempt still holds it. A worker killed
mid-batch loses that batch only; Resume (or the sweeper, for a lost worker) goes on after the
cursor, and a note the new corpus already has (by external id) is skipped, never copied twice.
Cancel stops between batches; what was copied stays (Resume goes on).

The job's `counts` are identifiers replaced per type, `notes_with_findings` the notes that had
any; never a value. The end is audited (DEIDENTIFY) with those counts, in the transaction that
ends the job. With a policy that keeps the mapping, each batch's pairs are merged into the
encrypted mapping in the same transaction (webapp.deid.mapping).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Now

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Annotation, Note, text_hash
from webapp.deid.models import DeidJob
from webapp.deid.policy import NoteDeidentifier, PolicyError, Tally, map_ranges
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat, beating
from webapp.lifecycle.status import JobStatus

log = logging.getLogger(__name__)


class Stopped(Exception):
    """Cancelled, or this attempt lost the job: stop between batches."""


def run(job: DeidJob, batch: int | None = None, *, heart=None) -> str | None:
    """Copy the source's notes, de-identified, into the target, inside `heart` (the runner's) or a
    Heartbeat of its own, and end the job: "done", "cancelled" or "failed"; None when this attempt
    lost it."""
    batch = batch or settings.DEID_BATCH
    if job.source_id is None or job.target_id is None:
        gone = "corpus it reads" if job.source_id is None else "corpus it fills"
        return _fail(job, f"The {gone} was erased; nothing more can be copied.")
    with beating(job, heart) as heart:  # beating already while the detector is built (seconds)
        try:
            deid = NoteDeidentifier(job.project, job.source.language)
        except PolicyError as exc:
            return _fail(job, f"{exc} Resume once it is corrected.")
        try:
            while _copy_batch(job, deid, batch, heart):
                pass
        except Stopped:
            if heart.lost:
                return None
            return JobStatus.CANCELLED if units.cancelled(job) else None
    with transaction.atomic():  # the audit entry with the end, or neither (a later attempt ends it)
        job.refresh_from_db()
        if not units.finish(job, notes_total=max(job.notes_total, job.notes_done)):
            return None
        record(
            job.created_by or "de-identification job",
            AuditEvent.Action.DEIDENTIFY,
            job.target,
            job=job.pk,
            source=job.source_id,
            target=job.target_id,
            mode=deid.policy.mode,
            notes=job.notes_done,
            notes_with_findings=job.notes_with_findings,
            counts=job.counts,
            mapping_kept=deid.keeps_mapping,
        )
    log.info("deid job %s: done, %s notes, %s with findings", job.pk, job.notes_done, job.notes_with_findings)
    return JobStatus.DONE


def _fail(job: DeidJob, message: str) -> str | None:
    return JobStatus.FAILED if units.fail(job, message) else None


def _holding(job: DeidJob, heart: Heartbeat) -> dict:
    """The job's cursor and counts, its row locked until the transaction ends; Stopped when this
    attempt lost it or a cancel was asked for."""
    row = units.owned(job).select_for_update().values("status", "last_note", "counts").first()
    if row is None:
        heart.lost = True
        raise Stopped
    if row["status"] == JobStatus.CANCELLING:
        heart.cancelling = True
        raise Stopped
    return row


def _copy_batch(job: DeidJob, deid: NoteDeidentifier, batch: int, heart: Heartbeat) -> int:
    """De-identify the next batch of source notes, then write it in one transaction that first
    locks the job's row (the de-identification itself runs outside it, so heartbeats are not kept
    waiting on the lock). Returns the source notes read (0: every note is copied)."""
    if heart.cancelling or heart.lost:
        raise Stopped
    cursor = units.owned(job).values_list("last_note", flat=True).first()
    if cursor is None:
        heart.lost = True
        raise Stopped
    notes = list(
        Note.objects.filter(corpus_id=job.source_id, pk__gt=cursor)
        .order_by("pk")
        .values("pk", "external_id", "text", "metadata")[:batch]
    )
    if not notes:
        return 0
    made: dict[int, tuple[Note, object]] = {}  # source note id -> (new note, its DeidentifiedNote)
    for note in notes:
        done = deid.note(note["text"], note["metadata"], note["external_id"])
        new = Note(
            corpus_id=job.target_id,
            external_id=note["external_id"],
            text=done.text,
            content_hash=text_hash(done.text),
            metadata=done.metadata,
        )
        made[note["pk"]] = (new, done)
    with transaction.atomic():
        held = _holding(job, heart)
        if held["last_note"] != cursor:  # another attempt moved on meanwhile: this one is stale
            heart.lost = True
            raise Stopped
        copied = set(
            Note.objects.filter(corpus_id=job.target_id, external_id__in=[n["external_id"] for n in notes]).values_list(
                "external_id", flat=True
            )
        )
        made = {pk: entry for pk, entry in made.items() if entry[0].external_id not in copied}
        tally = Tally()
        for _, done in made.values():
            tally.add(done, deid.keeps_mapping)
        Note.objects.bulk_create([new for new, _ in made.values()], batch_size=500)
        _copy_annotations(made)
        if deid.keeps_mapping:
            tally.keep_pairs(job.project_id)
        counts = dict(held["counts"] or {})
        for kind, n in tally.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        units.owned(job).update(
            last_note=notes[-1]["pk"],
            notes_done=F("notes_done") + len(notes),
            notes_with_findings=F("notes_with_findings") + tally.notes_with_findings,
            counts=dict(sorted(counts.items())),
            heartbeat=Now(),
        )
    return len(notes)


def _copy_annotations(made: dict) -> None:
    """The source notes' annotations, each on its new note, evidence carried into the new text."""
    if not made:
        return
    copies = []
    for annotation in Annotation.objects.filter(note_id__in=made).order_by("pk"):
        new, done = made[annotation.note_id]
        copies.append(
            Annotation(
                note_id=new.pk,
                task_id=annotation.task_id,
                label=annotation.label,
                evidence=map_ranges(done.replacement, annotation.evidence),
                annotator_id=annotation.annotator_id,
                annotator_name=annotation.annotator_name,
            )
        )
    Annotation.objects.bulk_create(copies, batch_size=500)
