import pytest
from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.pipeline import jobs
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status


@pytest.fixture(autouse=True)
def no_broker(monkeypatch):
    monkeypatch.setattr(jobs, "enqueue_chunks", lambda job_id: 0)
    monkeypatch.setattr(jobs, "send_chunks", lambda job_id, ids: 0)


def cancel(job):
    return reverse("pipeline:job_cancel", args=[job.pk])


def resume(job):
    return reverse("pipeline:job_resume", args=[job.pk])


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_cancel_stops_the_job_and_is_audited(client, request, launched, role, django_capture_on_commit_callbacks):
    user = request.getfixturevalue(role)
    job = launched()
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(cancel(job), follow=True, REMOTE_ADDR="192.0.2.44")
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.chunks.filter(status=Chunk.CANCELLED).count() == 6
    event = AuditEvent.objects.get(action=AuditEvent.Action.CANCEL_JOB, actor=user, object_id=str(job.pk))
    assert event.ip == "192.0.2.44"  # the request's address, though the domain code was given none
    assert "Cancelling" in response.content.decode()


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_resume_queues_the_unfinished_chunks_and_is_audited(
    client, request, launched, role, django_capture_on_commit_callbacks
):
    user = request.getfixturevalue(role)
    job = launched()
    job.chunks.filter(index__gt=1).update(status=Chunk.CANCELLED)
    job.chunks.filter(index__lte=1).update(status=Chunk.DONE)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(resume(job), follow=True, REMOTE_ADDR="192.0.2.45")
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and job.chunks.filter(status=Chunk.QUEUED).count() == 4
    assert "4 chunks queued again" in response.content.decode()
    assert AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB, actor=user, details__resumed=True).ip == (
        "192.0.2.45"
    )


@pytest.mark.parametrize("user_fixture, status", [("clinician", 403), ("norole_user", 404)])
def test_others_may_neither_cancel_nor_resume(client, request, launched, user_fixture, status):
    """A clinician of the job's project may not act on it (403); a non-member does not find it (404)."""
    job = launched()
    client.force_login(request.getfixturevalue(user_fixture))
    assert client.post(cancel(job)).status_code == status
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    assert client.post(resume(job)).status_code == status
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and not job.chunks.exclude(status=Chunk.QUEUED).exists()
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB).exists()


def test_cancel_and_resume_accept_only_post(client, researcher, launched):
    job = launched()
    client.force_login(researcher)
    assert client.get(cancel(job)).status_code == 405
    assert client.get(resume(job)).status_code == 405


def test_a_refusal_is_explained_on_the_page(client, researcher, launched):
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    client.force_login(researcher)
    html = client.post(cancel(job), follow=True).content.decode()
    assert "Only a queued or running job can be cancelled; this one is done." in html
    html = client.post(resume(job), follow=True).content.decode()
    assert "nothing to resume" in html


def test_cancel_of_a_missing_job_is_not_found(client, researcher, db):
    client.force_login(researcher)
    assert client.post(reverse("pipeline:job_cancel", args=[999999])).status_code == 404
