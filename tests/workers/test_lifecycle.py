"""The lifecycle's broker side with real Redis and real worker processes: queue sizes, one
visibility timeout for every worker."""

import pytest
from django.conf import settings

from webapp.lifecycle import queue, visibility

pytestmark = pytest.mark.slow

PROBE_QUEUE = "lifecycle-probe"


@pytest.fixture
def redis_broker():
    if not settings.CELERY_BROKER_URL.startswith("redis://"):
        pytest.skip("needs Redis (REDIS_URL)")
    return visibility._client()


def test_the_size_of_a_queue_is_read_from_the_broker(redis_broker):
    from webapp.taskqueue import app

    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(PROBE_QUEUE)
    assert queue.waiting_messages(PROBE_QUEUE) == 0  # an empty (even never declared) queue
    for pk in range(3):
        app.send_task("workers.relevance.run_chunk", args=[pk], queue=PROBE_QUEUE)
    assert queue.waiting_messages(PROBE_QUEUE) == 3
    with app.connection_for_write() as connection:
        connection.default_channel.queue_purge(PROBE_QUEUE)


@pytest.mark.django_db(transaction=True)
def test_a_worker_with_another_visibility_timeout_refuses_to_start(start_worker, redis_broker):
    redis_broker.set(visibility.VISIBILITY_KEY, 3600, ex=60)  # what the live workers use
    try:
        with pytest.raises(RuntimeError) as refused:
            start_worker("default")  # this one is configured with 8 s (tests/workers/conftest.py)
        assert "REFUSING TO START" in str(refused.value) and "3600" in str(refused.value)
        redis_broker.set(visibility.VISIBILITY_KEY, 8, ex=60)
        start_worker("default")  # the same value: it starts and renews the announcement at once
        assert int(redis_broker.get(visibility.VISIBILITY_KEY)) == 8
        assert redis_broker.ttl(visibility.VISIBILITY_KEY) > 60
    finally:
        redis_broker.delete(visibility.VISIBILITY_KEY)


def test_a_worker_that_agrees_renews_the_announcement_before_its_sweeper_runs(redis_broker):
    mine = visibility.configured()
    redis_broker.set(visibility.VISIBILITY_KEY, mine, ex=5)  # live workers' value, about to expire
    try:
        visibility.check_or_refuse()
        assert int(redis_broker.get(visibility.VISIBILITY_KEY)) == mine
        assert redis_broker.ttl(visibility.VISIBILITY_KEY) > 5  # renewed to VISIBILITY_KEY_TTL
    finally:
        redis_broker.delete(visibility.VISIBILITY_KEY)
