"""Django's database sessions (SESSION_ENGINE "accounts.sessions"), with the lookup every page of a signed-in person
makes compiled once per process instead of per request (accounts.prepared). Everything else is Django's: the
table, the expiry, saving, cycling the key on sign-in, `clearsessions`."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.utils import timezone

from accounts.prepared import Prepared

_LIVE_SESSION = Prepared(
    lambda key, now: Session.objects.filter(session_key=key, expire_date__gt=now),
    key=Session._meta.get_field("session_key"),
    now=Session._meta.get_field("expire_date"),
)


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        # As Django's: the session with this key that has not expired; none forgets the key (a new one is made).
        found = _LIVE_SESSION.objects(self.session_key, timezone.now()) if self.session_key else []
        if found:
            return found[0]
        self._session_key = None
        return None

    async def _aget_session_from_db(self):
        return await sync_to_async(self._get_session_from_db)()
