"""The live GPU status WebSocket, /ws/gpus/.

Signed in by the session cookie or an `Authorization: Token` header (portal.ws_auth); anyone else
is refused at the handshake. The first message is `{"type": "snapshot", "seq", "gpus"}` (whole
records), then `{"type": "update", "seq", "gpus"}` with the GPUs that changed: each GPU's node,
index, sample time and changed fields, as the viewer may see them (labs.telemetry.visibility).
Sequence numbers follow on by one (a quiet lab still gets an empty update every 10 s); a client that sees a gap sends
`{"type": "resync"}` and gets a new snapshot: at most one per TELEMETRY_RESYNC_MIN_S per connection (a snapshot is
some 12 KB for a 17-byte ask); one asked for sooner is owed, and comes in place of the first update after the
interval, however many were asked meanwhile. The consumer only relays: nothing a client sends
changes anything, and nothing it sends can break the connection of anyone else. The process's
fan-out (labs.telemetry.fanout) looks at every viewer again now and then (TELEMETRY_VIEWER_REFRESH_S):
a changed course or role brings a new snapshot, a deactivated account is closed (4403). And at the credential each
connection signed in with, every CREDENTIAL_RECHECK_S: after a sign-out everywhere, a new password, signing out of
that browser or revoking the token, the client gets `{"type": "closing", "code": 4401, "detail": "<why>"}` and the
connection is closed with 4401 (4403 for an account switched off).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from accounts.credentials import Credential, credential_of_scope
from labs.telemetry.fanout import GpuHub, encode, get_hub
from labs.telemetry.visibility import Viewer, viewers_for

log = logging.getLogger("labs.telemetry")
monotonic = time.monotonic  # the resync limit's clock (tests move it)


def _load_viewer(user_id: int) -> Viewer | None:
    return viewers_for([user_id]).get(user_id)


class GpuStatusConsumer(AsyncWebsocketConsumer):
    # No channel of its own: the process's hub receives each tick once and hands it to every consumer.
    channel_layer_alias = "no-channel-layer-for-gpu-consumers"

    viewer: Viewer
    credential: Credential | None = None
    hub: GpuHub | None = None
    _sender: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_active:
            log.info("ws/gpus: refused a handshake without a valid session or token from %s", self._client())
            await self.close()
            return
        try:
            viewer = await database_sync_to_async(_load_viewer)(user.pk)
            credential = await database_sync_to_async(credential_of_scope)(self.scope)
        except Exception:
            log.exception("ws/gpus: could not load what %s may see", user.pk)
            viewer = credential = None
        if viewer is None or credential is None:
            await self.close()
            return
        self.viewer, self.credential = viewer, credential
        self._outbox: collections.deque[tuple[int, str]] = collections.deque()
        self._limit = settings.TELEMETRY_CLIENT_QUEUE
        self._wake = asyncio.Event()
        self._resync = True  # the first thing sent is a snapshot
        self._seq = -1
        self._revoked = False
        self._close = (4403, "")
        self._asked_at: float | None = None  # when a resync the client asked for was last granted
        self._resync_owed = False
        await self.accept()
        self.hub = get_hub()
        try:
            await self.hub.join(self)
        except TimeoutError:
            log.error("ws/gpus: the telemetry hub did not start; closing %s", self._client())
            await self.close(code=1011)
            return
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())
        self._wake.set()

    async def disconnect(self, code: int) -> None:
        if self.hub is not None:
            self.hub.leave(self)
        if self._sender is not None:
            self._sender.cancel()

    # --- from the hub (called on the event loop, never blocks) ----------------------------

    def deliver(self, seq: int, text: str) -> None:
        if self._resync_owed and self._may_resync():
            self._resync_owed = False
            self.resync()  # the snapshot asked for too soon, in place of this update
            return
        if len(self._outbox) >= self._limit:
            # The client cannot keep up: drop the backlog and send one snapshot when it can take it.
            self._outbox.clear()
            self._resync = True
        else:
            self._outbox.append((seq, text))
        self._wake.set()

    def resync(self) -> None:
        self._outbox.clear()
        self._resync = True
        self._wake.set()

    def revoke(self, code: int = 4403, detail: str = "") -> None:
        """The account was deactivated (4403), or the credential the connection signed in with ended (4401, with
        the sentence that says why): close at the next chance."""
        self._revoked, self._close = True, (code, detail)
        self._wake.set()

    async def _send_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._revoked:
                    code, detail = self._close
                    log.info("ws/gpus: closing %s's connection (%d)", self.viewer.username, code)
                    if detail:
                        await self.send(text_data=encode({"type": "closing", "code": code, "detail": detail}))
                    # A close frame's reason holds 123 bytes: the sentence, cut there (the message above has it whole).
                    reason = detail.encode()[:123].decode(errors="ignore") or None
                    await self.close(code=code, reason=reason)
                    return
                if self._resync:
                    self._resync = False
                    self._seq, text = self.hub.snapshot(self.viewer)
                    await self.send(text_data=text)
                while self._outbox and not self._resync:
                    seq, text = self._outbox.popleft()
                    if seq > self._seq:
                        self._seq = seq
                        await self.send(text_data=text)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the client went away mid-send
            log.debug("ws/gpus: stopped sending to %s: %s", self._client(), exc)

    # --- from the client ------------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        message = None
        if text_data is not None and len(text_data) <= 1024:
            try:
                message = json.loads(text_data)
            except ValueError:
                message = None
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "ping":
            await self.send(text_data='{"type":"pong"}')
        elif kind == "resync":
            if self._may_resync():
                self.resync()
            else:
                self._resync_owed = True
                log.debug("ws/gpus: a resync from %s within TELEMETRY_RESYNC_MIN_S is owed", self._client())
        else:
            log.debug("ws/gpus: ignored a message from %s", self._client())

    def _may_resync(self) -> bool:
        """Whether a resync the client asked for may be sent now; if so, it counts from now."""
        now = monotonic()
        if self._asked_at is not None and now - self._asked_at < settings.TELEMETRY_RESYNC_MIN_S:
            return False
        self._asked_at = now
        return True

    def _client(self) -> str:
        client = self.scope.get("client") or ("?", 0)
        return f"{client[0]}:{client[1]}"
