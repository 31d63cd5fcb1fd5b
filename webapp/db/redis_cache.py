"""Django's Redis cache, with one redis-py client per connection pool instead of one per call.

Django's RedisCacheClient builds a new `redis.Redis` around its pool for every cache operation:
its constructor fills a table of some 170 response callbacks, about a third of a simple GET's
CPU. A review answer makes several cache reads (session, roles, kept lookups), so the client is
built once per pool and kept. A redis-py client is safe to share between threads; the pools are
Django's, and each process (each gunicorn worker) has its own."""

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class KeptClient(RedisCacheClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._clients = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            client = self._clients[index] = self._client(connection_pool=self._get_connection_pool(write))
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = KeptClient
