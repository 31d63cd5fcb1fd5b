"""De-identification jobs (deid.DeidJob) as long work: launched, cancelled, resumed, claimed.

    launch_deidentify(corpus, actor)  in the web request: the new corpus "<name> (de-identified)"
                                      and a queued job that fills it (webapp.deid_ops.deidentifying),
                                      sent to workers.deid.run_job after the commit
    launch(project, action, source)   any action's job (a residual scan: webapp.deid_ops.scanning)
    cancel(job, actor)                queued: cancelled at once; running: at the next batch
    resume(job, actor)                cancelled, failed, or lost: queued again; it goes on where
                                      it stopped (the notes copied stay, none is copied twice)
    claim(pk, worker)                 in the worker (webapp.lifecycle.units.claim)

Who: whoever may launch work in the project (researchers and admins, Capability.LAUNCH), as for
relevance jobs, dataset builds and imports. Every launch, cancel and resume is audited.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models.functions import Now
from django.utils.translation import gettext as _

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.corpus.models import Corpus
from webapp.deid import policy
from webapp.deid.models import DeidJob
from webapp.lifecycle import queue, units
from webapp.lifecycle.status import ACTIVE, JobStatus

TASK = "workers.deid.run_job"
SUFFIX = " (de-identified)"
NAME_LENGTH = 200  # Corpus.name


class LaunchRefused(Exception):
    """Said to the user as written."""


class JobError(Exception):
    """A job's work cannot go on; the message says why in plain words (never a value) and is
    shown as written (a residual scan's ScanError is one)."""


def target_name(source: Corpus) -> str:
    """ "<name> (de-identified)", or with a number when that is taken in the project; cut to fit."""
    taken = set(Corpus.objects.filter(project_id=source.project_id).values_list("name", flat=True))
    number = 1
    while True:
        suffix = SUFFIX if number == 1 else f" (de-identified {number})"
        name = source.name[: NAME_LENGTH - len(suffix)] + suffix
        if name not in taken:
            return name
        number += 1


def launch_deidentify(source: Corpus, actor=None) -> DeidJob:
    """Make the new corpus and queue the job that fills it. Raises LaunchRefused: the corpus is
    de-identified already, another de-identification of it is under way, or the project's policy
    cannot be applied to it (its language, a missing mapping key, a NER folder that will not load)."""
    if source.deidentified:
        raise LaunchRefused(_("Corpus %(corpus)s is de-identified already.") % {"corpus": source.name})
    if DeidJob.objects.filter(source=source, action=DeidJob.Action.DEIDENTIFY, status__in=ACTIVE).exists():
        raise LaunchRefused(
            _("Corpus %(corpus)s is being de-identified already; its job's page follows it.") % {"corpus": source.name}
        )
    try:
        policy.check(source.project, source.language)
    except policy.PolicyError as exc:
        raise LaunchRefused(str(exc)) from None
    try:
        with transaction.atomic():
            target = Corpus.objects.create(
                project_id=source.project_id,
                name=target_name(source),
                language=source.language,
                description=f"De-identified from corpus {source.name}.",
                source=source.source,
                deidentified=True,
                deidentified_from=source,
            )
            return launch(
                source.project, DeidJob.Action.DEIDENTIFY, source, actor, target=target, target_name=target.name
            )
    except IntegrityError:  # another corpus took the name at the same moment
        raise LaunchRefused(
            _("Another corpus of that name was made at the same moment; please launch again.")
        ) from None


def launch(project, action: str, source: Corpus | None, actor=None, **fields) -> DeidJob:
    """A queued job of `action`, audited, sent after the commit."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    total = source.notes.count() if source is not None else 0
    with transaction.atomic():
        job = DeidJob.objects.create(
            action=action,
            project=project,
            source=source,
            notes_total=total,
            created_by=user,
            heartbeat=Now(),  # when it was sent: the sweeper sends it again if the message is lost
            **fields,
        )
        record(
            actor,
            AuditEvent.Action.LAUNCH_JOB,
            job,
            what=f"de-identification job ({action})",
            corpus=source.pk if source is not None else None,
            target=job.target_id,
            notes=total,
        )
        _send(job.pk)
    return job


def cancel(job: DeidJob, actor=None) -> str | None:
    """ "cancelled", "cancelling" (the worker stops after its batch), or None (it has ended)."""
    status = units.request_cancel(DeidJob, job.pk)
    if status is not None:
        record(actor, AuditEvent.Action.CANCEL_JOB, job, what=f"de-identification job ({job.action})")
    return status


def resume(job: DeidJob, actor=None) -> bool:
    with transaction.atomic():
        if not units.requeue(DeidJob, job.pk):
            return False
        record(actor, AuditEvent.Action.LAUNCH_JOB, job, what=f"de-identification job ({job.action})", resumed=True)
        _send(job.pk)
    return True


def fail_unexpectedly(job: DeidJob, exc: BaseException) -> bool:
    """Record why the work stopped: a policy that cannot be applied, or a scan's own error, as
    said (plain words, never a value); any other error by its type only (a database error's text
    can quote a row). The open batch was rolled back; what was committed stays."""
    if isinstance(exc, (policy.PolicyError, JobError)):
        message = f"{exc} Resume once it is corrected."
    else:
        message = (
            f"The job stopped on an unexpected error ({type(exc).__name__}); the worker log has the details "
            f"under deid job {job.pk}. Resume goes on where it stopped."
        )
    return units.fail(job, message)


def claim(pk: int, worker: str = "") -> DeidJob | None:
    return units.claim(DeidJob, pk, worker, select_related=("project", "source", "target", "created_by"))


def _send(pk: int) -> None:
    queue.send_on_commit(
        TASK,
        pk,
        on_error=lambda message: DeidJob.objects.filter(pk=pk, status=JobStatus.QUEUED).update(error=message),
    )


def recent(corpus: Corpus, limit: int = 10):
    """The latest jobs that read or made this corpus."""
    from django.db.models import Q

    return DeidJob.objects.filter(Q(source=corpus) | Q(target=corpus)).select_related("target", "source")[:limit]
