"""Residual scans: how many identifiers of each type are left in a corpus or an export, never which.

A corpus's scan is a DeidJob of action "scan", a unit of long work (webapp.lifecycle), launched
from the corpus page or the API by those who may launch jobs (`launch`). The de-identification
task (workers/deid.py) claims it and calls `run(job)`, which reads the corpus's notes by keyset,
DEID_BATCH at a time (settings), finds identifiers with the project's detector (webapp.deid.policy: the
same one that de-identifies), and adds each batch's counts per type, the notes scanned and the
notes with any finding to the job in ONE transaction that locks the job's row while this attempt
still holds it (webapp.lifecycle.units.owned). So:

- the page and the API see progress (notes_done of notes_total) and counts that always agree;
  the heartbeat is beaten with them, and by the heartbeat's thread between them;
- a worker killed mid-scan loses one batch at most: the next attempt (or a Resume) goes on after
  the last note counted (`last_note`, committed with the counts), never counting a note twice;
- a cancel stops between batches (the batch in hand is counted, then the job ends cancelled).

At the end, one DEID_SCAN audit row holds the counts. Exports are scanned as they are written
with the same detector (`ExportScan`): a dataset export keeps its counts on the DatasetExport
(`residual`), an annotation-tool export in its audit row's details.

Never a value: each finding becomes a count of its type at once; no log line, audit row, page or
API answer holds a found text, nor where it was.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Note
from webapp.deid.models import DeidJob
from webapp.deid_ops.jobs import JobError
from webapp.lifecycle import units
from webapp.lifecycle.heartbeat import Heartbeat, beating
from webapp.lifecycle.status import ACTIVE, JobStatus

log = logging.getLogger(__name__)


class ScanError(JobError):
    """Said to the user as written."""


class Stopped(Exception):
    """Cancelled, or this attempt lost the job: stop between batches."""


# ---------------------------------------------------------------- counting


def detector_for(project, language: str, policy=None):
    """The project's detector for `language` (webapp.deid.policy: the one that de-identifies)."""
    from webapp.deid import policy as policies

    return policies.detector_for(project, language, policy)


class Scanner:
    """Counts findings per identifier type over items (a note, an exported row): the detector's
    findings become counts at once, so no value is ever kept."""

    def __init__(self, project, language: str):
        from webapp.deid import policy

        self.policy = policy.policy_of(project)
        self.detector = detector_for(project, language, self.policy)
        self.known_fields = tuple(self.policy.known_fields)
        self.counts: Counter = Counter()
        self.items = 0
        self.with_findings = 0

    def known(self, metadata: Mapping | None) -> dict:
        """The identifiers the hospital knows for this note: the values of the policy's known fields."""
        from webapp.deid import policy

        return policy.known_values(dict(metadata or {}), self.policy) if self.known_fields else {}

    def scan(self, texts: Iterable[str], metadata: Mapping | None = None) -> Counter:
        """Count one item's findings (its texts: a note, or an exported row's fields)."""
        known = self.known(metadata)
        found: Counter = Counter()
        for text in texts:
            if text:
                found.update(finding.type for finding in self.detector.find(text, known=known))
        self.items += 1
        if found:
            self.with_findings += 1
            self.counts.update(found)
        return found


def sorted_counts(counts: Mapping) -> dict:
    return {kind: int(counts[kind]) for kind in sorted(counts) if counts[kind]}


# why an export was not scanned (its summary's "skipped"; webapp.deid_ops.error_text shows it translated)
NOT_MADE = gettext_noop("not scanned: the detector could not be made (%(type)s)")
STOPPED = gettext_noop("not scanned to the end: the detector failed (%(type)s)")


class ExportScan:
    """An export's scan as it is written: `rows(batch)` after each batch written (texts of each
    row in `fields`, the note's metadata by its id in `note_field`), `summary()` at the end. A
    detector that cannot be made, or fails, never fails the export: the summary says it was not
    scanned, and why in a few words (the exception's type, never its message)."""

    def __init__(self, project, language: str, *, unit: str = "rows"):
        self.unit = unit
        self.skipped = ""
        self.started = time.perf_counter()
        try:
            self.scanner = Scanner(project, language)
        except Exception as exc:  # noqa: BLE001 - no detector here: the export goes on, unscanned
            self.scanner = None
            self.skipped = NOT_MADE % {"type": type(exc).__name__}
            log.warning(
                "residual scan of an export: detector for language %s not made (%s)", language, type(exc).__name__
            )

    def item(self, texts: Iterable[str], metadata: Mapping | None = None) -> None:
        if self.scanner is None:
            return
        try:
            self.scanner.scan(texts, metadata)
        except Exception as exc:  # noqa: BLE001 - a scan is a report, never the export's failure
            self.scanner = None
            self.skipped = STOPPED % {"type": type(exc).__name__}
            log.warning("residual scan of an export stopped (%s)", type(exc).__name__)

    def rows(self, rows: list[dict], *, corpus_id: int | None = None, fields=("input", "label")) -> None:
        """A batch of a dataset export's rows (the masked input and the label of each); the
        metadata of their notes (by their ids in `corpus_id`) read in one query when the policy
        names known fields."""
        if self.scanner is None:
            return
        metadata = {}
        if self.scanner.known_fields and corpus_id is not None:
            ids = {row["note_id"] for row in rows}
            notes = Note.objects.filter(corpus_id=corpus_id, external_id__in=ids)
            metadata = dict(notes.values_list("external_id", "metadata"))
        for row in rows:
            self.item([row.get(field) or "" for field in fields], metadata.get(row.get("note_id")))

    def summary(self) -> dict:
        if self.skipped:
            return {"skipped": self.skipped}
        scanner = self.scanner
        return {
            "counts": sorted_counts(scanner.counts),
            self.unit: scanner.items,
            f"{self.unit}_with_findings": scanner.with_findings,
            "seconds": round(time.perf_counter() - self.started, 2),
        }


