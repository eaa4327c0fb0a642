"""Who is calling, by address: the one place that reads X-Forwarded-For, and the throttles keyed on it.

A client can write any X-Forwarded-For it likes. Only the entries that the NUM_PROXIES proxies in front of the
portal appended are believed: each trusted proxy appends the address it saw, so the client is the entry
NUM_PROXIES from the right. With NUM_PROXIES=0 (the default) the header is ignored and the peer's address counts.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle


def forwarded_client(peer: str, forwarded_for: str, num_proxies: int) -> str:
    """The client's address from the peer's address and the X-Forwarded-For value, trusting num_proxies proxies."""
    if num_proxies <= 0 or not forwarded_for:
        return peer or "unknown"
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    if not hops:
        return peer or "unknown"
    candidate = hops[-min(num_proxies, len(hops))]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        # A trusted proxy writes addresses; anything else came from the client: fall back to the peer.
        return peer or "unknown"


def client_ip(request) -> str:
    """The client's address of a Django (or DRF) request."""
    meta = request.META
    return forwarded_client(meta.get("REMOTE_ADDR", ""), meta.get("HTTP_X_FORWARDED_FOR", ""), settings.NUM_PROXIES)


def scope_client_ip(scope) -> str:
    """The client's address of an ASGI scope (WebSocket handshakes), by the same rule."""
    peer = (scope.get("client") or ("",))[0] or ""
    forwarded = b",".join(value for key, value in scope.get("headers", []) if key == b"x-forwarded-for")
    return forwarded_client(peer, forwarded.decode("latin-1"), settings.NUM_PROXIES)


class ClientIpThrottle(ScopedRateThrottle):
    """DRF's scoped throttle, keyed on client_ip for anonymous callers (REST_FRAMEWORK["NUM_PROXIES"] agrees)."""

    def get_ident(self, request) -> str:
        return client_ip(request)


class LoginThrottle(SimpleRateThrottle):
    """Every POST of the HTML login from one client address (LOGIN_THROTTLE_RATE): the page's twin of "token"."""

    scope = "login"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}


def client_ip_address(request) -> str | None:
    """client_ip as an IP address, or None when there is none (a test client, a unix socket): django-axes stores it
    in an address column (AXES_CLIENT_IP_CALLABLE)."""
    try:
        return str(ipaddress.ip_address(client_ip(request)))
    except ValueError:
        return None
