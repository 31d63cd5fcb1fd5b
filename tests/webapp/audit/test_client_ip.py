"""The client's address for lockouts and the audit log (webapp.audit.client_ip)."""

import pytest
from django.test import RequestFactory

from webapp.audit.client_ip import client_address


def request(remote="10.0.0.9", forwarded=None):
    meta = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/login/", **meta)


def test_without_a_proxy_the_connection_is_the_client_whatever_the_header_says(settings):
    settings.TRUSTED_PROXIES = 0
    assert client_address(request(forwarded="1.2.3.4")) == "10.0.0.9"  # a spoofed header changes nothing


@pytest.mark.parametrize(
    "proxies, forwarded, expected",
    [
        (1, "203.0.113.7", "203.0.113.7"),
        (1, "6.6.6.6, 203.0.113.7", "203.0.113.7"),  # the client wrote the left entry: ignored
        (2, "6.6.6.6, 203.0.113.7, 10.0.0.2", "203.0.113.7"),
        (2, "203.0.113.7", "10.0.0.9"),  # fewer entries than proxies: only the connection is trusted
        (1, "not-an-address", "10.0.0.9"),
        (1, "2001:db8::1", "2001:db8::1"),
    ],
)
def test_behind_trusted_proxies_the_client_is_counted_from_the_right(settings, proxies, forwarded, expected):
    settings.TRUSTED_PROXIES = proxies
    assert client_address(request(forwarded=forwarded)) == expected


def test_the_lockout_and_the_audit_log_use_this_rule(settings, db):
    from axes.helpers import get_client_ip_address

    from webapp.audit.log import client_ip

    settings.TRUSTED_PROXIES = 1
    assert get_client_ip_address(request(forwarded="203.0.113.7")) == "203.0.113.7"
    assert client_ip(request(forwarded="203.0.113.7")) == "203.0.113.7"
