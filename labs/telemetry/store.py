"""Where the live state lives between processes: Django's cache (Redis in production, local memory embedded).

- the latest state of every GPU, with the sequence number of the last published update;
- each node's inbox: what its NVML agent pushed last, read by the collector when TELEMETRY_SOURCE=agent;
- the collector's lease, so that two collectors started by mistake do not both publish.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from django.conf import settings
from django.core.cache import cache

from labs.telemetry.samples import GpuSample

LATEST_KEY = "telemetry:latest"
LEASE_KEY = "telemetry:collector-lease"
INBOX_PREFIX = "telemetry:push:"
DROPPED_KEY = "telemetry:dropped"
# The latest state outlives a collector restart, and says by its sample times how old it is.
LATEST_TIMEOUT_S = 24 * 3600


def read_latest() -> dict[str, Any]:
    """{"seq": int, "at": float, "gpus": {key: state}}; empty when no collector has run."""
    latest = cache.get(LATEST_KEY)
    if not isinstance(latest, dict) or not isinstance(latest.get("gpus"), dict):
        return {"seq": 0, "at": None, "gpus": {}}
    return latest


def write_latest(*, seq: int, at: float, gpus: dict[str, dict]) -> None:
    cache.set(LATEST_KEY, {"seq": seq, "at": at, "gpus": gpus}, timeout=LATEST_TIMEOUT_S)


def push_to_inbox(node: str, samples: list[GpuSample]) -> None:
    """Keep what a node's agent pushed, for the collector's next tick. A newer push replaces the older one."""
    timeout = max(settings.TELEMETRY_STALE_AFTER_S * 2, 10)
    cache.set(INBOX_PREFIX + node, [dataclasses.asdict(sample) for sample in samples], timeout=timeout)


def read_inboxes(nodes: list[str]) -> list[GpuSample]:
    pushed = cache.get_many([INBOX_PREFIX + node for node in nodes])
    samples = []
    for rows in pushed.values():
        for row in rows or []:
            try:
                samples.append(GpuSample(**row))
            except TypeError:
                continue  # written by another version of the portal; the next push replaces it
    return samples


def count_dropped(n: int) -> None:
    """Samples refused or dropped, for /metrics (a counter shared by every process)."""
    if n <= 0:
        return
    if cache.add(DROPPED_KEY, n, timeout=None):
        return
    try:
        cache.incr(DROPPED_KEY, n)
    except ValueError:
        cache.set(DROPPED_KEY, n, timeout=None)


def dropped_total() -> int:
    value = cache.get(DROPPED_KEY)
    return value if isinstance(value, int) else 0


class Lease:
    """A lease on publishing, renewed every tick: a second collector waits until the first stops renewing."""

    def __init__(self, ttl_s: float) -> None:
        self.owner = uuid.uuid4().hex
        self.ttl_s = max(2, int(ttl_s + 0.999))

    def acquire(self) -> bool:
        if cache.add(LEASE_KEY, self.owner, timeout=self.ttl_s):
            return True
        if cache.get(LEASE_KEY) == self.owner:
            cache.set(LEASE_KEY, self.owner, timeout=self.ttl_s)
            return True
        return False

    def release(self) -> None:
        if cache.get(LEASE_KEY) == self.owner:
            cache.delete(LEASE_KEY)
