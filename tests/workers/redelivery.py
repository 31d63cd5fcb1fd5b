"""Workers whose broker redelivers nothing within a test, so that only the lifecycle (heartbeats
and the recovery sweeper, webapp.lifecycle) can recover the work of a killed worker.

tests/workers/conftest.py makes the fixture available to every worker test.
"""

import pytest

HOUR = 3600


@pytest.fixture
def start_worker_without_redelivery(start_worker):
    """start_worker with a visibility timeout of an hour. Workers announce their value in Redis
    for a while after they stop (webapp.lifecycle.visibility) and refuse to start beside another
    one: the announcement is cleared before (the earlier tests' workers are stopped) and after
    (this test's workers are stopped first)."""
    from webapp.lifecycle import visibility

    client = visibility._client()
    client.delete(visibility.VISIBILITY_KEY)
    started = []

    def start(queues: str, **extra_env):
        worker = start_worker(queues, CELERY_VISIBILITY_TIMEOUT=HOUR, **extra_env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    client.delete(visibility.VISIBILITY_KEY)
