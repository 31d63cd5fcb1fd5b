from django.urls import reverse

from webapp.pipeline.models import RelevanceJob


def test_every_viewer_sees_the_jobs_with_status_corpus_model_method_and_progress(client, clinician, launched):
    job = launched()
    RelevanceJob.objects.filter(pk=job.pk).update(done=8)
    client.force_login(clinician)
    html = client.get(reverse("pipeline:job_list")).content.decode()
    assert f'href="{reverse("pipeline:job_detail", args=[job.pk])}"' in html
    assert "Queued" in html and "ward" in html and "tiny-llama" in html and "AttnLRP" in html
    assert "8 / 24" in html
    assert "New relevance job" not in html  # a clinician cannot launch


def test_a_researcher_gets_the_launch_link(client, researcher, db):
    client.force_login(researcher)
    html = client.get(reverse("pipeline:job_list")).content.decode()
    assert reverse("pipeline:job_launch") in html and "No relevance job yet" in html


def test_the_list_needs_a_role(client, norole_user):
    client.force_login(norole_user)
    assert client.get(reverse("pipeline:job_list")).status_code == 403


def test_the_list_needs_a_login(client, db):
    response = client.get(reverse("pipeline:job_list"))
    assert response.status_code == 302 and "login" in response["Location"]


def test_the_list_polls_itself_while_a_job_is_active_and_stops_once_none_is(client, clinician, launched):
    job = launched()
    client.force_login(clinician)
    url = reverse("pipeline:job_list")
    html = client.get(url).content.decode()
    assert f'hx-get="{url}"' in html and 'hx-trigger="every' in html and 'id="job-list"' in html
    poll = client.get(url, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and "<h1>" not in poll.content.decode() and 'id="job-list"' in poll.content.decode()
    RelevanceJob.objects.filter(pk=job.pk).update(status="done", done=24)
    poll = client.get(url, HTTP_HX_REQUEST="true")
    assert poll.status_code == 286 and "hx-trigger" not in poll.content.decode() and "Done" in poll.content.decode()
    assert "hx-trigger" not in client.get(url).content.decode()


def test_the_cancel_button_asks_for_confirmation(client, researcher, launched):
    job = launched()
    client.force_login(researcher)
    html = client.get(reverse("pipeline:job_detail", args=[job.pk])).content.decode()
    form = html[html.index(f'action="{reverse("pipeline:job_cancel", args=[job.pk])}"') :]
    assert 'data-confirm="Cancel this job?"' in form[: form.index(">")]
    assert "js/confirm.js" in html
