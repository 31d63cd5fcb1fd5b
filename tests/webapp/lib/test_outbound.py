"""The outbound policy (webapp.lib.outbound) as plain units: which URLs the server may call, and
that a call goes to the address that was checked, with no redirect followed. The receivers are
real HTTP servers on loopback, reached only because each test allows 127.0.0.0/8 explicitly."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from webapp.lib import outbound

LOOPBACK = outbound.parse_networks(["127.0.0.0/8"])


@pytest.mark.parametrize(
    "url, kind",
    [
        ("http://10.255.255.1/x", "private"),
        ("http://169.254.169.254/latest/meta-data/", "link-local"),  # a cloud's metadata service
        ("http://127.0.0.1:5432/", "loopback"),
        ("http://[::1]/", "loopback"),
        ("http://[::ffff:10.0.0.1]/", "private"),  # IPv4-mapped IPv6
        ("http://[::ffff:127.0.0.1]:8000/", "loopback"),
        ("http://[2002:a00:1::]/", "private"),  # 6to4 around 10.0.0.1
        ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),  # NAT64 around 169.254.169.254
        ("http://[fc00::1]/", "private"),
        ("http://[fe80::1]/", "link-local"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://[::]/", "unspecified"),
        ("http://224.0.0.1/", "multicast"),
        ("http://240.0.0.1/", "private"),  # reserved; Python counts it private too
        ("http://100.64.0.1/", "non-public"),  # carrier-grade NAT: neither private nor global
        ("http://localhost:9/", "loopback"),  # a name is resolved, then its addresses checked
    ],
)
def test_it_refuses_every_address_that_is_not_public(url, kind):
    with pytest.raises(outbound.OutboundRefused, match=f"is a {kind} address"):
        outbound.check(url)


@pytest.mark.parametrize(
    "url, why",
    [
        ("ftp://example.org/x", "Only http and https"),
        ("file:///etc/passwd", "Only http and https"),
        ("gopher://example.org/", "Only http and https"),
        ("https://user:secret@example.org/", "user name or password"),
        ("http:///path-only", "names no host"),
        ("http://example.org:99999/", "cannot be read"),
    ],
)
def test_it_refuses_other_schemes_and_malformed_urls(url, why):
    with pytest.raises(outbound.OutboundRefused, match=why):
        outbound.check(url)


def test_a_public_address_passes_and_keeps_what_was_checked():
    destination = outbound.check("https://93.184.216.34/hook?x=1")
    assert destination.addresses == ("93.184.216.34",)
    assert (destination.scheme, destination.port, destination.target) == ("https", 443, "/hook?x=1")


def test_a_name_is_refused_when_any_of_its_addresses_is_internal(monkeypatch):
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["93.184.216.34", "10.0.0.7"])
    with pytest.raises(outbound.OutboundRefused, match=r"hooks.example.org \(10.0.0.7\) is a private address"):
        outbound.check("https://hooks.example.org/")


def test_an_unresolvable_name_is_its_own_kind_of_refusal():
    with pytest.raises(outbound.HostUnresolved, match="could not be resolved"):
        outbound.check("https://no-such-host.invalid/")


def test_the_allowed_networks_open_exactly_those_addresses():
    assert outbound.check("http://127.0.0.1:8080/", LOOPBACK).addresses == ("127.0.0.1",)
    assert outbound.check("http://[::ffff:127.0.0.1]/", LOOPBACK)  # the mapped form is the same address
    with pytest.raises(outbound.OutboundRefused):
        outbound.check("http://10.0.0.1/", LOOPBACK)


def test_a_network_that_is_not_one_is_named():
    with pytest.raises(ValueError, match="'10.0.0.300/8' is not a network"):
        outbound.parse_networks(["127.0.0.0/8", "10.0.0.300/8"])


@pytest.fixture
def receiver():
    """Answers each POST with `receiver.status` (a Location header with a 3xx), keeping what came."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            server.received.append((self.headers["Host"], self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(server.status)
            if 300 <= server.status < 400:
                self.send_header("Location", f"http://127.0.0.1:{server.server_address[1]}/elsewhere")
            self.end_headers()

        do_GET = do_POST

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.received, server.status = [], 200
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_connection_goes_to_the_checked_address_whatever_the_name_resolves_to_later(receiver, monkeypatch):
    """DNS rebinding: the name resolves to an allowed address at the check and to another one
    after it; the request still reaches the checked address, and the Host header keeps the name."""
    port = receiver.server_address[1]
    monkeypatch.setattr(outbound, "resolve", lambda host, port: ["127.0.0.1"])
    destination = outbound.check(f"http://hooks.example.org:{port}/hook", LOOPBACK)
    monkeypatch.setattr(outbound, "resolve", lambda host, port: pytest.fail("resolved a second time"))
    assert outbound.post(destination, b"{}", {"Content-Type": "application/json"}, timeout=5) == 200
    assert receiver.received == [(f"hooks.example.org:{port}", b"{}")]


def test_a_redirect_is_returned_not_followed(receiver):
    receiver.status = 302
    destination = outbound.check(f"http://127.0.0.1:{receiver.server_address[1]}/hook", LOOPBACK)
    assert outbound.post(destination, b"{}", {}, timeout=5) == 302
    assert len(receiver.received) == 1  # the Location was never asked for


def test_a_closed_port_raises_oserror():
    destination = outbound.check("http://127.0.0.1:9/", LOOPBACK)
    with pytest.raises(OSError):
        outbound.post(destination, b"{}", {}, timeout=5)
