"""WebSocket handshakes: who is connecting, and from where.

- `Authorization: Token <key>` (the user's API token) signs the connection in, as on the API.
  A header that does not name a valid token leaves the connection anonymous, even with a session
  cookie: a wrong credential is never quietly replaced by another one.
- Browsers always send `Origin` and cannot set `Authorization` on a WebSocket; an `Origin` must be
  one of ALLOWED_HOSTS. A client without `Origin` (a script) is let through only with a token,
  so a cookie alone never opens a socket for a page from another site.
"""

from __future__ import annotations

import contextlib
import logging

from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from channels.security.websocket import AllowedHostsOriginValidator, WebsocketDenier
from django.contrib.auth.models import AnonymousUser

log = logging.getLogger("portal.ws")

KEYWORD = b"token"


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value
    return None


@database_sync_to_async
def _user_for(key: str):
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return AnonymousUser()
    return token.user


class TokenAuthMiddleware(BaseMiddleware):
    async def __call__(self, scope, receive, send):
        header = _header(scope, b"authorization")
        if header is not None:
            parts = header.split()
            user = AnonymousUser()
            if len(parts) == 2 and parts[0].lower() == KEYWORD and len(parts[1]) <= 64:
                with contextlib.suppress(UnicodeDecodeError):
                    user = await _user_for(parts[1].decode("ascii"))
            if not user.is_authenticated:
                log.info("websocket: refused token from %s", (scope.get("client") or ("?",))[0])
            scope = dict(scope, user=user, auth="token")
        return await super().__call__(scope, receive, send)


class OriginCheck:
    """Origin must be an allowed host; no Origin at all only with an Authorization header."""

    def __init__(self, application) -> None:
        self.application = application
        self.browser_check = AllowedHostsOriginValidator(application)

    async def __call__(self, scope, receive, send):
        if _header(scope, b"origin") is None:
            if _header(scope, b"authorization") is not None:
                return await self.application(scope, receive, send)
            log.info("websocket: refused a handshake with neither Origin nor token")
            return await WebsocketDenier()(scope, receive, send)
        return await self.browser_check(scope, receive, send)
