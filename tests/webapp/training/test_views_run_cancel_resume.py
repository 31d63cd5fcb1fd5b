from django.urls import reverse

from webapp.audit.models import AuditEvent
from webapp.training import runs
from webapp.training.models import TrainingRun


def test_a_researcher_cancels_a_running_run_and_it_is_audited(client, researcher, make_run):
    run = make_run()
    runs.claim(run.pk)
    client.force_login(researcher)
    response = client.post(reverse("training:run_cancel", args=[run.pk]), follow=True)
    assert TrainingRun.objects.get(pk=run.pk).status == "cancelling"
    assert b"saves a checkpoint" in response.content
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB, actor=researcher).exists()


def test_resume_requeues_a_cancelled_run(client, admin_user, make_run):
    run = make_run(status="cancelled", checkpoint_step=5)
    client.force_login(admin_user)
    response = client.post(reverse("training:run_resume", args=[run.pk]), follow=True)
    assert TrainingRun.objects.get(pk=run.pk).status == "queued"
    assert b"continues from its last checkpoint" in response.content


def test_a_refused_action_is_said_plainly(client, admin_user, make_run):
    run = make_run(status="done")
    client.force_login(admin_user)
    response = client.post(reverse("training:run_resume", args=[run.pk]), follow=True)
    assert b"nothing to resume" in response.content
    response = client.post(reverse("training:run_cancel", args=[run.pk]), follow=True)
    assert b"Only a queued or running run can be cancelled" in response.content


def test_cancel_and_resume_accept_only_post(client, admin_user, make_run):
    run = make_run()
    client.force_login(admin_user)
    assert client.get(reverse("training:run_cancel", args=[run.pk])).status_code == 405
