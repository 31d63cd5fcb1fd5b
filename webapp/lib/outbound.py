"""Outbound HTTP under the hospital's policy: a URL a user entered (a webhook's) may only make the
server call a public address over http or https.

`check(url, allowed)` parses the URL, resolves its host once and refuses it when any of the
addresses is loopback, private, link-local, multicast, reserved, unspecified or otherwise not
globally routable, including the IPv4 address inside an IPv6 one (mapped `::ffff:10.0.0.1`,
6to4, Teredo), unless the address lies in one of the `allowed` networks (the deployment's
OUTBOUND_ALLOWED_NETWORKS, empty by default). It returns a `Destination` holding the addresses it
checked, and `post()` connects to exactly those: the host name is never resolved a second time,
so a DNS answer that changes between the check and the connection (DNS rebinding) reaches
nothing new. HTTPS still verifies the certificate against the host name (SNI). Redirects are
never followed: `post()` returns the 3xx status and the caller decides what it means.

No Django here (webapp.lib): the caller passes the allowed networks. A refusal's words are the
English templates below, formatted with their values (a host, an address, an error's type): a
delivery stores them as they are and a page shows them in its reader's language
(webapp.integrations.delivery_text).
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from webapp.lib import known_text
from webapp.lib.messages import gettext_noop

SCHEMES = {"http": 80, "https": 443}
MAX_ANSWER_BYTES = 64 * 1024  # read (and drop) at most this much of an answer's body

# what a refusal says (OutboundRefused's message), and post()'s own OSError texts
UNREADABLE = gettext_noop("This URL cannot be read (%(reason)s).")
NOT_HTTP = gettext_noop("Only http and https URLs are allowed, not %(scheme)s.")
NO_SCHEME = gettext_noop("a URL without a scheme")
CREDENTIALS = gettext_noop("A URL may not carry a user name or password; the body is signed instead.")
NO_HOST = gettext_noop("The URL names no host.")
UNRESOLVED = gettext_noop("The host %(host)s could not be resolved (%(type)s).")
NO_ADDRESS = gettext_noop("The host %(host)s has no address.")
NOT_PUBLIC = gettext_noop(
    "%(named)s is a %(kind)s address: the server only calls public addresses "
    "(an administrator may allow a network with OUTBOUND_ALLOWED_NETWORKS)."
)
BAD_ANSWER = gettext_noop("bad answer (%(type)s)")
NOTHING_TO_CONNECT = gettext_noop("no address to connect to")
# the kinds of address NOT_PUBLIC names, in the order they are told apart
KINDS = (
    ("is_unspecified", known_text.pgettext("address kind", "unspecified")),
    ("is_loopback", known_text.pgettext("address kind", "loopback")),
    ("is_link_local", known_text.pgettext("address kind", "link-local")),
    ("is_multicast", known_text.pgettext("address kind", "multicast")),
    ("is_private", known_text.pgettext("address kind", "private")),
    ("is_reserved", known_text.pgettext("address kind", "reserved")),
)
NON_PUBLIC = known_text.pgettext("address kind", "non-public")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(ValueError):
    """The URL may not be called; the message says why in words a user can act on."""


class HostUnresolved(OutboundRefused):
    """The host name has no address now (which may change: a delivery tries again later)."""


@dataclass(frozen=True)
class Destination:
    scheme: str
    host: str  # as written in the URL (sent as Host and as the TLS server name)
    port: int
    target: str  # path and query, what the request line asks for
    addresses: tuple[str, ...]  # the checked addresses; the only ones ever connected to


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """CIDR strings ("127.0.0.0/8", "::1/128") as networks; ValueError naming the one that is not."""
    networks = []
    for value in values:
        value = value.strip()
        if not value:
            continue
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not a network (expected CIDR, e.g. 10.1.2.0/24)") from None
    return tuple(networks)


def resolve(host: str, port: int) -> list[str]:
    """Every address the host name has now (A and AAAA), in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def why_forbidden(address: str, allowed: tuple[Network, ...] = ()) -> str | None:
    """None when the policy lets the server call `address`, else what kind of address it is."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # a scope id (fe80::1%eth0) is not part of it
    inner = _embedded_ipv4(ip)
    if any(candidate in network for candidate in (ip, inner) if candidate for network in allowed):
        return None
    for candidate in (inner, ip):  # the IPv4 inside first: its kind says more
        if candidate is None:
            continue
        kind = _kind_of_non_public(candidate)
        if kind:
            return kind
    return None


def check(url: str, allowed: tuple[Network, ...] = ()) -> Destination:
    """The Destination of `url` if the policy allows it, else OutboundRefused saying why."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(UNREADABLE % {"reason": exc}) from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise OutboundRefused(NOT_HTTP % {"scheme": scheme or NO_SCHEME})
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused(CREDENTIALS)
    host = parts.hostname
    if not host:
        raise OutboundRefused(NO_HOST)
    port = port or SCHEMES[scheme]
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise HostUnresolved(UNRESOLVED % {"host": host, "type": type(exc).__name__}) from None
    if not addresses:
        raise HostUnresolved(NO_ADDRESS % {"host": host})
    for address in addresses:
        kind = why_forbidden(address, allowed)
        if kind:
            named = host if host == address else f"{host} ({address})"
            raise OutboundRefused(NOT_PUBLIC % {"named": named, "kind": kind})
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Destination(scheme, host, port, target, tuple(addresses))


def post(destination: Destination, body: bytes, headers: dict[str, str], timeout: float) -> int:
    """POST `body` to the destination's checked addresses (the next one only when a connection
    cannot be made); returns the answer's status, 3xx included (no redirect is followed). OSError
    (refused, timed out, TLS) when no address answers."""
    error: OSError | None = None
    for address in destination.addresses:
        connection = _connection(destination, address, timeout)
        try:
            connection.connect()
        except OSError as exc:
            connection.close()
            error = exc
            continue
        try:
            connection.request("POST", destination.target, body=body, headers=headers)
            response = connection.getresponse()
            response.read(MAX_ANSWER_BYTES)
            return response.status
        except http.client.HTTPException as exc:  # a malformed answer
            raise OSError(BAD_ANSWER % {"type": type(exc).__name__}) from None
        finally:
            connection.close()
    raise error or OSError(NOTHING_TO_CONNECT)


# ---------------------------------------------------------------- internals


NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: a gateway turns it into IPv4


def _embedded_ipv4(ip: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for (mapped, 6to4, Teredo, NAT64), if any."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)


def _kind_of_non_public(ip: Address) -> str:
    for attribute, kind in KINDS:
        if getattr(ip, attribute):
            return kind.template
    return "" if ip.is_global else NON_PUBLIC.template


def _connection(destination: Destination, address: str, timeout: float) -> http.client.HTTPConnection:
    cls = _PinnedHTTPSConnection if destination.scheme == "https" else _PinnedHTTPConnection
    return cls(destination.host, destination.port, address=address, timeout=timeout)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the checked address; the Host header still names the URL's host."""

    def __init__(self, host, port, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.pinned_address = address

    def connect(self):
        self.sock = socket.create_connection((self.pinned_address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """As above, and the certificate is verified for the URL's host name (SNI)."""

    def __init__(self, host, port, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.pinned_address = address

    def connect(self):
        sock = socket.create_connection((self.pinned_address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
