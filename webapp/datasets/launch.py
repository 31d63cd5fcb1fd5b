"""Create dataset versions and exports and hand them to the workers (after the commit)."""
from __future__ import annotations

from django.db import IntegrityError, transaction

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.pipeline.models import JobStatus

COPIED_FIELDS = ("corpus_id", "model_version_id", "method", "template", "profile_id", "mode", "mask_token", "seed",
                 "filters")


class LaunchError(Exception):
    """Said to the user as written."""


def launch_build(*, name: str, jobs=(), actor=None, **fields) -> DatasetVersion:
    """A new version of dataset `name` (version = the next free number), queued for building."""
    try:
        with transaction.atomic():
            dataset = DatasetVersion.objects.create(name=name, version=DatasetVersion.next_version(name),
                                                    created_by=_user(actor), **fields)
            if jobs:
                dataset.jobs.set(jobs)
            _enqueue_build(dataset)
    except IntegrityError:  # two launches of the same name at once took the same version number
        raise LaunchError("Another version of this dataset was created at the same moment; please submit again.")
    record(actor, AuditEvent.Action.LAUNCH_JOB, dataset, what="dataset build", name=name, version=dataset.version,
           mode=dataset.mode)
    return dataset


def build_again(dataset: DatasetVersion, actor=None) -> DatasetVersion:
    """A failed (or cancelled) version is queued again as it is; a finished one is never changed:
    version + 1 with the same settings is created instead."""
    if dataset.is_active:
        raise LaunchError("This dataset is still being built.")
    if dataset.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        with transaction.atomic():
            updated = DatasetVersion.objects.filter(pk=dataset.pk, status=dataset.status).update(
                status=JobStatus.QUEUED, error="", maps_done=0, started=None, finished=None)
            if not updated:
                raise LaunchError("This dataset changed meanwhile; reload the page.")
            _enqueue_build(dataset)
        record(actor, AuditEvent.Action.LAUNCH_JOB, dataset, what="dataset rebuild", name=dataset.name,
               version=dataset.version)
        return dataset
    return launch_build(name=dataset.name, jobs=list(dataset.jobs.all()), actor=actor,
                        **{f: getattr(dataset, f) for f in COPIED_FIELDS})


def request_export(dataset: DatasetVersion, fmt: str, actor=None) -> DatasetExport:
    """Queue a worker export to a folder under DATA_DIR/exports (audited when it is written)."""
    if not dataset.is_done:
        raise LaunchError("Only a finished dataset can be exported.")
    with transaction.atomic():
        export = DatasetExport.objects.create(dataset=dataset, format=fmt, created_by=_user(actor))
        from workers.datasets import export_dataset

        export_dataset.delay_on_commit(export.pk)
    return export


def _enqueue_build(dataset: DatasetVersion) -> None:
    from workers.datasets import build_dataset

    build_dataset.delay_on_commit(dataset.pk)


def _user(actor):
    return actor if getattr(actor, "is_authenticated", False) else None
