"""What the app benchmarks share: a dedicated PostgreSQL database each (made and dropped by the
benchmark, so a run never touches real data), Django set up on it, and this process's memory."""

from __future__ import annotations

import os
import threading
from urllib.parse import urlparse, urlunparse


def rss_mb(kind: str = "VmRSS") -> float:
    """This process's resident memory (VmRSS), or its anonymous part only (RssAnon: without the
    pages of memory-mapped files, which the kernel can drop at any time)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(kind + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(kind)


class PeakRss:
    """Samples this process's RSS and RssAnon every 50 ms while active; keeps the largest."""

    def __init__(self):
        self.peak, self.peak_anon = rss_mb(), rss_mb("RssAnon")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())
            self.peak_anon = max(self.peak_anon, rss_mb("RssAnon"))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def database_for(url: str):
    parsed = urlparse(url)
    return parsed.path.lstrip("/"), urlunparse(parsed._replace(path="/postgres"))


# A migrated database on the same server to copy instead of starting empty (the tests set it, so
# a test run migrates once, not once a benchmark: a copy takes a fraction of a second, migrate
# 15-25 s on two cores). The caller's `migrate` then finds nothing to apply. Unset: empty.
TEMPLATE_ENV = "DSM_MIGRATED_TEMPLATE"


def create_statement(name: str):
    """CREATE DATABASE `name`, copied from the template DSM_MIGRATED_TEMPLATE names if set."""
    from psycopg import sql

    template = os.environ.get(TEMPLATE_ENV)
    if not template:
        return sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    return sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))


def create_database(url: str) -> None:
    import psycopg

    name, admin = database_for(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            raise SystemExit(f"database {name} exists already; drop it or pass another --database-url")
        conn.execute(create_statement(name))


def drop_database(url: str) -> None:
    import psycopg
    from django.db import connections

    connections.close_all()
    name, admin = database_for(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_exists(url: str) -> bool:
    import psycopg

    name, admin = database_for(url)
    with psycopg.connect(admin, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def serve_pages_as_the_tests_do() -> None:
    """Plain HTTP and static files from the source folders (the test settings), so an in-process
    test client sees exactly the pages a server would render, without HTTPS redirects or a manifest.

    A benchmark's main() calls this, never its import: tests import benchmarks' helpers, and an
    environment changed at import leaks into every later test of that process and the servers
    it starts (an ALLOWED_HOSTS without 127.0.0.1 made the demo answer 400)."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,localhost")


def use_new_database(url: str) -> None:
    """Create the benchmark's database, point Django at it and set Django up (migrate is the
    caller's: some benchmarks time it)."""
    create_database(url)
    use_database(url)


def use_database(url: str) -> None:
    """Point Django at an existing database (one a benchmark kept to reuse) and set Django up."""
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()
