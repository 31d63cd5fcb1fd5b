"""Retention: a project keeps its notes `retain_notes_days` after their import and its exported
files `retain_exports_days` after they were made (Project fields; empty: kept for good).

`report(project)` is the dry run (the project page shows it; `manage.py retention --dry-run`
prints it). `apply()` is what the periodic task runs (workers.retention, every
RETENTION_INTERVAL_SECONDS, from Celery beat; on the embedded default, the demo's default worker
runs beat):

* notes past their time are erased through the one erasure machinery (webapp.erasure.erasing): a
  request per corpus, as long work, with everything made from them (maps, peaks, decisions,
  examples, files; datasets that held them withdrawn, models that saw them listed), requested
  by "retention" and audited with its receipt. A corpus whose every note is due goes whole. At
  most MAX_NOTES_PER_REQUEST notes a request: the next round takes the rest. Notes already in an
  erasure that has not ended are left to it, so a round never asks twice; a corpus with work
  still running on it is skipped this round (said in the report) and tried at the next;
* exports past their time lose their files (under DATA_DIR and in ARTIFACT_STORAGE_URL); the row
  stays, marked `expired`, so the dataset page says why it cannot be downloaded. Audited.

Idempotent: a second round at the same moment finds nothing new to do.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from webapp import shared_files
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, Note
from webapp.datasets.models import DatasetExport
from webapp.erasure import erasing, planning
from webapp.erasure.models import ErasureRequest
from webapp.lifecycle.status import ENDED
from webapp.projects.models import Project

log = logging.getLogger(__name__)

ACTOR = "retention"
MAX_NOTES_PER_REQUEST = 50_000  # a request's target lists its notes' ids


@dataclass
class Due:
    """What retention would remove from one project now."""

    project: Project
    notes_before: object = None  # the import time before which notes go (None: notes kept)
    exports_before: object = None
    notes: dict[str, int] = field(default_factory=dict)  # corpus name -> notes due (not yet being erased)
    exports: int = 0
    skipped: dict[str, str] = field(default_factory=dict)  # corpus name -> why this round left it

    @property
    def empty(self) -> bool:
        return not self.notes and not self.exports


def report(project: Project, now=None) -> Due:
    """The dry run: what a round would remove from `project` now."""
    now = now or timezone.now()
    due = Due(project)
    if project.retain_notes_days is not None:
        due.notes_before = now - timedelta(days=project.retain_notes_days)
        for corpus in Corpus.objects.filter(project=project).order_by("name"):
            count = _due_notes(corpus, due.notes_before).count()
            if count:
                due.notes[corpus.name] = count
    if project.retain_exports_days is not None:
        due.exports_before = now - timedelta(days=project.retain_exports_days)
        due.exports = _due_exports(project, due.exports_before).count()
    return due


def apply(now=None) -> list[Due]:
    """One round over every project with a retention: erasures requested, export files removed.
    Returns what each project had due (with `skipped` filled in)."""
    now = now or timezone.now()
    rounds = []
    projects = Project.objects.filter(Q(retain_notes_days__isnull=False) | Q(retain_exports_days__isnull=False))
    for project in projects.order_by("pk"):
        due = report(project, now)
        for corpus in Corpus.objects.filter(project=project, name__in=list(due.notes)).order_by("name"):
            why = _erase_due_notes(project, corpus, due.notes_before)
            if why:
                due.skipped[corpus.name] = why
        if due.exports:
            _expire_exports(project, due.exports_before, now)
        if not due.empty:
            log.info(
                "retention: project %s: %s notes due in %s corpora, %s exports",
                project.pk,
                sum(due.notes.values()),
                len(due.notes),
                due.exports,
            )
        rounds.append(due)
    return rounds


def _due_notes(corpus: Corpus, before):
    """The corpus's notes imported before `before` that no unended erasure already holds."""
    held = set()
    pending = ErasureRequest.objects.filter(project=corpus.project_id).exclude(status__in=ENDED)
    for erasure in pending.only("scope", "corpus_name", "target"):
        if erasure.scope == ErasureRequest.Scope.PROJECT or (
            erasure.scope == ErasureRequest.Scope.CORPUS and erasure.corpus_name == corpus.name
        ):
            return Note.objects.none()  # the whole of it is going already
        held.update(erasure.target.get("note_ids", ()))
    return Note.objects.filter(corpus=corpus, created__lt=before).exclude(pk__in=held)


def _erase_due_notes(project: Project, corpus: Corpus, before) -> str:
    """Request the erasure of the corpus's due notes; returns why not, "" when requested."""
    due = _due_notes(corpus, before)
    ids = list(due.order_by("pk").values_list("external_id", flat=True)[:MAX_NOTES_PER_REQUEST])
    if not ids:
        return ""
    whole = len(ids) == Note.objects.filter(corpus=corpus).count()
    try:
        if whole:
            erasing.request(project, ErasureRequest.Scope.CORPUS, corpus=corpus, actor=ACTOR)
        else:
            erasing.request(project, ErasureRequest.Scope.NOTES, corpus=corpus, notes=ids, actor=ACTOR)
    except planning.PlanError as exc:  # work still running on it: the next round tries again
        log.warning("retention: corpus %s of project %s left this round (%s)", corpus.pk, project.pk, exc)
        return str(exc)
    return ""


def _due_exports(project: Project, before):
    return DatasetExport.objects.filter(
        dataset__corpus__project=project, created__lt=before, expired__isnull=True
    ).exclude(path="")


def _expire_exports(project: Project, before, now) -> int:
    """Remove the files of the project's exports made before `before`; returns how many."""
    expired = 0
    for export in _due_exports(project, before):
        shutil.rmtree(Path(settings.DATA_DIR) / export.path, ignore_errors=True)
        if shared_files.enabled():
            shared_files.remove(export.path)
        if DatasetExport.objects.filter(pk=export.pk, expired__isnull=True).update(expired=now):
            expired += 1
            record(ACTOR, AuditEvent.Action.EXPORT_EXPIRED, export, dataset=export.dataset_id, format=export.format)
    return expired
