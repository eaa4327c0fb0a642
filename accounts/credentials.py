"""The credential an open stream was opened with, and whether it still holds: what the live GPU WebSocket
(/ws/gpus/) and a followed job log look at again every CREDENTIAL_RECHECK_S while they stay open.

A stream is opened once and may last hours; the request that opened it was checked then. Signing out everywhere, a
new password, signing out of that browser, revoking the API token or switching the account off must end it too,
within seconds: each open stream keeps the `Credential` it was opened with, and the process asks
`credentials_ended` about all of its streams at once (a few queries whatever their number).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from importlib import import_module

from django.conf import settings
from django.contrib.auth import HASH_SESSION_KEY
from django.utils import timezone
from django.utils.crypto import constant_time_compare
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.models import ApiToken, User
from accounts.selectors import token_refusal


@dataclasses.dataclass(frozen=True, slots=True)
class Credential:
    """Who opened a stream and with what: an API token (its row), or a browser session (its key, and the hash of the
    person's password and session generation the session was signed in with)."""

    user_id: int
    token_id: int | None = None
    session_key: str | None = None
    session_hash: str = ""


def credential_of_scope(scope) -> Credential | None:
    """The credential an ASGI scope signed in with (portal.ws_auth: a token; Channels' AuthMiddleware: the session
    cookie); None for nobody. Reads the session: call it where the database may be used (a thread)."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return None
    if scope.get("auth") == "token":
        return Credential(user_id=user.pk, token_id=scope.get("auth_token_id"))
    session = scope.get("session")
    key = getattr(session, "session_key", None)
    if session is None or not key:
        return None
    return Credential(user_id=user.pk, session_key=key, session_hash=session.get(HASH_SESSION_KEY, "") or "")


def credential_of_request(request) -> Credential | None:
    """The same for a Django (DRF) request: its API token (request.auth) or its session."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    if isinstance(getattr(request, "auth", None), ApiToken):
        return Credential(user_id=user.pk, token_id=request.auth.pk)
    session = getattr(request, "session", None)
    key = getattr(session, "session_key", None)
    if not key:
        return None
    return Credential(user_id=user.pk, session_key=key, session_hash=session.get(HASH_SESSION_KEY, "") or "")


SIGNED_OUT = gettext_noop("You were signed out (everywhere, or by a new password): sign in again.")
SESSION_OVER = gettext_noop("Your session ended: sign in again.")
SWITCHED_OFF = gettext_noop("This account is switched off; ask the lab staff.")


def _sessions_alive(keys: set[str]) -> set[str]:
    """The session keys that still name a session that has not expired (one query for database sessions)."""
    if not keys:
        return set()
    store = import_module(settings.SESSION_ENGINE).SessionStore
    model = getattr(store, "get_model_class", None)
    if model is not None:  # the database backends (db, cached_db): one query for all
        rows = model().objects.filter(session_key__in=keys, expire_date__gt=timezone.now())
        return set(rows.values_list("session_key", flat=True))
    return {key for key in keys if store().exists(key)}


def _hash_holds(user: User, stored: str) -> bool:
    # As django.contrib.auth.get_user: the hash under the secret key or any of its fallbacks.
    if not stored:
        return False
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return any(constant_time_compare(stored, user._get_session_auth_hash(secret=secret)) for secret in secrets)


@dataclasses.dataclass(frozen=True, slots=True)
class Ended:
    """Why a credential no longer holds: 401 (signed out, token revoked or expired) or 403 (account switched off),
    and the sentence that says so."""

    status: int
    detail: str


def credentials_ended(credentials: Iterable[Credential], *, now: dt.datetime | None = None) -> dict[Credential, Ended]:
    """The credentials that no longer hold, each with why; the others are left out."""
    credentials = set(credentials)
    users = User.objects.in_bulk({c.user_id for c in credentials})
    tokens = ApiToken.objects.in_bulk({c.token_id for c in credentials if c.token_id is not None})
    alive = _sessions_alive({c.session_key for c in credentials if c.session_key})
    ended: dict[Credential, Ended] = {}
    for credential in credentials:
        user = users.get(credential.user_id)
        if user is None or not user.is_active:
            ended[credential] = Ended(403, _(SWITCHED_OFF))
        elif credential.token_id is not None:
            token = tokens.get(credential.token_id)
            if token is None or token.user_id != user.pk:
                ended[credential] = Ended(401, _("This API token no longer exists."))
            else:
                token.user = user
                refusal = token_refusal(token, now=now)
                if refusal is not None:
                    ended[credential] = Ended(401, refusal)
        elif credential.session_key not in alive:
            ended[credential] = Ended(401, _(SESSION_OVER))
        elif not _hash_holds(user, credential.session_hash):
            ended[credential] = Ended(401, _(SIGNED_OUT))
    return ended
