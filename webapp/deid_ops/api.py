"""The API's de-identification jobs and residual scans (mounted under /api/ by webapp.api.api):
list and read the jobs (every action: a corpus de-identified into a new one, a residual scan),
launch a corpus's de-identification into a new corpus, as the pages do (webapp.deid_ops.jobs);
scan a corpus for identifiers left and read its latest scan (webapp.deid_ops.scanning); cancel
and resume are webapp.api.work's. Counts per identifier type only, never a value."""

from datetime import datetime

from ninja import Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import Field

from webapp.corpus.access import corpus_for
from webapp.db.api import Error
from webapp.db.pagination import PageQuery, page, page_of
from webapp.deid.access import job_for
from webapp.deid.models import DeidJob
from webapp.deid_ops import jobs, scanning
from webapp.lifecycle.schemas import Conflict, UnitOut
from webapp.lifecycle.status import JobStatus
from webapp.projects.roles import Capability

router = Router(tags=["de-identification"])
COUNTS = "Identifiers found per type, never values."


class DeidJobOut(UnitOut):
    action: str
    project: int = Field(alias="project_id")
    source: int | None = Field(alias="source_id", description="The corpus read.")
    target: int | None = Field(alias="target_id", description="The corpus made (deidentify).")
    target_name: str
    notes_done: int
    notes_total: int
    notes_with_findings: int
    counts: dict[str, int] = Field(description=COUNTS)
    created: datetime


class ScanOut(Schema):
    id: int
    corpus: int | None
    status: JobStatus
    error: str
    created: datetime
    started: datetime | None
    finished: datetime | None
    notes_done: int
    notes_total: int
    notes_with_findings: int
    counts: dict[str, int] = Field(description=COUNTS)


@router.get(
    "/deid-jobs",
    response=page_of(DeidJobOut),
    summary="De-identification jobs and residual scans of the token's projects",
)
def list_deid_jobs(request, query: Query[PageQuery]):
    return page(request, DeidJob.objects.visible_to(request.user), query)


@router.get("/deid-jobs/{job_id}", response={200: DeidJobOut, 404: Error})
def get_deid_job(request, job_id: int):
    return job_for(request.user, job_id)


@router.post(
    "/corpora/{corpus_id}/deidentify",
    response={202: DeidJobOut, 404: Error, 409: Conflict},
    summary="De-identify a corpus into a new corpus '<name> (de-identified)', as its page does",
)
def launch_deidentify(request, corpus_id: int):
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        job = jobs.launch_deidentify(corpus, actor=request.user)
    except jobs.LaunchRefused as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, job)


@router.post(
    "/corpora/{corpus_id}/scans",
    response={202: ScanOut, 404: Error, 409: Conflict},
    summary="Scan a corpus for identifiers left: counts per type, never values",
)
def launch_scan(request, corpus_id: int):
    corpus = corpus_for(request.user, corpus_id, Capability.LAUNCH)
    try:
        job = scanning.launch(corpus, actor=request.user)
    except scanning.ScanError as exc:
        raise HttpError(409, str(exc)) from None
    return Status(202, scanning.result(job))


@router.get(
    "/corpora/{corpus_id}/scans/latest",
    response={200: ScanOut, 404: Error},
    summary="The latest residual scan of a corpus, as it goes",
)
def latest_scan(request, corpus_id: int):
    job = scanning.latest(corpus_for(request.user, corpus_id))
    if job is None:
        raise HttpError(404, "This corpus has not been scanned yet.")
    return scanning.result(job)
