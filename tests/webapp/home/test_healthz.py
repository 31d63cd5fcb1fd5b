"""/healthz: 200 while the database answers, a short 503 while it refuses connections."""

import contextlib
import socket

import pytest
from django.db import connection
from django.urls import reverse


def closed_port() -> int:
    """A local port nobody listens on: bound, then released (a connection to it is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def database_refusing():
    """Point the default connection at a database that really refuses it, then back."""
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        pytest.skip("closing an in-memory SQLite test database would lose it")
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-dir/db.sqlite3"
    else:
        connection.settings_dict.update(HOST="127.0.0.1", PORT=closed_port())
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.mark.django_db(transaction=True)  # no test transaction held open across the reconnects
def test_healthz_answers_503_with_a_short_body_while_the_database_refuses(client):
    assert client.get(reverse("healthz")).json() == {"ok": True}
    with database_refusing():
        response = client.get(reverse("healthz"))
    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"ok": False, "database": "unreachable"}
    assert client.get(reverse("healthz")).status_code == 200  # and well again once it answers
