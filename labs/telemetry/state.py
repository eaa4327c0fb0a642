"""The record of one GPU as the collector publishes it: its latest values, staleness, node status and holders.

It holds everything (every holder's name); visibility.public_gpu cuts it down for each viewer.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from labs.telemetry.samples import GpuSample, GpuTarget

# Compared tick to tick to decide what changed; the sample time alone is not a change.
VALUE_FIELDS = ("util_pct", "mem_used_mb", "mem_total_mb", "temp_c", "power_w")


def _round(value: float | None, digits: int = 0) -> float | int | None:
    if value is None:
        return None
    return round(value, digits) if digits else int(round(value))


def iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, tz=dt.UTC).isoformat(timespec="milliseconds")


def gpu_state(
    target: GpuTarget,
    sample: GpuSample | None,
    *,
    holders: list[dict],
    alerts: list[dict],
    now: float,
    stale_after_s: float,
) -> dict[str, Any]:
    sampled_at = sample.sampled_at if sample is not None else None
    return {
        "key": target.key,
        "node": target.node,
        "index": target.index,
        "uuid": target.uuid or (sample.uuid if sample else None),
        "model": target.model,
        "util_pct": _round(sample.util_pct) if sample else None,
        "mem_used_mb": _round(sample.mem_used_mb) if sample else None,
        "mem_total_mb": _round(sample.mem_total_mb) if sample and sample.mem_total_mb else target.memory_mb,
        "temp_c": _round(sample.temp_c) if sample else None,
        "power_w": _round(sample.power_w, 1) if sample else None,
        "sampled_at": iso(sampled_at),
        "stale": sampled_at is None or now - sampled_at > stale_after_s,
        "node_status": target.node_status,
        "node_reason": target.node_reason,
        "holders": holders,
        "alerts": alerts,
    }


def changed_fields(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """The fields that differ from the last tick (all of them for a GPU not seen before).

    The sample time alone is not a change: a GPU that reads the same is not sent again.
    """
    if before is None:
        return [name for name in after if name != "key"]
    return [name for name, value in after.items() if name != "sampled_at" and before.get(name) != value]


def stored_state(
    target: GpuTarget,
    stored: dict[str, Any] | None,
    *,
    holders: list[dict],
    alerts: list[dict],
    now: float,
    stale_after_s: float,
) -> dict[str, Any]:
    """A GPU's record from the stored latest values, with holders, node status and staleness as of now."""
    state = gpu_state(target, None, holders=holders, alerts=alerts, now=now, stale_after_s=stale_after_s)
    if stored:
        for name in (*VALUE_FIELDS, "uuid", "sampled_at"):
            if stored.get(name) is not None:
                state[name] = stored[name]
        sampled_at = _epoch(stored.get("sampled_at"))
        state["stale"] = sampled_at is None or now - sampled_at > stale_after_s
    return state


def _epoch(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value).timestamp()
    except (TypeError, ValueError):
        return None
