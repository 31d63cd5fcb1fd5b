"""Erasure requests: made (with their dry run), cancelled, resumed, and run by a worker.

The work (`run`) goes through planning.STEPS in order. Each batch is one transaction that
locks the request's row (only while this attempt still holds it: webapp.lifecycle.units.owned),
deletes at most ERASURE_BATCH rows of one table (through Django's collector: a PROTECT left by
a table missing from the plan fails the erasure instead of leaving rows behind) and adds the
rows deleted to `erased`. A worker killed mid-batch loses that batch's transaction and nothing
else; the next attempt starts again from the first step, finds done steps empty, and goes on
(idempotent: nothing deleted twice, nothing counted twice). Cancel stops between batches; what
was deleted stays deleted (Resume goes on).

Before the rows: the files. Export folders of the dataset versions withdrawn or deleted, under
DATA_DIR and in ARTIFACT_STORAGE_URL (webapp.shared_files), and the stored uploads of the
corpus's imports; removing a folder already gone is no error. The marks (planning's models and
withdrawn versions) are written first, so an erasure cut short still lists them.

The receipt, at the end, is an audit entry (action "erasure"): who asked, the target in words
(a patient by a keyed hash of the value), the rows per table, the files, the versions withdrawn,
the models listed. Never a note's text, external id or a patient's value.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Now
from django.utils.translation import gettext as _

from webapp import shared_files
from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus, ImportJob
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.deid.policy import patient_hash
from webapp.erasure import described_text as T
from webapp.erasure import planning
from webapp.erasure.models import DatasetWithdrawal, ErasureRequest, TrainedOnErasedData
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lib.mlflow_rest import MlflowError
from webapp.lifecycle import queue, units
from webapp.lifecycle.heartbeat import Heartbeat, beating
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import MapImportJob, ModelVersion
from webapp.projects.models import Project
from webapp.review.models import ValidationSet
from webapp.training.models import TrainingRun

log = logging.getLogger(__name__)

TASK = "workers.erasure.run_erasure"
Scope = ErasureRequest.Scope


class Stopped(Exception):
    """Cancelled, or this attempt lost the request: stop between batches."""


# ---------------------------------------------------------------- the request


def describe(scope: str, project: Project, corpus: Corpus | None, target: planning.Target, hashes=()) -> str:
    """The target in English words (webapp.erasure.described_text shows them in the reader's language)."""
    where = T.CORPUS % {"name": corpus.name} if corpus is not None else T.PROJECT % {"slug": project.slug}
    if scope == Scope.NOTES:
        return T.NOTES.format(notes=len(target.note_ids), where=where)
    if scope == Scope.PATIENT:
        patients = T.PATIENTS.format(patients=len(hashes))
        return T.PATIENT_NOTES.format(
            notes=len(target.note_ids), patients=patients, hashes=", ".join(hashes), where=where
        )
    return T.WHOLE.format(where=where)


def plan(
    project: Project,
    scope: str,
    *,
    corpus: Corpus | None = None,
    notes=(),
    patient_key: str = "",
    patients=(),
) -> tuple[planning.Plan, list[str]]:
    """The dry run: (counts, the patients' hashes). Raises planning.PlanError."""
    target = planning.resolve(
        project, scope, corpus=corpus, note_external_ids=notes, patient_key=patient_key, patient_values=patients
    )
    hashes = sorted({patient_hash(patient_key, str(v)) for v in patients if str(v).strip()})
    return planning.count(target, describe(scope, project, corpus, target, hashes)), hashes


def request(
    project: Project,
    scope: str,
    *,
    corpus: Corpus | None = None,
    notes=(),
    patient_key: str = "",
    patients=(),
    datasets: str = ErasureRequest.Datasets.WITHDRAW,
    actor=None,
    send: bool = True,
) -> ErasureRequest:
    """Make the request, with its dry run, audit it, and queue it (after the commit)."""
    counted, hashes = plan(project, scope, corpus=corpus, notes=notes, patient_key=patient_key, patients=patients)
    if counted.active:
        busy = ", ".join(f"{n} {what}" for what, n in counted.active.items())
        raise planning.PlanError(
            _("Work on this data is still running (%(busy)s): cancel it or let it end, then erase.") % {"busy": busy}
        )
    user = actor if getattr(actor, "is_authenticated", False) else None
    with transaction.atomic():
        erasure = ErasureRequest.objects.create(
            scope=scope,
            project=project,
            project_slug=project.slug,
            corpus_name=corpus.name if corpus else "",
            described=counted.described[:300],
            target=counted.target.as_json(),
            patient_key=patient_key if scope == Scope.PATIENT else "",
            patient_hashes=hashes if scope == Scope.PATIENT else [],
            datasets=datasets,
            planned=counted.as_json(),
            requested_by=user,
            requested_by_name=user.get_username() if user else str(actor or "command line"),
            heartbeat=Now(),
        )
        record(actor, AuditEvent.Action.ERASURE_REQUESTED, erasure, target=erasure.described, rows=counted.rows)
        if send:
            _send(erasure.pk)
    return erasure


def cancel(erasure: ErasureRequest, actor=None) -> str | None:
    status = units.request_cancel(ErasureRequest, erasure.pk)
    if status is not None:
        record(actor, AuditEvent.Action.CANCEL_JOB, erasure, what="erasure")
    return status


def resume(erasure: ErasureRequest) -> bool:
    with transaction.atomic():
        if not units.requeue(ErasureRequest, erasure.pk):
            return False
        _send(erasure.pk)
    return True


def _send(pk: int) -> None:
    queue.send_on_commit(
        TASK,
        pk,
        on_error=lambda message: ErasureRequest.objects.filter(pk=pk, status=JobStatus.QUEUED).update(error=message),
    )


# ---------------------------------------------------------------- the work


def claim(pk: int, worker: str = "") -> ErasureRequest | None:
    return units.claim(ErasureRequest, pk, worker, select_related=("requested_by",))


def run(erasure: ErasureRequest, batch: int | None = None, *, heart=None) -> str | None:
    """Erase what the claimed request reaches, inside `heart` (the runner's) or a Heartbeat of its
    own, and end it: "done", or "cancelled"; None when this attempt lost it (another worker goes on)."""
    batch = batch or settings.ERASURE_BATCH
    target = planning.Target.from_json(erasure.target)
    with beating(erasure, heart) as heart:
        try:
            mark(erasure, target)
            remove_files(erasure, target, heart)
            forget_mlflow_runs(erasure, target, heart)
            for step in planning.steps_for(target):
                while _erase_batch(erasure, step, target, batch, heart):
                    pass
            forget_note_ids(target)
        except Stopped:
            if heart.lost:
                return None
            return "cancelled" if units.cancelled(erasure, step="") else None
    if erasure.datasets == ErasureRequest.Datasets.REBUILD:
        rebuild(erasure, target)
    erasure.refresh_from_db()
    with transaction.atomic():  # the receipt with the end, or neither (a later attempt ends it)
        if not units.finish(erasure, step=""):
            return None
        receipt(erasure)
    return "done"


def _check(heart: Heartbeat) -> None:
    if heart.cancelling or heart.lost:
        raise Stopped


def _holding(erasure: ErasureRequest, heart: Heartbeat) -> dict:
    """The request's counts, its row locked until the transaction ends; Stopped when this attempt
    lost it or a cancel was asked for (read here, so it stops at once, not at the next beat)."""
    row = units.owned(erasure).select_for_update().values_list("erased", "status").first()
    if row is None:
        heart.lost = True
        raise Stopped
    if row[1] == JobStatus.CANCELLING:
        heart.cancelling = True
        raise Stopped
    return row[0]


def _erase_batch(erasure, step: planning.Step, target, batch: int, heart: Heartbeat) -> int:
    """Delete one batch of `step`'s rows and count them, in one transaction. Returns the rows
    deleted (0: the step is done)."""
    _check(heart)
    model = step.rows(target).model
    with transaction.atomic():
        held = _holding(erasure, heart)
        ids = list(step.queryset(target).values_list("pk", flat=True)[:batch])
        if not ids:
            return 0
        _, per_table = model.objects.filter(pk__in=ids).only("pk").delete()  # never loads note text
        erased = dict(held)
        for table, rows in per_table.items():
            if rows:
                erased[table] = erased.get(table, 0) + rows
        units.owned(erasure).update(erased=erased, step=model._meta.label, heartbeat=Now())
    return len(ids)


def mark(erasure: ErasureRequest, target: planning.Target) -> None:
    """The trained models that saw the notes, and the versions that held them (withdrawn)."""
    for model_version in ModelVersion.objects.filter(pk__in=target.model_ids):
        listed, _ = TrainedOnErasedData.objects.get_or_create(
            model_version=model_version, defaults={"project_id": target.project_id}
        )
        listed.erasures.add(erasure)
    for dataset in target.datasets_withdrawn():
        with transaction.atomic():
            _, made = DatasetWithdrawal.objects.get_or_create(dataset=dataset, defaults={"erasure": erasure})
            if made:
                stats = {**dataset.stats, "examples": 0, "withdrawn_by_erasure": erasure.pk}
                DatasetVersion.objects.filter(pk=dataset.pk).update(stats=stats)


def remove_files(erasure: ErasureRequest, target: planning.Target, heart: Heartbeat) -> None:
    """Export folders of the versions withdrawn or deleted, uploads of the corpus's imports:
    under DATA_DIR and in the storage (a folder already gone is no error). Each is counted once:
    its row forgets its path in the transaction that counts it, so a second attempt counts nothing."""
    from webapp.corpus import uploads

    for dataset_id in planning.withdrawn_or_deleted(target).values_list("pk", flat=True):
        with transaction.atomic():
            _holding(erasure, heart)
        relative = f"exports/dataset-{dataset_id}"
        shutil.rmtree(Path(settings.DATA_DIR) / relative, ignore_errors=True)
        if shared_files.enabled():
            shared_files.remove(relative)
        exports = DatasetExport.objects.filter(dataset_id=dataset_id).exclude(path="")
        _count_outside(erasure, heart, T.EXPORT_FOLDERS, exports, path="")
    for job in planning.imports(target).exclude(upload=""):
        with transaction.atomic():
            _holding(erasure, heart)
        uploads.discard(job.upload)
        stored = ImportJob.objects.filter(pk=job.pk).exclude(upload="")
        _count_outside(erasure, heart, T.UPLOADS, stored, upload="")
    for job in planning.map_import_jobs(target).exclude(upload=""):  # maps computed elsewhere, uploaded
        with transaction.atomic():
            _holding(erasure, heart)
        uploads.discard(job.upload)
        stored = MapImportJob.objects.filter(pk=job.pk).exclude(upload="")
        _count_outside(erasure, heart, T.UPLOADS, stored, upload="")


def forget_mlflow_runs(erasure: ErasureRequest, target: planning.Target, heart: Heartbeat) -> None:
    """The MLflow runs of the training runs and evaluations erased with a corpus (params and
    metrics, no text, but made from the erased notes) are deleted on the tracking server, which
    keeps them until its `mlflow gc` removes them for good. With no tracking server set they are
    counted as left there. A server that cannot be reached fails the erasure (MlflowError): Resume
    once it answers."""
    from webapp.integrations import mlflow_log

    logged = (
        (TrainingRun.objects.filter(pk__in=target.runs_deleted()), "provenance"),
        (RelevanceEvaluation.objects.filter(corpus__in=target.corpora()), "result"),
    )
    for rows, field in logged:
        for pk, logged_as in rows.filter(**{f"{field}__has_key": "mlflow"}).values_list("pk", field):
            with transaction.atomic():
                _holding(erasure, heart)
            run_id = (logged_as.get("mlflow") or {}).get("run_id")
            if run_id and mlflow_log.tracking_uri():
                mlflow_log.client().delete_run(run_id)
                what = T.MLFLOW_RUNS
            else:
                what = T.MLFLOW_RUNS_UNSET
            rest = {key: value for key, value in logged_as.items() if key != "mlflow"}
            row = rows.filter(pk=pk, **{f"{field}__has_key": "mlflow"})
            _count_outside(erasure, heart, what, row, **{field: rest})


def _count_outside(erasure: ErasureRequest, heart: Heartbeat, what: str, rows, **forget) -> None:
    """Count what was removed outside the database under "files: <what>": the `rows` that named
    it forget it (`forget`: the fields' new values) in the transaction that counts them."""
    key = f"files: {what}"
    with transaction.atomic():
        erased = _holding(erasure, heart)
        removed = rows.update(**forget)
        if removed:
            units.owned(erasure).update(erased={**erased, key: erased.get(key, 0) + removed})


def forget_note_ids(target: planning.Target) -> None:
    """Validation sets list their (note, task) items by id: an erased note's items go."""
    if target.whole:
        return
    erased = set(target.note_ids)
    for validation_set in ValidationSet.objects.filter(corpus_id=target.corpus_id):
        kept = [item for item in validation_set.items if int(item[0]) not in erased]
        if len(kept) != len(validation_set.items):
            ValidationSet.objects.filter(pk=validation_set.pk).update(items=kept)


def rebuild(erasure: ErasureRequest, target: planning.Target) -> None:
    """Version + 1 of each withdrawn version that was finished, with the same settings: the
    erased notes are gone, so the new build cannot hold them. Once per version (`rebuilt`)."""
    from webapp.datasets import launch

    for dataset in target.datasets_withdrawn().filter(status=JobStatus.DONE):
        with transaction.atomic():
            done = units.owned(erasure).select_for_update().values_list("rebuilt", flat=True).first()
            if done is None or dataset.pk in {withdrawn for withdrawn, _ in done}:
                continue
            # the version replaces one that was built already, less the erased notes: not gated again
            new = launch.build_again(dataset, actor=erasure.requested_by, gated=False)
            units.owned(erasure).update(rebuilt=[*done, [dataset.pk, new.pk]])


def receipt(erasure: ErasureRequest) -> AuditEvent:
    tables = erasure.tables_erased
    return record(
        erasure.requested_by or f"erasure requested by {erasure.requested_by_name}",
        AuditEvent.Action.ERASURE,
        erasure,
        erasure=erasure.pk,
        project=erasure.project_slug,
        target=erasure.described,
        patient_key=erasure.patient_key,
        patient_hashes=erasure.patient_hashes,
        tables=tables,
        rows=sum(tables.values()),
        files=erasure.files_erased,
        datasets_withdrawn=erasure.withdrawn_names,
        datasets_rebuilt=erasure.rebuilt,
        models_trained_on_erased_data=erasure.models_listed_names,
    )


def fail(erasure: ErasureRequest, exc: BaseException) -> str:
    from django.db.models import ProtectedError, RestrictedError

    if isinstance(exc, ProtectedError | RestrictedError):
        tables = sorted({o._meta.label for o in exc.protected_objects} if hasattr(exc, "protected_objects") else [])
        message = T.REFERRED.format(tables=", ".join(tables) or T.ANOTHER_TABLE)
    elif isinstance(exc, MlflowError):
        message = T.MLFLOW_FAILED % {"reason": exc}
    elif isinstance(exc, shared_files.StorageError):
        message = T.STORAGE_FAILED % {"reason": exc}
    else:
        message = T.UNEXPECTED % {"type": type(exc).__name__, "erasure": erasure.pk}
    units.fail(erasure, message, step="")
    return message
