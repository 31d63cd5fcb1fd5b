"""Webhooks against a real HTTP server on localhost (http.server in a thread): the body is signed
with HMAC-SHA256 of the webhook's secret, a 500 is tried again after the back-off and the
delivery log keeps every attempt; an ended unit of work is announced once, with ids, statuses and
counts and no note text. The outbox: a retry is a row due later that the sweeper queues, never a
message held in the broker; a redirect is a failed attempt; the outbound policy is checked again
before every attempt; a webhook switched off stops at once. Loopback is allowed explicitly
(OUTBOUND_ALLOWED_NETWORKS) for these receivers."""

import hashlib
import hmac
import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from webapp.evaluation.models import RelevanceEvaluation
from webapp.integrations import events, webhooks
from webapp.integrations.models import Webhook, WebhookDelivery
from webapp.lib import outbound
from webapp.lifecycle.status import JobStatus
from webapp.pipeline.models import PeakProfile, RelevanceJob

SECRET = "a-webhook-secret-of-32-characters"


@pytest.fixture(autouse=True)
def loopback_allowed(settings):
    settings.OUTBOUND_ALLOWED_NETWORKS = outbound.parse_networks(["127.0.0.0/8"])


def _due(hook, **fields) -> WebhookDelivery:
    """A pending delivery due now, as queue_event makes them."""
    fields = {"event": "test", "key": "t", "payload": {}, **fields}
    return WebhookDelivery.objects.create(webhook=hook, due=timezone.now(), **fields)


def _time_passes(delivery, seconds=3600):
    """Everything about the row that waits for the clock moves back by `seconds`."""
    back = timedelta(seconds=seconds)
    row = WebhookDelivery.objects.get(pk=delivery.pk)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        **{f: getattr(row, f) - back for f in ("due", "sent", "claimed_until") if getattr(row, f)}
    )


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
    assert delivery.due > timezone.now() + timedelta(seconds=2) and delivery.claimed_until is None
    assert webhooks.attempt(delivery.pk) is None  # not due yet: a duplicate message does nothing
    assert len(receiver.received) == 1
    _time_passes(delivery, 3)
    assert webhooks.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_code) == ("delivered", 2, 200)
    assert delivery.due is None
    assert len(receiver.received) == 2
    assert receiver.received[0][1] == receiver.received[1][1]  # the same body, the same delivery id


def test_the_signature_is_the_hmac_of_the_body(receiver, hook, own):
    delivery = _due(hook, payload={"event": "test"})
    webhooks.attempt(delivery.pk)
    headers, body = receiver.received[0]
    expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-DSM-Signature"], expected)
    assert headers["X-DSM-Event"] == "test" and headers["X-DSM-Delivery"] == str(delivery.pk)
    assert json.loads(body)["delivery"] == delivery.pk


def test_it_gives_up_after_the_last_attempt(receiver, hook, own, settings):
    receiver.answers = [503] * settings.WEBHOOK_MAX_ATTEMPTS
    delivery = _due(hook)
    waits = []
    for _ in range(settings.WEBHOOK_MAX_ATTEMPTS):
        waits.append(webhooks.attempt(delivery.pk))
        _time_passes(delivery)
    assert waits[-1] is None and all(w is not None for w in waits[:-1])
    assert waits[1] == 2 * waits[0]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.due) == ("failed", settings.WEBHOOK_MAX_ATTEMPTS, None)


def test_a_refused_connection_is_logged_and_retried(hook, own):
    Webhook.objects.filter(pk=hook.pk).update(url="http://127.0.0.1:9/closed")
    delivery = _due(hook)
    assert webhooks.attempt(delivery.pk) is not None
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.error and delivery.response_code is None


def test_a_redirect_is_a_failed_attempt_and_is_not_followed(receiver, hook, own):
    receiver.answers = [302]
    delivery = _due(hook)
    assert webhooks.attempt(delivery.pk) is not None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.response_code) == ("pending", 302)
    assert "redirect, not followed" in delivery.error
    assert len(receiver.received) == 1


def test_the_policy_is_checked_again_at_delivery_when_the_name_now_points_inside(
    receiver, hook, own, monkeypatch, settings
):
    """The webhook was added while its name resolved to a public address; at delivery it resolves
    to loopback, which this deployment does not allow: the attempt fails for good, unsent."""
    settings.OUTBOUND_ALLOWED_NETWORKS = ()
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34"])
    webhooks.check_url("http://hooks.example.org/hook")  # at registration: allowed
    Webhook.objects.filter(pk=hook.pk).update(url=f"http://hooks.example.org:{receiver.server_address[1]}/hook")
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    delivery = _due(hook)
    assert webhooks.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert "Refused by the outbound policy" in delivery.error and "loopback" in delivery.error
    assert receiver.received == []


def test_a_webhook_switched_off_stops_its_pending_retries_at_once(receiver, hook, own):
    receiver.answers = [500]
    delivery = _due(hook)
    webhooks.attempt(delivery.pk)
    assert webhooks.switch(hook, active=False) == 1
    _time_passes(delivery)
    assert webhooks.send_due() == [] and webhooks.attempt(delivery.pk) is None
    delivery.refresh_from_db()
    assert (delivery.status, delivery.error) == ("failed", "Stopped: the webhook was switched off.")
    assert len(receiver.received) == 1


def test_the_sweeper_queues_what_is_due_once_and_again_after_a_lost_message(hook, own, settings):
    """A row due with no message is queued; queued again only once its message is older than
    the grace period (lost with the broker); a row a worker holds is left alone."""
    sent = []
    settings.WORK_REQUEUE_GRACE_SECONDS = 60
    waiting, held, later = _due(hook), _due(hook), _due(hook)
    WebhookDelivery.objects.filter(pk=later.pk).update(due=timezone.now() + timedelta(seconds=30))
    WebhookDelivery.objects.filter(pk=held.pk).update(claimed_until=timezone.now() + timedelta(seconds=30))
    original, webhooks._send = webhooks._send, sent.extend
    try:
        assert webhooks.send_due() == [waiting.pk]
        assert webhooks.send_due() == []  # its message is young: not sent twice
        _time_passes(waiting, 61)
        assert webhooks.send_due() == [waiting.pk]  # the message was lost: sent again
        assert webhooks.send_due(now=timezone.now() + timedelta(seconds=31)) == [held.pk, later.pk]
    finally:
        webhooks._send = original
    assert sent == [waiting.pk, waiting.pk, held.pk, later.pk]


def test_a_claimed_delivery_is_not_attempted_by_a_second_worker(receiver, hook, own):
    delivery = _due(hook)
    assert webhooks.claim(delivery.pk) is not None
    assert webhooks.attempt(delivery.pk) is None  # another worker's message: the claim holds it
    assert receiver.received == []


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


def test_the_celery_task_makes_one_attempt_and_holds_no_retry(receiver, hook, own):
    """The task itself (run in this process by apply()): one attempt; the retry is the row's."""
    from workers.webhooks import deliver

    receiver.answers = [500]
    delivery = _due(hook)
    deliver.apply(args=[delivery.pk])
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 1) and delivery.due > timezone.now()


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
