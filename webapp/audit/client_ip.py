"""The client's address, for login lockouts and the audit log (one rule for both).

Without a reverse proxy it is the connection's (REMOTE_ADDR), and X-Forwarded-For is ignored: a
client can write anything there. Behind TRUSTED_PROXIES proxies (settings; each appends the
address it received the request from), the client is the entry that many places from the right
of X-Forwarded-For: the entries further left were written by the client and prove nothing.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def client_address(request) -> str | None:
    remote = _valid(request.META.get("REMOTE_ADDR", ""))
    proxies = settings.TRUSTED_PROXIES
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < proxies:  # not through all the proxies: trust only the connection
        return remote
    return _valid(forwarded[-proxies]) or remote


def _valid(address: str) -> str | None:
    try:
        return str(ipaddress.ip_address(address)) if address else None
    except ValueError:
        return None
