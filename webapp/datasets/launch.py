"""Create dataset versions and exports, cancel them, and hand them to the workers by task name
after the commit (webapp.lifecycle.queue: the web app never imports `workers/`).

A build (and a build again) and an export pass the gate first (webapp.deid.gate): data of a corpus
that is not de-identified is refused (gate.Refused) unless a project admin confirmed
(`confirm_identifiable`), which is audited with the new version or export."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models.functions import Now
from django.utils.translation import gettext as _

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.datasets import export
from webapp.datasets.formats import UnknownFormat, get_format
from webapp.datasets.models import DatasetExport, DatasetVersion, MaskedExample
from webapp.deid import gate
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import JobStatus

BUILD_TASK = "workers.datasets.build_dataset"
EXPORT_TASK = "workers.datasets.export_dataset"
COPIED_FIELDS = (
    "corpus_id",
    "model_version_id",
    "method",
    "template",
    "profile_id",
    "mode",
    "mask_token",
    "seed",
    "filters",
)


class LaunchError(Exception):
    """Said to the user as written."""


def launch_build(
    *, name: str, jobs=(), actor=None, confirm_identifiable: bool = False, gated: bool = True, **fields
) -> DatasetVersion:
    """A new version of dataset `name` (version = the next free number), queued for building.
    Raises gate.Refused for a corpus that is not de-identified, unconfirmed. `gated=False`: only
    for a version that replaces one built already (an erasure's rebuild holds less, never more)."""
    corpus = fields.get("corpus") or Corpus.objects.get(pk=fields["corpus_id"])
    passage = gate.gate_for([corpus], actor)
    confirmed = passage.check(actor, confirm_identifiable, "dataset build") if gated else False
    try:
        with transaction.atomic():
            dataset = DatasetVersion.objects.create(
                name=name, version=DatasetVersion.next_version(name), created_by=_user(actor), heartbeat=Now(), **fields
            )
            if jobs:
                dataset.jobs.set(jobs)
            if confirmed:
                passage.record(actor, "dataset build", dataset)
            _send(BUILD_TASK, DatasetVersion, dataset.pk)
    except IntegrityError:  # two launches of the same name at once took the same version number
        raise LaunchError(
            _("Another version of this dataset was created at the same moment; please submit again.")
        ) from None
    record(
        actor,
        AuditEvent.Action.LAUNCH_JOB,
        dataset,
        what="dataset build",
        name=name,
        version=dataset.version,
        mode=dataset.mode,
    )
    return dataset


def build_again(
    dataset: DatasetVersion, actor=None, *, confirm_identifiable: bool = False, gated: bool = True
) -> DatasetVersion:
    """A failed or cancelled version, or one whose worker was lost, is queued again as it is (its
    examples are rebuilt from nothing); a finished one is never changed: version + 1 with the
    same settings is created instead. Both pass the gate (`gated=False`: an erasure's rebuild of a
    version it withdrew, which holds fewer notes than the version built before)."""
    was = dataset.status_text()
    passage = gate.gate_for([dataset.corpus], actor)
    confirmed = passage.check(actor, confirm_identifiable, "dataset build") if gated else False
    with transaction.atomic():
        requeued = units.requeue(DatasetVersion, dataset.pk, maps_done=0)
        if requeued:
            if confirmed:
                passage.record(actor, "dataset build", dataset, rebuild=True)
            _send(BUILD_TASK, DatasetVersion, dataset.pk)
    dataset.refresh_from_db()
    if not requeued:
        if not dataset.is_done:
            raise LaunchError(_("This dataset is still being built."))
        return launch_build(
            name=dataset.name,
            jobs=list(dataset.jobs.all()),
            actor=actor,
            confirm_identifiable=confirm_identifiable,
            gated=gated,
            **{f: getattr(dataset, f) for f in COPIED_FIELDS},
        )
    record(
        actor,
        AuditEvent.Action.LAUNCH_JOB,
        dataset,
        what="dataset rebuild",
        name=dataset.name,
        version=dataset.version,
        was=was,
    )
    return dataset


def cancel_build(dataset: DatasetVersion, actor=None) -> str:
    """Queued (or held by a lost worker): cancelled at once, its partial examples deleted;
    running: cancelling, the worker stops after its current batch of maps and deletes them.
    Returns the new status."""
    with transaction.atomic():
        status = units.request_cancel(DatasetVersion, dataset.pk)
        if status is None:
            raise LaunchError(_("Only a queued or running build can be cancelled."))
        if status == JobStatus.CANCELLED:
            MaskedExample.objects.filter(dataset_id=dataset.pk).delete()
    record(
        actor,
        AuditEvent.Action.CANCEL_JOB,
        dataset,
        what="dataset build",
        name=dataset.name,
        version=dataset.version,
        status=status,
    )
    return status


def request_export(
    dataset: DatasetVersion, fmt: str, actor=None, *, confirm_identifiable: bool = False
) -> DatasetExport:
    """Queue a worker export to a folder under DATA_DIR/exports (audited when it is written).
    Raises gate.Refused for a corpus that is not de-identified, unconfirmed; LaunchError for a
    format that is not in the table (webapp.datasets.formats), naming those that are."""
    try:
        get_format(fmt)
    except UnknownFormat as exc:
        raise LaunchError(str(exc)) from None
    if not dataset.is_done:
        raise LaunchError(_("Only a finished dataset can be exported."))
    if not dataset.example_count:
        raise LaunchError(_("This dataset has 0 examples: there is nothing to export."))
    passage = gate.gate_for([dataset.corpus], actor)
    confirmed = passage.check(actor, confirm_identifiable, "dataset export")
    with transaction.atomic():
        job = DatasetExport.objects.create(dataset=dataset, format=fmt, created_by=_user(actor), heartbeat=Now())
        if confirmed:
            passage.record(actor, "dataset export", job, dataset=dataset.pk, format=fmt)
        _send(EXPORT_TASK, DatasetExport, job.pk)
    return job


def cancel_export(job: DatasetExport, actor=None) -> str:
    """Like cancel_build: at once when queued or lost (its unfinished files removed), else after
    the batch of rows being written. Returns the new status."""
    status = units.request_cancel(DatasetExport, job.pk)
    if status is None:
        raise LaunchError(_("Only a queued or running export can be cancelled."))
    if status == JobStatus.CANCELLED:
        export.discard_scratch(job)
    record(
        actor,
        AuditEvent.Action.CANCEL_JOB,
        job,
        what="export",
        dataset=job.dataset_id,
        format=job.format,
        status=status,
    )
    return status


def builds_cancelled(pks) -> None:
    """The recovery sweeper ended these builds cancelled (their worker was lost while cancelling)."""
    MaskedExample.objects.filter(dataset_id__in=pks).delete()


def exports_cancelled(pks) -> None:
    """The recovery sweeper ended these exports cancelled: remove their unfinished files."""
    for job in DatasetExport.objects.filter(pk__in=pks):
        export.discard_scratch(job)


def _send(task: str, model, pk: int) -> None:
    """Send after the commit; if the broker is away the unit says so and stays queued (the
    recovery sweeper sends it again once the broker is back)."""
    queue.send_on_commit(
        task, pk, on_error=lambda message: model.objects.filter(pk=pk, status=JobStatus.QUEUED).update(error=message)
    )


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
