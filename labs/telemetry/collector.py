"""The collector: once per interval, sample every GPU, check, join to the ledger, and publish what changed.

Each tick reads the inventory and the open allocations (two queries), asks the source, drops
absurd samples, builds each GPU's record, keeps the latest state in the cache and sends ONE
channel-layer message to the group "gpus" with the GPUs that changed (whole records, and which
fields changed) and a sequence number; each server process relays it to its WebSocket clients,
who can tell when one went missing.
It also feeds the one-minute history and the health watch.

With Redis it runs as its own process (manage.py telemetry_collect); embedded (no Redis, the
in-memory channel layer belongs to the web server's process) it runs as a task on the server's
event loop, started by the ASGI lifespan or by the first WebSocket client.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import time
import weakref

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from accounts.errors import BackendError
from labs.telemetry import store
from labs.telemetry.health import HealthWatch, alerts_apply
from labs.telemetry.history import MinuteBuckets, minutes_prune, minutes_save
from labs.telemetry.holders import lab_targets
from labs.telemetry.samples import GpuSample, GpuTarget, checked, match_targets, throttled
from labs.telemetry.sources import TelemetrySource, get_telemetry_source
from labs.telemetry.state import changed_fields, gpu_state

log = logging.getLogger("labs.telemetry")

GROUP = "gpus"
TICK = "gpus.tick"
ALERTS_RELOAD_S = 10.0
PRUNE_EVERY_S = 3600.0
ERROR_LOG_EVERY_S = 60.0
HEARTBEAT_S = 10.0


@dataclasses.dataclass
class TickReport:
    seq: int = 0
    samples: int = 0
    dropped: int = 0
    changed: int = 0
    published: bool = False
    active: bool = True


class Collector:
    def __init__(
        self,
        *,
        source: TelemetrySource | None = None,
        interval_s: float | None = None,
        stale_after_s: float | None = None,
        health: HealthWatch | None = None,
        channel_layer=None,
    ) -> None:
        self.source = source or get_telemetry_source()
        self.interval_s = interval_s or settings.TELEMETRY_INTERVAL_MS / 1000
        self.stale_after_s = float(stale_after_s or settings.TELEMETRY_STALE_AFTER_S)
        self.health = health or HealthWatch()
        self.layer = channel_layer or get_channel_layer()
        self.history = MinuteBuckets()
        self.lease = store.Lease(ttl_s=max(3 * self.interval_s, 3))
        self.latest: dict[str, GpuSample] = {}
        self.previous: dict[str, dict] = {}
        self.seq = 0
        self.active = False
        self._alerts_loaded_at = -1e18
        self._pruned_at = 0.0
        self._published_at = -1e18

    # --- one tick ---------------------------------------------------------------------

    async def tick(self, now: float | None = None) -> TickReport:
        report = TickReport()
        if not await asyncio.to_thread(self.lease.acquire):
            if self.active:
                log.warning("telemetry: another collector holds the lease; standing by")
            self.active, report.active = False, False
            return report
        if not self.active:
            # Taking over: continue the published sequence, and send every GPU once.
            self.active = True
            self.seq = (await asyncio.to_thread(store.read_latest))["seq"]
            self.previous = {}
        if time.time() - self._alerts_loaded_at >= ALERTS_RELOAD_S:
            await database_sync_to_async(self.health.load)()
            self._alerts_loaded_at = time.time()

        targets, holders = await database_sync_to_async(lab_targets)()
        now = time.time() if now is None else now
        raw = await self._collect(targets, now)
        matched = match_targets(raw, targets, source=self.source.name)
        good = {sample.key: sample for sample in checked(matched.values(), source=self.source.name, now=now)}
        report.samples, report.dropped = len(good), len(raw) - len(good)

        by_key = {target.key: target for target in targets}
        fresh = []
        for key, sample in good.items():
            try:
                last = self.latest.get(key)
                if last is None or sample.sampled_at > last.sampled_at:
                    self.history.add(by_key[key].gpu_id, sample)
                    self.latest[key] = sample
                    fresh.append((by_key[key], sample))
            except Exception as exc:  # one GPU's sample must never stop the lab's tick
                self._skip(key, exc)
        for key in [key for key in self.latest if key not in by_key]:
            del self.latest[key]

        changes = []
        for target, sample in fresh:
            try:
                changes.extend(self.health.check([(target, sample)], now))
            except Exception as exc:
                self._skip(target.key, exc)
        if changes:
            await database_sync_to_async(alerts_apply)(changes=changes, now=now)

        states = {target.key: self._state(target, holders, now) for target in targets}
        fields = {key: changed_fields(self.previous.get(key), state) for key, state in states.items()}
        changed = [states[key] for key, names in fields.items() if names]
        removed = [key for key in self.previous if key not in states]
        report.changed = len(changed)
        # Nothing changed for a while: an empty update still goes out, so clients know the stream is alive.
        publish = bool(changed or removed) or now - self._published_at >= HEARTBEAT_S
        if publish:
            self.seq += 1
        await asyncio.to_thread(self._store, states, now, report.dropped)
        if publish:
            message = {
                "type": TICK,
                "seq": self.seq,
                "gpus": changed,  # whole records: every server keeps the whole state for its snapshots
                "changed": {state["key"]: fields[state["key"]] for state in changed},
                "removed": removed,
            }
            await self.layer.group_send(GROUP, message)
            report.published = True
            self._published_at = now
        self.previous = states
        report.seq = self.seq

        await self._history(now)
        return report

    def _skip(self, key: str, exc: Exception) -> None:
        """A GPU whose data broke something (a value that passed an older check, a bug): forget its sample, so it
        shows stale instead of stopping every other GPU, and say so once a minute."""
        self.latest.pop(key, None)
        throttled.warning(key, "unusable", "telemetry: skipped the sample of %s on this tick: %r", key, exc)

    def _state(self, target: GpuTarget, holders: dict, now: float) -> dict:
        context = {
            "holders": holders.get(target.gpu_id, []),
            "alerts": self.health.alerts_of(target.gpu_id),
            "now": now,
            "stale_after_s": self.stale_after_s,
        }
        try:
            return gpu_state(target, self.latest.get(target.key), **context)
        except Exception as exc:
            self._skip(target.key, exc)
            return gpu_state(target, None, **context)

    async def _collect(self, targets, now: float) -> list[GpuSample]:
        try:
            if self.source.blocking:
                return await asyncio.to_thread(self.source.collect, targets, now)
            return self.source.collect(targets, now)
        except BackendError as exc:
            throttled.warning(self.source.name, "failed", "telemetry: the %s source failed: %s", self.source.name, exc)
            return []

    def _store(self, states: dict[str, dict], now: float, dropped: int) -> None:
        store.write_latest(seq=self.seq, at=now, gpus=states)
        store.count_dropped(dropped)

    async def _history(self, now: float) -> None:
        rows = self.history.due(now)
        if rows:
            await database_sync_to_async(minutes_save)(rows=rows)
        if now - self._pruned_at >= PRUNE_EVERY_S:
            self._pruned_at = now
            before = dt.datetime.fromtimestamp(now, tz=dt.UTC) - dt.timedelta(days=settings.TELEMETRY_HISTORY_DAYS)
            await database_sync_to_async(minutes_prune)(before=before)

    # --- the loop ---------------------------------------------------------------------

    async def run(self, *, stop: asyncio.Event | None = None, ticks: int | None = None) -> None:
        """Tick every interval until stopped; a failing tick is logged and the next one tried."""
        log.info(
            "telemetry collector: source %s, every %.2f s, stale after %.0f s",
            self.source.name,
            self.interval_s,
            self.stale_after_s,
        )
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        done = 0
        failed_at = -ERROR_LOG_EVERY_S
        try:
            while (stop is None or not stop.is_set()) and (ticks is None or done < ticks):
                try:
                    await self.tick()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    # The database or Redis is away: say so once a minute, not once a tick.
                    if loop.time() - failed_at >= ERROR_LOG_EVERY_S:
                        failed_at = loop.time()
                        log.exception("telemetry: a collector tick failed (repeats are not logged for a minute)")
                done += 1
                next_at += self.interval_s
                delay = next_at - loop.time()
                if delay < 0:
                    # Overran: skip the ticks that are already late instead of bunching them up.
                    next_at = loop.time()
                    delay = 0
                if stop is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=delay)
                else:
                    await asyncio.sleep(delay)
        finally:
            await self.close()

    async def close(self) -> None:
        rows = self.history.due(time.time(), everything=True)
        try:
            if rows:
                await database_sync_to_async(minutes_save)(rows=rows)
            await asyncio.to_thread(self.lease.release)
        except Exception:
            log.exception("telemetry: could not save the last minute on the way out")


# --- embedded: a task on the web server's own event loop ----------------------------------

_embedded: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Task] = weakref.WeakKeyDictionary()


def ensure_embedded_collector() -> asyncio.Task | None:
    """Start the collector on this event loop if this process is to run it and it is not running."""
    if settings.TELEMETRY_COLLECTOR != "embedded":
        return None
    loop = asyncio.get_running_loop()
    task = _embedded.get(loop)
    if task is None or task.done():
        task = loop.create_task(Collector().run(), name="telemetry-collector")
        _embedded[loop] = task
    return task


async def stop_embedded_collector() -> None:
    task = _embedded.pop(asyncio.get_running_loop(), None)
    if task is not None and not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
