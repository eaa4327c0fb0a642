"""The fan-out (`GpuHub`, one per server process): the one subscriber that relays each tick to its WebSocket clients.

The collector sends one message per tick to the channel-layer group "gpus". Were every consumer
a member of the group, channels-redis would copy (and serialise) that message once per client
and hand each copy to the consumer through a database-closing dispatch: a thousand copies a
second. Instead the hub is the group's only member in this process: it receives the tick once,
keeps the current state of every GPU, and gives each consumer its viewer's view of the change.
Viewers who see the change alike (same role, no holder of theirs in it) share one encoding.

Each consumer has a short outbox; a client too slow to empty it gets a fresh snapshot instead of
a backlog, so nothing waits on it and it never misses a change silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import weakref
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from accounts.credentials import Credential, credentials_ended
from labs.telemetry import store
from labs.telemetry.collector import GROUP, ensure_embedded_collector
from labs.telemetry.visibility import (
    Viewer,
    audience_key,
    holder_index,
    public_changes,
    public_gpus,
    viewers_for,
)

log = logging.getLogger("labs.telemetry")

# channels-redis forgets group members after a day; the hub joins again well before.
REJOIN_EVERY_S = 300.0
# A sequence this far behind ours means the collector started over (its store was emptied).
RESTART_GAP = 5


class Subscriber(Protocol):
    viewer: Viewer
    credential: Credential | None  # what the connection signed in with, looked at again every CREDENTIAL_RECHECK_S

    def deliver(self, seq: int, text: str) -> None: ...

    def resync(self) -> None: ...

    def revoke(self, code: int = 4403, detail: str = "") -> None: ...


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


class GpuHub:
    def __init__(self, channel_layer=None) -> None:
        self.layer = channel_layer or get_channel_layer()
        self.subscribers: set[Subscriber] = set()
        self.states: dict[str, dict] = {}
        self.seq = 0
        self.ready = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._refresher: asyncio.Task | None = None
        self._rechecker: asyncio.Task | None = None
        self._snapshots: dict[object, str] = {}
        self._snapshot_seq = -1
        self._tick_at = time.monotonic()

    # --- subscribers ----------------------------------------------------------------

    async def join(self, subscriber: Subscriber, *, timeout_s: float = 10.0) -> None:
        self.start()
        await asyncio.wait_for(self.ready.wait(), timeout=timeout_s)
        self.subscribers.add(subscriber)

    def leave(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)

    def snapshot(self, viewer: Viewer) -> tuple[int, str]:
        """This viewer's view of every GPU, with the sequence number it is current to."""
        if self._snapshot_seq != self.seq:
            self._snapshots.clear()
            self._snapshot_seq = self.seq
        states = list(self.states.values())
        if time.monotonic() - self._tick_at > settings.TELEMETRY_STALE_AFTER_S:
            # The collector has gone quiet (it sends at least a heartbeat every few seconds): nothing is fresh.
            states = [dict(state, stale=True) for state in states]
            return self.seq, encode({"type": "snapshot", "seq": self.seq, "gpus": public_gpus(states, viewer)})
        key = audience_key(viewer, holder_index(states))
        text = self._snapshots.get(key)
        if text is None:
            text = encode({"type": "snapshot", "seq": self.seq, "gpus": public_gpus(states, viewer)})
            self._snapshots[key] = text
        return self.seq, text

    # --- the subscription -----------------------------------------------------------

    def start(self) -> None:
        ensure_embedded_collector()
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            self.ready.clear()
            self._task = loop.create_task(self._run(), name="telemetry-hub")
        if self._refresher is None or self._refresher.done():
            self._refresher = loop.create_task(self._refresh_viewers(), name="telemetry-hub-viewers")
        if self._rechecker is None or self._rechecker.done():
            self._rechecker = loop.create_task(self._recheck_credentials(), name="telemetry-hub-credentials")

    async def stop(self) -> None:
        for task in (self._task, self._refresher, self._rechecker):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _refresh_viewers(self) -> None:
        """Courses, roles and accounts change: look again now and then, for every viewer at once.

        One batch of queries for the whole process, off the send path, so no update waits for it.
        """
        while True:
            await asyncio.sleep(settings.TELEMETRY_VIEWER_REFRESH_S)
            subscribers = list(self.subscribers)
            if not subscribers:
                continue
            try:
                fresh = await database_sync_to_async(viewers_for)({s.viewer.user_id for s in subscribers})
            except Exception:
                log.exception("telemetry hub: could not refresh what viewers may see")
                continue
            for subscriber in subscribers:
                viewer = fresh.get(subscriber.viewer.user_id)
                if viewer is None:
                    subscriber.revoke()
                elif viewer != subscriber.viewer:
                    subscriber.viewer = viewer
                    subscriber.resync()

    async def _recheck_credentials(self) -> None:
        """Sign-outs everywhere, new passwords, revoked tokens: every CREDENTIAL_RECHECK_S, one batch of queries for
        every connection of the process; a connection whose credential ended is closed (4401, or 4403 for an
        account switched off) with the sentence that says why."""
        while True:
            await asyncio.sleep(settings.CREDENTIAL_RECHECK_S)
            subscribers = [s for s in self.subscribers if s.credential is not None]
            if not subscribers:
                continue
            try:
                ended = await database_sync_to_async(credentials_ended)({s.credential for s in subscribers})
            except Exception:
                log.exception("telemetry hub: could not look at the connections' credentials again")
                continue
            for subscriber in subscribers:
                why = ended.get(subscriber.credential)
                if why is not None:
                    subscriber.revoke(code=4000 + why.status, detail=why.detail)

    async def _load(self) -> None:
        latest = await asyncio.to_thread(store.read_latest)
        self.states = dict(latest["gpus"])
        self.seq = latest["seq"]

    async def _run(self) -> None:
        channel = await self.layer.new_channel()
        loop = asyncio.get_running_loop()
        failed_at = -60.0
        try:
            while True:
                try:
                    await self._subscribe(channel)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # Redis went away for a moment: keep serving what we have, and try again.
                    if loop.time() - failed_at >= 60:
                        failed_at = loop.time()
                        log.exception("telemetry hub: the channel layer failed; retrying every 2 s")
                    await asyncio.sleep(2)
        finally:
            self.ready.clear()
            try:
                await self.layer.group_discard(GROUP, channel)
            except Exception:
                log.debug("telemetry hub: could not leave the group", exc_info=True)

    async def _subscribe(self, channel: str) -> None:
        await self.layer.group_add(GROUP, channel)
        await self._load()
        self.ready.set()
        while True:
            try:
                message = await asyncio.wait_for(self.layer.receive(channel), timeout=REJOIN_EVERY_S)
            except TimeoutError:
                await self.layer.group_add(GROUP, channel)
                continue
            await self.on_tick(message)

    async def on_tick(self, message: dict) -> None:
        self._tick_at = time.monotonic()
        seq = message.get("seq")
        if not isinstance(seq, int):
            log.warning("telemetry hub: ignored a message without a sequence number")
            return
        if seq <= self.seq and self.seq - seq <= RESTART_GAP:
            return  # already have it (the store was read after it was sent)
        gpus, removed = message.get("gpus") or [], message.get("removed") or []
        if seq != self.seq + 1:
            # A message went missing between the collector and us, or the collector started over:
            # take the whole state from the store and give everyone a fresh snapshot.
            log.warning("telemetry hub: expected update %d, got %d; resending snapshots", self.seq + 1, seq)
            await self._load()
            if seq > self.seq:
                self._apply(seq, gpus, removed)
            for subscriber in list(self.subscribers):
                subscriber.resync()
            return
        self._apply(seq, gpus, removed)
        self.fan_out(seq, gpus, message.get("changed") or {}, removed)

    def _apply(self, seq: int, gpus: list[dict], removed: list[str]) -> None:
        for state in gpus:
            self.states[state["key"]] = state
        for key in removed:
            self.states.pop(key, None)
        self.seq = seq

    def fan_out(self, seq: int, gpus: list[dict], changed: dict[str, list[str]], removed: list[str]) -> None:
        index = holder_index(gpus)
        encoded: dict[object, str] = {}
        gone = [{"node": key.rsplit("/", 1)[0], "index": int(key.rsplit("/", 1)[1])} for key in removed]
        for subscriber in list(self.subscribers):
            viewer = subscriber.viewer
            key = audience_key(viewer, index)
            text = encoded.get(key)
            if text is None:
                body = {"type": "update", "seq": seq, "gpus": public_changes(gpus, changed, viewer)}
                if gone:
                    body["removed"] = gone
                text = encoded[key] = encode(body)
            subscriber.deliver(seq, text)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GpuHub] = weakref.WeakKeyDictionary()


def get_hub() -> GpuHub:
    """This event loop's hub (a server process has one loop, so one hub)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = GpuHub()
    return hub
