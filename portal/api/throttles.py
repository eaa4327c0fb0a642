"""The throttles keyed on the caller's address, read by the one rule in accounts.addresses (FORWARDED_ALLOW_IPS)."""

from __future__ import annotations

from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

from accounts.addresses import client_ip


class ClientIpThrottle(ScopedRateThrottle):
    """DRF's scoped throttle, keyed on client_ip for anonymous callers."""

    def get_ident(self, request) -> str:
        return client_ip(request)


class LoginThrottle(SimpleRateThrottle):
    """Every POST of the HTML login from one client address (LOGIN_THROTTLE_RATE): the page's twin of "token"."""

    scope = "login"

    def get_cache_key(self, request, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}
