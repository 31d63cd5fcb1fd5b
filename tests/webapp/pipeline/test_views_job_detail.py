from django.urls import reverse

from webapp.pipeline import chunks
from webapp.pipeline.models import JobStatus, RelevanceChunk, RelevanceJob

Chunk = RelevanceChunk.Status


def detail(job):
    return reverse("pipeline:job_detail", args=[job.pk])


def test_the_page_shows_progress_and_polls_every_two_seconds_while_the_job_runs(client, clinician, launched):
    job = launched()
    client.force_login(clinician)
    html = client.get(detail(job)).content.decode()
    assert "<h1>Relevance job" in html and "0 of 24" in html
    assert f'hx-get="{detail(job)}"' in html and 'hx-trigger="every 2s"' in html
    assert "Cancel job" not in html  # a clinician views only


def test_the_poll_returns_only_the_progress_fragment(client, clinician, launched):
    job = launched()
    chunks.finish(chunks.claim(job.chunks.get(index=0).pk, "w"), 2.0, chunks.Outcome())
    chunks.claim(job.chunks.get(index=1).pk, "w")
    client.force_login(clinician)
    response = client.get(detail(job), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<h1>" not in html and 'id="job-progress"' in html
    assert "4 of 24" in html and "2.00 prompts/s" in html and "about 0:00:10" in html


def test_the_poll_stops_with_286_once_the_job_has_ended(client, clinician, launched):
    job = launched()
    job.chunks.update(status=Chunk.DONE, seconds=1.0)
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.DONE, done=24)
    client.force_login(clinician)
    response = client.get(detail(job), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 286
    assert "Done" in html and "24 of 24" in html and "hx-trigger" not in html


def test_failures_are_shown_in_plain_words(client, clinician, launched):
    job = launched()
    chunks.fail(
        chunks.claim(job.chunks.get(index=1).pk, "w"),
        "Could not compute relevance (ModelNotFoundError): model 'x' is not converted yet",
    )
    for index in (0, 2, 3, 4, 5):
        chunks.finish(chunks.claim(job.chunks.get(index=index).pk, "w"), 1.0, chunks.Outcome())
    client.force_login(clinician)
    html = client.get(detail(job)).content.decode()
    assert "1 of 6 chunks failed" in html and "Chunk 2: Could not compute relevance" in html
    assert "1 failed" in html


def test_a_researcher_gets_cancel_while_running_and_resume_once_cancelled(client, researcher, launched):
    job = launched()
    client.force_login(researcher)
    html = client.get(detail(job)).content.decode()
    assert reverse("pipeline:job_cancel", args=[job.pk]) in html
    assert reverse("pipeline:job_resume", args=[job.pk]) not in html
    RelevanceJob.objects.filter(pk=job.pk).update(status=JobStatus.CANCELLED)
    html = client.get(detail(job)).content.decode()
    assert reverse("pipeline:job_cancel", args=[job.pk]) not in html
    assert reverse("pipeline:job_resume", args=[job.pk]) in html


def test_a_job_that_does_not_exist_is_not_found(client, clinician):
    client.force_login(clinician)
    assert client.get(reverse("pipeline:job_detail", args=[999999])).status_code == 404


def test_a_user_outside_the_jobs_project_does_not_find_it(client, norole_user, launched):
    job = launched()
    client.force_login(norole_user)
    assert client.get(detail(job)).status_code == 404  # its existence is not disclosed
