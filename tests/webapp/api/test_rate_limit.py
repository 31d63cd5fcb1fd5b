"""The per-token rate limit as several web processes see it: counted in the cache when the cache
is shared (Redis), on the token's row when each process has its own (LocMem, the embedded
default), so the limit holds across processes either way; a request past it is a 429 with
Retry-After, audited; `last_used` is written once a minute, not on every request."""

import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.audit.models import AuditEvent

REDIS_URL = os.environ.get("REDIS_URL")
MINUTE = 60 * 1_000_000.0  # a fixed clock minute: no test straddles a real one


def two_processes_caches(kind: str):
    """What two web processes hold: two Redis clients of the same server, or two LocMem stores."""
    if kind == "redis":
        return [RedisCache(REDIS_URL, {"KEY_PREFIX": "dsm"}) for _ in range(2)]
    return [LocMemCache(f"process-{i}", {}) for i in range(2)]


def test_the_count_is_in_the_shared_cache_only_when_there_is_one(cache_kind):
    assert tokens.cache_is_shared() == (cache_kind == "redis")


def test_the_limit_holds_across_two_processes(cache_kind, researcher, own, make_token, settings, monkeypatch):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    token, _ = make_token(researcher, [own["project"]])
    processes = two_processes_caches(cache_kind)
    answers = []
    for i in range(6):  # the requests alternate between the two processes
        monkeypatch.setattr(tokens, "cache", processes[i % 2])
        answers.append(tokens.count_request(token, now=MINUTE + 10 + i))
    assert answers == [0, 0, 0, 47, 46, 45]  # refused until the minute ends, with its seconds left
    monkeypatch.setattr(tokens, "cache", processes[0])
    assert tokens.count_request(token, now=MINUTE + 60) == 0  # the next minute opens a new window
    row = ApiToken.objects.get(pk=token.pk)
    if cache_kind == "locmem":  # the row counted: 1 in the new minute
        assert (row.window_start, row.window_count) == (MINUTE // 60 + 1, 1)


@pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is not set")
def test_a_second_real_process_counts_in_the_same_window(researcher, own, make_token):
    """A child Python process (its own Django, its own Redis connection) counts the same token's
    minute between two of this process's requests."""
    assert tokens.cache_is_shared()  # the test settings' cache with REDIS_URL set: Redis
    token, _ = make_token(researcher, [own["project"]])
    minute = int(MINUTE // 60)
    assert tokens._count_in_cache(token, minute) == 1
    child = (
        "import django, sys; from types import SimpleNamespace; from datetime import datetime;"
        "django.setup(); from webapp.api import tokens;"
        f"token = SimpleNamespace(pk={token.pk}, created=datetime.fromisoformat({token.created.isoformat()!r}));"
        f"print(tokens._count_in_cache(token, {minute}), tokens._count_in_cache(token, {minute}))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "3"]
    assert tokens._count_in_cache(token, minute) == 4


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_never_pass_the_limit(cache_kind, settings, django_user_model, test_project):
    """Threads with their own database connections and cache clients, racing in one minute."""
    from webapp.projects.models import Membership

    settings.API_RATE_LIMIT_PER_MINUTE = 15
    owner = django_user_model.objects.create_user(username="racer")
    Membership.objects.create(project=test_project, user=owner, role="researcher")
    token, _ = tokens.create(owner, name="race", projects=[test_project], ceiling="read", days=1)
    allowed, lock = [], threading.Lock()

    def requests():
        try:
            for _ in range(10):
                answer = tokens.count_request(token, now=MINUTE + 5)
                with lock:
                    allowed.append(answer == 0)
        finally:
            connection.close()

    threads = [threading.Thread(target=requests) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(allowed) == 40 and sum(allowed) == 15


def test_past_the_limit_is_a_429_with_retry_after_and_audited(
    cache_kind, client, researcher, own, make_token, bearer, settings, monkeypatch
):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    monkeypatch.setattr(tokens, "time", SimpleNamespace(time=lambda: MINUTE + 10))  # one clock minute
    _, secret = make_token(researcher, [own["project"]])
    answers = [client.get("/api/corpora", headers=bearer(secret)) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert answers[-1]["Retry-After"] == "50"
    refused = AuditEvent.objects.get(action=tokens.REFUSED)
    assert refused.details["reason"] == "rate limit" and refused.actor == researcher


def test_last_used_is_written_by_the_minutes_first_request_only(cache_kind, researcher, own, make_token):
    token, _ = make_token(researcher, [own["project"]])
    with CaptureQueriesContext(connection) as first:
        assert tokens.count_request(token, now=MINUTE) == 0
    with CaptureQueriesContext(connection) as second:
        assert tokens.count_request(token, now=MINUTE + 1) == 0
    assert ApiToken.objects.get(pk=token.pk).last_used is not None
    writes = [q["sql"] for q in second.captured_queries if q["sql"].startswith("UPDATE")]
    if cache_kind == "redis":  # the second request reads and writes nothing in the database
        assert len(first.captured_queries) == 1 and second.captured_queries == []
    else:  # the row counts every request in one statement, and keeps the minute's last_used
        assert len(writes) == 1 and len(second.captured_queries) == 1
        assert ApiToken.objects.get(pk=token.pk).window_count == 2
