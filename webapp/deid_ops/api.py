"""The API's de-identification jobs (mounted under /api/ by webapp.api.api): list and read them
(every action: a corpus de-identified into a new one, a residual scan), launch a corpus's
de-identification into a new corpus, cancel and resume, as the pages do (webapp.deid_ops.jobs).
Counts per identifier type only, never a value."""

from ninja import Query, Router, Status
from ninja.errors import HttpError

from webapp.corpus.access import corpus_for
from webapp.db.pagination import PageQuery, page
from webapp.deid.access import job_for
from webapp.deid.models import DeidJob
from webapp.deid_ops import jobs
from webapp.projects.roles import Capability

router = Router(tags=["de-identification"])


def deid_job(job: DeidJob) -> dict:
    return {
        "id": job.pk,
        "status": job.status,
        "error": job.error,
        "attempts": job.attempts,
        "started": job.started,
        "finished": job.finished,
        "action": job.action,
        "project": job.project_id,
        "source": job.source_id,  # the corpus read
        "target": job.target_id,  # the corpus made (deidentify)
        "target_name": job.target_name,
        "notes_done": job.notes_done,
        "notes_total": job.notes_total,
        "notes_with_findings": job.notes_with_findings,
        "counts": job.counts,  # identifiers per type, never values
        "created": job.created,
    }


@router.get("/deid-jobs", summary="De-identification jobs and residual scans of the token's projects")
def list_deid_jobs(request, query: Query[PageQuery]):
    return page(request, DeidJob.objects.visible_to(request.user), query, deid_job)


@router.get("/deid-jobs/{job_id}")
def get_deid_job(request, job_id: int):
    return deid_job(job_for(request.user, job_id))


@router.post(
    "/corpora/{corpus_id}/deidentify",
    response={202: dict},
    summary="De-identify a corpus into a new corpus '<name> (de-identified)', as its page does",
)
def launch_deidentify(request, corpus_id: int):
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        job = jobs.launch_deidentify(corpus, actor=request.user)
    except jobs.LaunchRefused as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, deid_job(job))


@router.post("/deid-jobs/{job_id}/cancel")
def cancel_deid_job(request, job_id: int):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    if jobs.cancel(job, request.user) is None:
        raise HttpError(409, "This job has ended; there is nothing to cancel.")
    job.refresh_from_db()
    return deid_job(job)


@router.post("/deid-jobs/{job_id}/resume")
def resume_deid_job(request, job_id: int):
    job = job_for(request.user, job_id, Capability.LAUNCH)
    if not jobs.resume(job, request.user):
        raise HttpError(409, "Only a cancelled or failed job, or one whose worker was lost, can be resumed.")
    job.refresh_from_db()
    return deid_job(job)
