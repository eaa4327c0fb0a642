"""Who is calling, by address: the one place that reads X-Forwarded-For, for requests and WebSocket scopes alike.

A client can write any X-Forwarded-For it likes. The header is believed only when the peer (the address the
connection came from) is one of the proxies the admin names in FORWARDED_ALLOW_IPS (addresses or networks); then
the client is the rightmost entry that is not one of those proxies (each proxy appends the address it saw, so what
a client wrote itself is further left and never counts). FORWARDED_ALLOW_IPS empty (the default): the header is
ignored and the peer's address counts.

uvicorn reads the same variable (scripts/serve.sh passes it as --forwarded-allow-ips) and applies the same rule to
the ASGI scope before Django sees it, so its access log names the client too; reading the result again here changes
nothing (the client it found is not a named proxy).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings

from accounts.env import Network, parse_networks

# FORWARDED_ALLOW_IPS is read by accounts.env (the settings import nothing else); the same parser, by its old name.
parse_proxies = parse_networks


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def _trusted(address, proxies: Iterable[Network]) -> bool:
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return any(address.version == net.version and address in net for net in proxies)


def forwarded_client(peer: str, forwarded_for: str, proxies: Iterable[Network]) -> str:
    """The client's address from the peer's address and the X-Forwarded-For value, believing only `proxies`."""
    proxies = tuple(proxies)
    peer_address = _address(peer)
    if not forwarded_for or not _trusted(peer_address, proxies):
        return str(peer_address) if peer_address is not None else (peer or "unknown")
    nearest = peer_address
    for hop in reversed(forwarded_for.split(",")):
        if not hop.strip():
            continue
        address = _address(hop)
        if address is None:
            break  # a named proxy writes addresses: this came from the client; the nearest proxy is all we know
        if not _trusted(address, proxies):
            return str(address)
        nearest = address
    return str(nearest)


def client_ip(request) -> str:
    """The client's address of a Django (or DRF) request."""
    meta = request.META
    return forwarded_client(
        meta.get("REMOTE_ADDR", ""), meta.get("HTTP_X_FORWARDED_FOR", ""), settings.FORWARDED_ALLOW_IPS
    )


def scope_client_ip(scope) -> str:
    """The client's address of an ASGI scope (WebSocket handshakes, the log follower), by the same rule."""
    peer = (scope.get("client") or ("",))[0] or ""
    forwarded = b",".join(value for key, value in scope.get("headers", []) if key == b"x-forwarded-for")
    return forwarded_client(peer, forwarded.decode("latin-1"), settings.FORWARDED_ALLOW_IPS)


def client_ip_address(request) -> str | None:
    """client_ip as an IP address, or None when there is none (a test client, a unix socket): django-axes stores it
    in an address column (AXES_CLIENT_IP_CALLABLE)."""
    address = _address(client_ip(request))
    return str(address) if address is not None else None
