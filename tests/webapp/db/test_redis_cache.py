"""webapp.db.redis_cache: Django's Redis cache with one redis-py client kept per pool, shared by
two backends (two web workers) through the server, and the backend the settings name."""

import os
import secrets

import pytest
from django.conf import settings

from webapp.db.redis_cache import RedisCache

REDIS_URL = os.environ.get("REDIS_URL", "")
pytestmark = pytest.mark.skipif(not REDIS_URL, reason="needs Redis (REDIS_URL)")


def test_one_client_per_pool_and_what_one_worker_writes_the_other_reads():
    first, second = (RedisCache(REDIS_URL, {"KEY_PREFIX": "dsm-test"}) for _ in range(2))
    key = f"redis-cache-{secrets.token_hex(4)}"
    assert first._cache.get_client(key) is first._cache.get_client(key, write=True)  # one server: one pool
    first.set(key, {"a": [1, 2]}, 30)
    assert second.get(key) == {"a": [1, 2]}
    assert second.add(key, "other", 30) is False
    second.delete(key)
    assert first.get(key, "gone") == "gone"
    assert first.get_many([key]) == {}


def test_the_settings_use_it_when_a_redis_url_is_set():
    assert settings.CACHES["default"]["BACKEND"] == "webapp.db.redis_cache.RedisCache"