# ---------------------------------------------------------------- a corpus's scan: launch


def latest(corpus) -> DeidJob | None:
    return DeidJob.objects.filter(source=corpus, action=DeidJob.Action.SCAN).order_by("-created", "-id").first()


def launch(corpus, actor=None) -> DeidJob:
    """A residual scan of `corpus`, queued for the de-identification workers (webapp.deid_ops.jobs:
    audited, sent after the commit; cancelled and resumed there too). ScanError: one is under way
    already, or the project's policy cannot be applied to the corpus's language."""
    from webapp.deid import policy
    from webapp.deid_ops import jobs

    if DeidJob.objects.filter(source=corpus, action=DeidJob.Action.SCAN, status__in=ACTIVE).exists():
        raise ScanError(_("A scan of this corpus is already queued or running; it shows here as it goes."))
    try:
        policy.check(corpus.project, corpus.language)
    except policy.PolicyError as exc:
        raise ScanError(str(exc)) from None
    return jobs.launch(corpus.project, DeidJob.Action.SCAN, corpus, actor)


# ---------------------------------------------------------------- a corpus's scan: the work


def run(job: DeidJob, batch: int | None = None, *, heart=None) -> str | None:
    """Scan a claimed scan job's corpus inside `heart` (the runner's) or a Heartbeat and end it:
    "done" (with its DEID_SCAN audit row), "cancelled", or None when this attempt lost it (another
    worker goes on). Raises ScanError (or the detector's error) for the runner to fail the job with."""
    batch = batch or settings.DEID_BATCH
    corpus = job.source
    if corpus is None:
        raise ScanError("The corpus of this scan was deleted.")
    scanner = Scanner(job.project, corpus.language)
    notes = Note.objects.filter(corpus_id=corpus.pk)
    total = notes.count()
    after = job.last_note  # 0, or where an earlier attempt's last committed batch ended
    units.owned(job).update(notes_total=max(total, job.notes_done))
    log.info("scan %s: corpus %s, %s notes, from note id %s", job.pk, corpus.pk, total, after)
    with beating(job, heart) as heart:
        try:
            while True:
                if heart.cancelling or heart.lost:
                    raise Stopped
                rows = list(notes.filter(pk__gt=after).order_by("pk").values_list("pk", "text", "metadata")[:batch])
                if not rows:
                    break
                found = [scanner.scan([text], metadata) for _, text, metadata in rows]
                after = rows[-1][0]
                _count(job, heart, found, total, after)
        except Stopped:
            if heart.lost:
                return None
            return "cancelled" if units.cancelled(job) else None
    with transaction.atomic():  # the end with its audit row, or neither
        if not units.finish(job):
            return None
        job.refresh_from_db()
        record(
            job.created_by,
            AuditEvent.Action.DEID_SCAN,
            corpus,
            job=job.pk,
            notes=job.notes_done,
            notes_with_findings=job.notes_with_findings,
            counts=job.counts,
        )
    log.info("scan %s: done, %s notes, %s with findings", job.pk, job.notes_done, job.notes_with_findings)
    return "done"


def _count(job: DeidJob, heart: Heartbeat, found: list[Counter], total: int, last_note: int) -> None:
    """Add one batch's counts and progress (and the note it ended with) to the job, in one
    transaction, its row locked while this attempt holds it; Stopped when it lost it. A cancel
    asked meanwhile ends the scan after this batch (heart.cancelling)."""
    with transaction.atomic():
        row = (
            units.owned(job)
            .select_for_update()
            .values_list("counts", "notes_done", "notes_with_findings", "status")
            .first()
        )
        if row is None:
            heart.lost = True
            raise Stopped
        counts, done, with_findings, status = row
        merged = Counter(counts or {})
        for one in found:
            merged.update(one)
        done += len(found)
        units.owned(job).update(
            counts=sorted_counts(merged),
            notes_done=done,
            notes_total=max(total, done),
            notes_with_findings=with_findings + sum(1 for one in found if one),
            last_note=last_note,
            heartbeat=Now(),
        )
    if status == JobStatus.CANCELLING:
        heart.cancelling = True


# ---------------------------------------------------------------- what the page and the API show


def result(job: DeidJob | None) -> dict | None:
    """A scan as the API answers it: status, times, progress and counts per type; never a value."""
    if job is None:
        return None
    return {
        "id": job.pk,
        "corpus": job.source_id,
        "status": job.status,
        "error": job.error,
        "created": job.created,
        "started": job.started,
        "finished": job.finished,
        "notes_done": job.notes_done,
        "notes_total": job.notes_total,
        "notes_with_findings": job.notes_with_findings,
        "counts": sorted_counts(job.counts or {}),
    }
