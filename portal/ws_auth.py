"""WebSocket handshakes: who is connecting, and from where.

- `Authorization: Token <key>` (the user's API token) signs the connection in, as on the API.
  A header that does not name a valid, unexpired token leaves the connection anonymous, even with a
  session cookie: a wrong credential is never quietly replaced by another one.
- Browsers always send `Origin` and cannot set `Authorization` on a WebSocket. An `Origin` must be the
  portal's own origin in full (scheme, host and port, as the handshake reached the portal, its host one of
  ALLOWED_HOSTS) or one of CSRF_TRUSTED_ORIGINS: the rule Django's CSRF check applies to pages. A client
  without `Origin` (a script) is let through only with a token, so a cookie alone never opens a socket for a
  page from another site.
"""

from __future__ import annotations

import contextlib
import logging
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from accounts.addresses import scope_client_ip

log = logging.getLogger("portal.ws")

KEYWORD = b"token"
DEFAULT_PORTS = {"http": 80, "https": 443}

Origin = tuple[str, str, int]  # scheme, host (lower case, IPv6 without brackets), port


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value
    return None


@database_sync_to_async
def _user_for(key: str):
    """(the token's user, its id, None), or (AnonymousUser, None, the API's 401 sentence for the key)."""
    from accounts.services import token_authenticate

    token, refusal = token_authenticate(key)
    if refusal is not None:
        return AnonymousUser(), None, refusal
    return token.user, token.pk, None


class TokenAuthMiddleware(BaseMiddleware):
    async def __call__(self, scope, receive, send):
        header = _header(scope, b"authorization")
        if header is not None:
            parts = header.split()
            user, token_id, refusal = AnonymousUser(), None, None
            if len(parts) == 2 and parts[0].lower() == KEYWORD and len(parts[1]) <= 64:
                with contextlib.suppress(UnicodeDecodeError):
                    user, token_id, refusal = await _user_for(parts[1].decode("ascii"))
            if not user.is_authenticated:
                log.info("websocket: refused token from %s", scope_client_ip(scope))
            # The token's id stays with the connection: it is looked at again while the stream is open.
            scope = dict(scope, user=user, auth="token", auth_token_id=token_id, auth_refusal=refusal)
        return await super().__call__(scope, receive, send)


def parse_origin(origin: str) -> Origin | None:
    """(scheme, host, port) of an http(s) origin with the default port filled in; None for anything else."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _allowed_hosts() -> list[str]:
    # As Django's request.get_host(): with DEBUG and no ALLOWED_HOSTS, the loopback names.
    if settings.DEBUG and not settings.ALLOWED_HOSTS:
        return [".localhost", "127.0.0.1", "[::1]"]
    return settings.ALLOWED_HOSTS


def _is_tls(scope) -> bool:
    """As Django's request.is_secure(): a wss:// handshake, or the TLS proxy's header when one is configured."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    if settings.SECURE_PROXY_SSL_HEADER:
        name, expected = settings.SECURE_PROXY_SSL_HEADER
        header = name.removeprefix("HTTP_").lower().replace("_", "-").encode("latin-1")
        value = _header(scope, header)
        return value is not None and value.decode("latin-1").split(",", 1)[0].strip() == expected
    return False


def own_origin(scope) -> Origin | None:
    """The origin the handshake was made to: its scheme, and the Host it named (one of ALLOWED_HOSTS)."""
    scheme = "https" if _is_tls(scope) else "http"
    host = _header(scope, b"host")
    if host is not None:
        host = host.decode("latin-1")
    elif scope.get("server"):
        server_host, server_port = scope["server"][:2]
        host = f"{server_host}:{server_port}" if server_port else str(server_host)
    if not host:
        return None
    domain, port = split_domain_port(host)
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    return scheme, domain.strip("[]"), int(port) if port else DEFAULT_PORTS[scheme]


def origin_allowed(origin: Origin, scope) -> bool:
    if origin == own_origin(scope):
        return True
    scheme, host, port = origin
    for trusted in settings.CSRF_TRUSTED_ORIGINS:
        wildcard = "://*." in trusted
        expected = parse_origin(trusted.replace("://*.", "://", 1))
        if expected is None or expected[0] != scheme or expected[2] != port:
            continue
        if host == expected[1] or (wildcard and is_same_domain(host, "." + expected[1])):
            return True
    return False


class OriginCheck:
    """Origin must be the portal's own (scheme, host, port) or a trusted one; no Origin only with a token."""

    def __init__(self, application) -> None:
        self.application = application

    async def __call__(self, scope, receive, send):
        header = _header(scope, b"origin")
        if header is None:
            if _header(scope, b"authorization") is not None:
                return await self.application(scope, receive, send)
            log.info("websocket: refused a handshake with neither Origin nor token")
            return await WebsocketDenier()(scope, receive, send)
        origin = parse_origin(header.decode("latin-1"))
        if origin is None or not origin_allowed(origin, scope):
            log.info("websocket: refused origin %r from %s", header[:200], scope_client_ip(scope))
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
