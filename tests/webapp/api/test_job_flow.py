"""A relevance job by API only: launch (as the Jobs page does: webapp.pipeline.jobs.launch, its
planning message sent to the real broker), its status, cancel, resume; bad input is a 400 saying why."""

from webapp.audit.models import AuditEvent
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import RelevanceJob


def _body(own, **changes):
    return {
        "corpus": own["corpus"].pk,
        "model_version": own["model"].pk,
        "task_selection": "list",
        "tasks": ["heart-rate"],
        "sample_k": 1,
        **changes,
    }


def test_launch_status_cancel_resume(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    launched = client.post("/api/jobs", _body(own), content_type="application/json", headers=bearer(secret))
    assert launched.status_code == 202, launched.content
    job_id = launched.json()["id"]
    job = RelevanceJob.objects.get(pk=job_id)
    assert job.created_by == researcher and job.status == JobStatus.PLANNING
    assert AuditEvent.objects.filter(action=AuditEvent.Action.LAUNCH_JOB, actor=researcher).exists()

    status = client.get(f"/api/jobs/{job_id}", headers=bearer(secret)).json()
    assert status["status"] == "planning" and status["corpus"] == own["corpus"].pk

    cancelled = client.post(f"/api/jobs/{job_id}/cancel", headers=bearer(secret))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.post(f"/api/jobs/{job_id}/cancel", headers=bearer(secret)).status_code == 409

    resumed = client.post(f"/api/jobs/{job_id}/resume", headers=bearer(secret))
    assert resumed.status_code == 200 and resumed.json()["status"] == "planning"


def test_a_bad_launch_says_why(client, researcher, own, make_token, bearer):
    _, secret = make_token(researcher, [own["project"]])
    unknown = client.post(
        "/api/jobs", _body(own, tasks=["nope"]), content_type="application/json", headers=bearer(secret)
    )
    assert unknown.status_code == 400 and "nope" in unknown.json()["detail"]
    bad_k = client.post(
        "/api/jobs",
        _body(own, task_selection="sample", tasks=[], sample_k=0),
        content_type="application/json",
        headers=bearer(secret),
    )
    assert bad_k.status_code == 400 and "k must be" in bad_k.json()["detail"]
    assert not RelevanceJob.objects.exists()


def test_tasks_are_named_by_slug_or_by_description(client, researcher, own, make_token, bearer):
    from webapp.corpus.models import Task

    Task.objects.create(slug="diagn-stico", description="diagnóstico", options=["sì", "no"])  # an older slug
    _, secret = make_token(researcher, [own["project"]])
    for named in (["diagnóstico", "heart rate"], ["diagno\u0301stico", "heart-rate"], ["diagn-stico", "heart rate"]):
        launched = client.post(
            "/api/jobs", _body(own, tasks=named), content_type="application/json", headers=bearer(secret)
        )
        assert launched.status_code == 202, launched.json()
        job = RelevanceJob.objects.get(pk=launched.json()["id"])
        assert sorted(job.tasks.values_list("slug", flat=True)) == ["diagn-stico", "heart-rate"]
    unknown = client.post(
        "/api/jobs", _body(own, tasks=["diagnostic"]), content_type="application/json", headers=bearer(secret)
    )
    assert unknown.status_code == 400 and unknown.json()["detail"] == "Unknown task(s): diagnostic."
