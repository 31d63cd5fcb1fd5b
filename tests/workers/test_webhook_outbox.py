"""Webhook deliveries as an outbox, through REAL worker processes on PostgreSQL + Redis and a real
HTTP receiver on loopback (allowed explicitly with OUTBOUND_ALLOWED_NETWORKS):

- a retry is a row due later that the worker's sweeper queues, not a countdown message held
  unacknowledged in Redis;
- a worker SIGKILLed in the middle of an attempt loses nothing: once its claim expires another
  worker delivers it (the receiver sees the same delivery id twice and can drop the duplicate);
- deliveries have a queue of their own: an import finishes in its normal time while every
  delivery worker waits on a receiver that sleeps 30 s;
- Redis restarted while retries are pending (a redis-server of the test's own): nothing is lost
  and the worker is still alive afterwards.
"""

import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import redis
from django.conf import settings

from tests.projects import default_project
from tests.workers.conftest import WorkerProcess, wait_for
from tests.workers.test_imports import ended, launch, notes_file
from webapp.api import webhooks
from webapp.api.models import Webhook, WebhookDelivery
from webapp.corpus.models import ImportJob
from webapp.lifecycle.status import JobStatus

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


def test_a_worker_killed_mid_attempt_loses_nothing(start_worker, receiver, hook):
    _purge_deliveries()
    first = start_worker("webhooks", **{**OUTBOX_ENV, "WEBHOOK_TIMEOUT_SECONDS": 5})  # claim: 3 x 5 + 5 = 20 s
    receiver.script = [("sleep", 30)]
    delivery = webhooks.send_test(hook)
    wait_for(lambda: receiver.received, timeout=30, message="the first attempt to reach the receiver")
    first.kill()
    start_worker("webhooks", **OUTBOX_ENV)
    wait_for(lambda: _status(delivery) == "delivered", timeout=90, message="the delivery by another worker")
    assert delivery.attempts == 1  # the killed attempt recorded nothing
    assert receiver.received == [str(delivery.pk)] * 2  # the same id: the receiver can drop the duplicate


def test_a_sleeping_receiver_never_delays_an_import(start_worker, receiver, hook, researcher, settings, tmp_path):
    _purge_deliveries()
    settings.DATA_DIR = tmp_path
    start_worker("default", DATA_DIR=tmp_path)
    start_worker("webhooks", **OUTBOX_ENV)
    receiver.script = [("sleep", 30)] * 10
    for _ in range(10):
        webhooks.send_test(hook)
    wait_for(lambda: receiver.received, timeout=30, message="a delivery to start waiting")
    started = time.monotonic()
    job = launch(notes_file(300), researcher)
    wait_for(lambda: ended(job.pk), timeout=60, message="the import")
    took = time.monotonic() - started
    assert ImportJob.objects.get(pk=job.pk).status == JobStatus.DONE
    # Alone, this import takes 1-3 s on a 2-core machine; behind one 30 s delivery it would take 30+.
    assert took < 20, f"the import took {took:.1f} s"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def own_redis(tmp_path):
    """A redis-server of this test's own (it restarts it), without persistence, like ours in CI."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs redis-server")
    port = _free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]

    class Server:
        url = f"redis://127.0.0.1:{port}/0"

        def start(self):
            self.process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL)
            wait_for(lambda: _answers(self.url), timeout=20, message="redis-server")

        def stop(self):
            self.process.terminate()
            self.process.wait(timeout=20)

    server = Server()
    server.start()
    yield server
    server.stop()


def _answers(url) -> bool:
    try:
        return redis.Redis.from_url(url, socket_timeout=1).ping()
    except redis.RedisError:
        return False


def test_redis_restarted_while_retries_wait_loses_nothing_and_the_worker_lives(
    receiver, hook, own_redis, worker_env, tmp_path, settings
):
    """The broker loses every message it held; the rows do not: the sweeper queues them again,
    and the worker (which reconnects by itself) delivers them."""
    env = {**worker_env, **OUTBOX_ENV, "CELERY_BROKER_URL": own_redis.url, "WEBHOOK_BACKOFF_SECONDS": "6"}
    worker = WorkerProcess("webhooks", env, tmp_path / "worker.log").start()
    try:
        receiver.script = [500, 500, 500]
        pending = [
            WebhookDelivery.objects.create(webhook=hook, event="test", key="t", payload={}, due=None) for _ in range(3)
        ]
        # due now, no message: the sweeper (every second here) queues them through the new broker
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in pending]).update(due=hook.created)
        wait_for(
            lambda: all(WebhookDelivery.objects.get(pk=d.pk).attempts == 1 for d in pending),
            timeout=60,
            message="each delivery's first attempt",
        )
        own_redis.stop()  # retries pending, due in 6 s
        time.sleep(3)
        own_redis.start()
        wait_for(
            lambda: all(_status(d) == "delivered" for d in pending),
            timeout=90,
            message=f"every delivery after the restart; worker log:\n{worker.log()}",
        )
        assert worker.process.poll() is None, worker.log()  # the worker survived the restart
        assert sorted(set(receiver.received)) == sorted(str(d.pk) for d in pending)
    finally:
        worker.stop()
