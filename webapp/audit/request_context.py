"""The client address of the request being served, for audit rows written deep in domain code.

Launches, cancels, resumes and exports are recorded by the domain modules that do them, far
from the request; passing the address down every call was forgotten as often as not. The
middleware keeps it in a context variable for the request's duration, and `record` uses it when
its caller gives none. Commands and workers serve no request: their rows keep no address.
"""

from __future__ import annotations

from contextvars import ContextVar

from webapp.audit.client_ip import client_address

_address: ContextVar[str | None] = ContextVar("audit_client_address", default=None)


def current_address() -> str | None:
    return _address.get()


class RequestAddressMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _address.set(client_address(request))
        try:
            return self.get_response(request)
        finally:
            _address.reset(token)
