"""Webhook deliveries as an outbox, through a REAL worker process on PostgreSQL + Redis and a real
HTTP receiver on loopback (allowed explicitly with OUTBOUND_ALLOWED_NETWORKS): a retry is a row due
later that the worker's sweeper queues, not a countdown message held unacknowledged in Redis.
The faults (Redis restarted and the delivery workers killed while retries are pending, an import
beside a receiver that sleeps 30 s) are rounds of the fault drill (tests/workers/test_fault_drill.py).
"""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
from django.conf import settings

from tests.projects import default_project
from tests.workers.conftest import wait_for
from webapp.integrations import webhooks
from webapp.integrations.models import Webhook, WebhookDelivery

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

OUTBOX_ENV = {"OUTBOUND_ALLOWED_NETWORKS": "127.0.0.0/8", "WEBHOOK_TIMEOUT_SECONDS": "2"}


@pytest.fixture
def receiver():
    """Answers in turn what `receiver.script` holds (a status, or ("sleep", s) then 200), then 200;
    keeps each request's X-DSM-Delivery header."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            server.received.append(self.headers["X-DSM-Delivery"])
            step = server.script.pop(0) if server.script else 200
            if isinstance(step, tuple):
                time.sleep(step[1])
                step = 200
            try:
                self.send_response(step)
                self.end_headers()
            except OSError:  # the caller gave up (its timeout, or it was killed)
                pass

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.received, server.script = [], []
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def hook(receiver):
    return Webhook.objects.create(project=default_project(), url=receiver.url, secret="s" * 32, events=[])


def _purge_deliveries():
    from workers.celery_app import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge("webhooks")


def _status(delivery):
    delivery.refresh_from_db()
    return delivery.status


def test_a_retry_waits_in_the_database_not_in_the_broker(start_worker, receiver, hook):
    _purge_deliveries()
    start_worker("webhooks", WEBHOOK_BACKOFF_SECONDS=4, **OUTBOX_ENV)
    receiver.script = [500, 503]
    delivery = webhooks.send_test(hook)  # sent at the commit: no transaction holds it here
    wait_for(lambda: WebhookDelivery.objects.get(pk=delivery.pk).attempts == 1, timeout=30, message="attempt 1")
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    assert broker.hlen("unacked") == 0  # no countdown message held while the retry waits
    wait_for(lambda: _status(delivery) == "delivered", timeout=60, message="the delivery")
    assert delivery.attempts == 3 and receiver.received == [str(delivery.pk)] * 3
