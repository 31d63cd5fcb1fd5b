"""The dataset page's honest status (stalled, restarted, cancelling) and its Cancel and Build
again buttons, per role."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from webapp.audit.models import AuditEvent
from webapp.datasets.models import DatasetExport, DatasetVersion
from webapp.lifecycle import queue
from webapp.lifecycle.status import JobStatus


def running(dataset, *, silent_for: float = 0, **fields):
    """The build held by a worker last heard of `silent_for` seconds ago."""
    heartbeat = timezone.now() - timedelta(seconds=silent_for)
    DatasetVersion.objects.filter(pk=dataset.pk).update(
        status=JobStatus.RUNNING, worker="w1@host", attempts=1, started=heartbeat, heartbeat=heartbeat, **fields
    )
    dataset.refresh_from_db()
    return dataset


def stalled(dataset, **fields):
    return running(dataset, silent_for=settings.WORK_STALL_SECONDS + 30, **fields)


@pytest.fixture
def sent(monkeypatch):
    messages = []
    monkeypatch.setattr(queue, "send", lambda task, *ids: messages.append((task, *ids)) or len(ids))
    return messages


def test_a_stalled_build_says_its_worker_was_lost_and_when(client, clinician, make_dataset):
    dataset = stalled(make_dataset(), maps_total=10, maps_done=4)
    lost_at = timezone.localtime(dataset.heartbeat).strftime("%H:%M")
    client.force_login(clinician)
    response = client.get(reverse("datasets:detail", args=[dataset.pk]), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200 and 'hx-trigger="every 2s"' in html  # it keeps polling for the recovery
    assert f"stalled: worker lost at {lost_at}" in html and "status-stalled" in html
    assert "stopped answering after 4 of 10 relevance maps" in html and "<progress" not in html
    assert ">Running<" not in html


def test_the_list_shows_a_stalled_build_as_stalled(client, clinician, make_dataset):
    dataset = stalled(make_dataset())
    client.force_login(clinician)
    html = client.get(reverse("datasets:list")).content.decode()
    assert dataset.status_text() in html and "stalled: worker lost at" in html


def test_a_running_build_shows_its_progress_and_a_cancel_button_to_a_researcher(client, researcher, make_dataset):
    dataset = running(make_dataset(), maps_total=10, maps_done=4)
    client.force_login(researcher)
    html = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert ">Running<" in html and "4 of 10 relevance maps" in html
    assert reverse("datasets:cancel", args=[dataset.pk]) in html and "Cancel build" in html
    assert "Build again" not in html


def test_a_build_restarted_after_a_lost_worker_says_so(client, clinician, make_dataset):
    dataset = running(
        make_dataset(), error="Worker w0@host was lost at 10:00:00 (no heartbeat for 60 s); queued again automatically."
    )
    client.force_login(clinician)
    html = client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert "Worker w0@host was lost at 10:00:00" in html and ">Running<" in html


def test_a_clinician_sees_no_cancel_and_may_not_post_it(client, clinician, make_dataset):
    dataset = running(make_dataset())
    client.force_login(clinician)
    assert "Cancel build" not in client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    assert client.post(reverse("datasets:cancel", args=[dataset.pk])).status_code == 403
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.RUNNING


def test_cancelling_a_running_build_asks_its_worker_to_stop_and_is_audited(client, researcher, make_dataset):
    dataset = running(make_dataset())
    client.force_login(researcher)
    response = client.post(reverse("datasets:cancel", args=[dataset.pk]), follow=True)
    html = response.content.decode()
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.CANCELLING and "Cancelling: the build stops" in html
    assert "Stopping after the maps being read now" in html
    event = AuditEvent.objects.get(action=AuditEvent.Action.CANCEL_JOB)
    assert event.actor == researcher and event.object_id == str(dataset.pk)


def test_cancelling_a_queued_build_ends_it_at_once(client, researcher, make_dataset):
    dataset = make_dataset()
    client.force_login(researcher)
    html = client.post(reverse("datasets:cancel", args=[dataset.pk]), follow=True).content.decode()
    dataset.refresh_from_db()
    assert dataset.status == JobStatus.CANCELLED and "The build is cancelled." in html and "Build again" in html


def test_cancelling_an_ended_build_says_why_not(client, researcher, built):
    client.force_login(researcher)
    html = client.post(reverse("datasets:cancel", args=[built.pk]), follow=True).content.decode()
    assert "Only a queued or running build can be cancelled." in html
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.CANCEL_JOB).exists()


def test_build_again_on_a_stalled_build_queues_it_at_once(
    client, researcher, make_dataset, sent, django_capture_on_commit_callbacks
):
    dataset = stalled(make_dataset(), maps_total=10, maps_done=4)
    client.force_login(researcher)
    assert "Build again now" in client.get(reverse("datasets:detail", args=[dataset.pk])).content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("datasets:build_again", args=[dataset.pk]), follow=True)
    dataset.refresh_from_db()
    assert (dataset.status, dataset.maps_done, dataset.version) == (JobStatus.QUEUED, 0, 1)
    assert sent == [("workers.datasets.build_dataset", dataset.pk)]
    assert "still being built" not in response.content.decode()
    assert AuditEvent.objects.get(action=AuditEvent.Action.LAUNCH_JOB).details["was"].startswith("stalled")


def test_build_again_on_a_live_build_is_refused(client, researcher, make_dataset, sent):
    dataset = running(make_dataset())
    client.force_login(researcher)
    html = client.post(reverse("datasets:build_again", args=[dataset.pk]), follow=True).content.decode()
    assert "This dataset is still being built." in html and sent == []


def test_a_running_export_shows_its_rows_so_far_and_a_cancel_button(client, researcher, built):
    job = DatasetExport.objects.create(
        dataset=built, format="hf", status=JobStatus.RUNNING, rows=4000, heartbeat=timezone.now(), attempts=1
    )
    client.force_login(researcher)
    html = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert "4000 so far" in html and reverse("datasets:export_cancel", args=[built.pk, job.pk]) in html
    client.post(reverse("datasets:export_cancel", args=[built.pk, job.pk]))
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLING
    assert AuditEvent.objects.get(action=AuditEvent.Action.CANCEL_JOB).object_id == str(job.pk)


def test_a_stalled_export_says_so(client, researcher, built):
    stale = timezone.now() - timedelta(seconds=settings.WORK_STALL_SECONDS + 30)
    DatasetExport.objects.create(dataset=built, format="hf", status=JobStatus.RUNNING, heartbeat=stale, attempts=1)
    client.force_login(researcher)
    html = client.get(reverse("datasets:detail", args=[built.pk])).content.decode()
    assert f"stalled: worker lost at {timezone.localtime(stale):%H:%M}" in html


def test_a_clinician_may_not_cancel_an_export(client, clinician, built):
    job = DatasetExport.objects.create(dataset=built, format="hf")
    client.force_login(clinician)
    assert client.post(reverse("datasets:export_cancel", args=[built.pk, job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED


def test_a_cancelled_build_ends_the_poll_and_says_no_examples_were_kept(client, clinician, make_dataset):
    dataset = make_dataset()
    DatasetVersion.objects.filter(pk=dataset.pk).update(status=JobStatus.CANCELLED, finished=timezone.now())
    client.force_login(clinician)
    response = client.get(reverse("datasets:detail", args=[dataset.pk]), HTTP_HX_REQUEST="true")
    assert response.status_code == 286 and "no examples were kept" in response.content.decode()
