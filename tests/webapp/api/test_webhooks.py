"""Webhooks against a real HTTP server on localhost (http.server in a thread): the body is signed
with HMAC-SHA256 of the webhook's secret, a 500 is tried again after the back-off and the
delivery log keeps every attempt; an ended unit of work is announced once, with ids, statuses and
counts and no note text."""

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webapp.api import events, webhooks
from webapp.api.models import Webhook, WebhookDelivery
from webapp.evaluation.models import RelevanceEvaluation
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import PeakProfile, RelevanceJob

SECRET = "a-webhook-secret-of-32-characters"


@pytest.fixture
def receiver():
    """A local server answering the statuses in `receiver.answers` in turn (then 200), keeping
    every request's headers and body."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            server.received.append((self.headers, body))  # names: case-insensitive
            self.send_response(server.answers.pop(0) if server.answers else 200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.received, server.answers = [], []
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def hook(own, receiver):
    return Webhook.objects.create(project=own["project"], url=receiver.url, secret=SECRET, events=[])


def _ended_job(own, status=JobStatus.DONE):
    return RelevanceJob.objects.create(
        corpus=own["corpus"], model_version=own["model"], status=status, total=4, done=4, chunk_count=1, chunks_done=1
    )


def test_a_500_is_retried_with_back_off_and_the_delivery_is_logged(
    receiver, hook, own, settings, django_capture_on_commit_callbacks
):
    settings.WEBHOOK_BACKOFF_SECONDS = 3
    receiver.answers = [500]
    with django_capture_on_commit_callbacks():  # the task message goes to the real broker; no worker takes it here
        (delivery,) = webhooks.queue_event(own["project"], "relevance_job", "k", {"event": "relevance_job"})
    assert webhooks.attempt(delivery.pk) == 3  # the first retry waits BACKOFF_SECONDS
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("pending", 1, 500)
    assert webhooks.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)
    assert len(receiver.received) == 2
    assert receiver.received[0][1] == receiver.received[1][1]  # the same body, the same delivery id


def test_the_signature_is_the_hmac_of_the_body(receiver, hook, own):
    delivery = WebhookDelivery.objects.create(webhook=hook, event="test", key="t", payload={"event": "test"})
    webhooks.attempt(delivery.pk)
    headers, body = receiver.received[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-DSM-Signature"], expected)
    assert headers["X-DSM-Event"] == "test" and headers["X-DSM-Delivery"] == str(delivery.pk)
    assert json.loads(body)["delivery"] == delivery.pk


def test_it_gives_up_after_the_last_attempt(receiver, hook, own):
    receiver.answers = [503] * webhooks.MAX_ATTEMPTS
    delivery = WebhookDelivery.objects.create(webhook=hook, event="test", key="t", payload={})
    waits = [webhooks.attempt(delivery.pk) for _ in range(webhooks.MAX_ATTEMPTS)]
    assert waits[-1] is None and all(w is not None for w in waits[:-1])
    assert waits[1] == 2 * waits[0]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", webhooks.MAX_ATTEMPTS)


def test_a_refused_connection_is_logged_and_retried(hook, own):
    Webhook.objects.filter(pk=hook.pk).update(url="http://127.0.0.1:9/closed")
    delivery = WebhookDelivery.objects.create(webhook=hook, event="test", key="t", payload={})
    assert webhooks.attempt(delivery.pk) is not None
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.error and delivery.response_code is None


def test_an_ended_job_is_announced_once_without_note_text(receiver, hook, own, django_capture_on_commit_callbacks):
    job = _ended_job(own)
    with django_capture_on_commit_callbacks():
        assert events.unit_ended("relevance plan", job) == 1
        assert events.unit_ended("relevance plan", job) == 0  # seen again: not sent again
    delivery = WebhookDelivery.objects.get()
    webhooks.attempt(delivery.pk)
    payload = json.loads(receiver.received[0][1])
    assert payload["event"] == "relevance_job" and payload["status"] == "done"
    assert payload["object"] == {"type": "pipeline.RelevanceJob", "id": job.pk}
    assert payload["counts"]["done"] == 4 and payload["project"]["id"] == own["project"].pk
    for note in own["notes"]:
        assert note.text.encode() not in receiver.received[0][1]


def test_a_running_job_or_an_unwanted_event_is_not_announced(hook, own):
    assert events.unit_ended("relevance plan", _ended_job(own, JobStatus.RUNNING)) == 0
    Webhook.objects.filter(pk=hook.pk).update(events=["training_run"])
    assert events.unit_ended("relevance plan", _ended_job(own)) == 0


def test_the_celery_task_retries_while_the_receiver_fails(receiver, hook, own, settings):
    """The task itself (run in this process by apply(), which runs its retries at once)."""
    from workers.webhooks import deliver

    settings.WEBHOOK_BACKOFF_SECONDS = 0
    receiver.answers = [500, 502]
    delivery = WebhookDelivery.objects.create(webhook=hook, event="test", key="t", payload={})
    deliver.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 3)


def test_a_queued_unit_cancelled_by_the_api_is_announced(
    client, researcher, receiver, hook, own, make_token, bearer, django_capture_on_commit_callbacks
):
    """No task of a queued unit runs once it is cancelled: the cancel itself announces it."""
    profile = PeakProfile.objects.create(name="hook-profile")
    evaluation = RelevanceEvaluation.objects.create(
        corpus=own["corpus"], model_version=own["model"], profile=profile, total=3
    )
    _, secret = make_token(researcher, [own["project"]])
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(f"/api/evaluations/{evaluation.pk}/cancel", headers=bearer(secret))
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, delivery.payload["status"]) == ("evaluation", "cancelled")
    assert delivery.payload["object"] == {"type": "evaluation.RelevanceEvaluation", "id": evaluation.pk}


def test_a_relevance_job_whose_chunks_were_all_queued_is_announced_when_cancelled(
    receiver, hook, own, django_capture_on_commit_callbacks
):
    from webapp.pipeline import jobs
    from webapp.pipeline.models import RelevanceChunk

    job = RelevanceJob.objects.create(
        corpus=own["corpus"], model_version=own["model"], status=JobStatus.QUEUED, total=2, chunk_count=1
    )
    RelevanceChunk.objects.create(job=job, index=0, pairs=[[1, 1], [2, 1]], size=2)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.cancel(job)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert WebhookDelivery.objects.get().payload["status"] == "cancelled"


def test_a_job_is_announced_when_its_last_chunk_is_settled(receiver, hook, own, django_capture_on_commit_callbacks):
    """A job ends in webapp.pipeline.jobs.settle, called by its last chunk's task (or a cancel, or
    the sweeper): the settle announces it, once however often it is called."""
    from webapp.pipeline import jobs

    job = RelevanceJob.objects.create(
        corpus=own["corpus"], model_version=own["model"], status=JobStatus.RUNNING, total=2, chunk_count=1
    )
    with django_capture_on_commit_callbacks(execute=True):
        jobs.settle(job.pk)  # its chunk still runs: nothing ends
    assert not WebhookDelivery.objects.exists()
    RelevanceJob.objects.filter(pk=job.pk).update(chunks_done=1, done=2)
    with django_capture_on_commit_callbacks(execute=True):
        jobs.settle(job.pk)
        jobs.settle(job.pk)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, delivery.payload["status"]) == ("relevance_job", "done")
