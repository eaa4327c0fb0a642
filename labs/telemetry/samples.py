"""What a GPU sample is, what the collector knows about each GPU, and the checks that keep nonsense out.

A sample whose values no working GPU can report (negative memory, 10,000 °C, NaN) is dropped
whole with a log line: when one sensor reads garbage, the rest of that reading is suspect too.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterable

log = logging.getLogger("labs.telemetry")

# Bounds no working GPU leaves. Generous: they catch broken sensors and bad input, not hot GPUs.
LIMITS: dict[str, tuple[float, float]] = {
    "util_pct": (0.0, 100.0),
    "mem_used_mb": (0.0, 4 * 1024 * 1024),
    "mem_total_mb": (1.0, 4 * 1024 * 1024),
    "temp_c": (-40.0, 150.0),
    "power_w": (0.0, 3000.0),
    "energy_j": (0.0, 1e13),
    "xid": (0.0, 10_000.0),
}
# Clocks drift; a sample from further in the future than this is refused.
MAX_CLOCK_SKEW_S = 60.0
# A sample older than this is refused too: the live view shows now, the minutes it would count in are written
# already, and a time no clock can hold (-1e18) would break every tick that formats it.
MAX_SAMPLE_AGE_S = 300.0


@dataclasses.dataclass(frozen=True, slots=True)
class GpuSample:
    """One reading of one GPU. Values a source does not report are None."""

    node: str
    index: int
    sampled_at: float  # seconds since the epoch
    uuid: str | None = None
    model: str | None = None
    util_pct: float | None = None
    mem_used_mb: float | None = None
    mem_total_mb: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    energy_j: float | None = None  # energy used since the driver loaded
    xid: int | None = None  # the last Xid error the driver reported, 0 for none

    @property
    def key(self) -> str:
        return gpu_key(self.node, self.index)


@dataclasses.dataclass(frozen=True, slots=True)
class GpuTarget:
    """A GPU of the inventory as the collector sees it on this tick."""

    gpu_id: int
    node: str
    index: int
    uuid: str | None
    model: str
    memory_mb: int
    node_status: str
    held: bool = False  # the ledger has an open allocation on it (the simulator puts it to work)
    node_reason: str = ""  # why the node is cordoned or down (the admin's words)

    @property
    def key(self) -> str:
        return gpu_key(self.node, self.index)


def gpu_key(node: str, index: int) -> str:
    return f"{node}/{index}"


class ThrottledLog:
    """Log a recurring problem once per interval per subject: a broken sensor read at 1 Hz must not flood the log."""

    def __init__(self, interval_s: float = 60.0) -> None:
        self.interval_s = interval_s
        self._last: dict[tuple[str, str], float] = {}

    def warning(self, subject: str, reason: str, message: str, *args) -> None:
        now = time.monotonic()
        key = (subject, reason)
        if now - self._last.get(key, -math.inf) >= self.interval_s:
            self._last[key] = now
            log.warning(message, *args)
        if len(self._last) > 10_000:  # a flood of distinct subjects: forget, do not grow
            self._last.clear()


throttled = ThrottledLog()


@dataclasses.dataclass(frozen=True, slots=True)
class Problem:
    """Why a sample cannot be true: the field at fault, the log's terse text, and what a node's admin should do."""

    field: str
    text: str  # for the log: "sample time 3600 s in the past (more than 300 s)"
    advice: str  # for the agent's 400: "This time is more than 5 minutes ago; send current samples and ..."

    def __str__(self) -> str:
        return self.text


def sample_problem(sample: GpuSample, *, now: float | None = None) -> Problem | None:
    """The one check of a sample, for the collector and the agents' pushes alike: its problem, or None."""
    now = time.time() if now is None else now
    when = sample.sampled_at
    if not isinstance(when, (int, float)) or not math.isfinite(when):
        return Problem("sampled_at", "no valid sample time", "Give seconds since the epoch or an ISO 8601 time.")
    if when > now + MAX_CLOCK_SKEW_S:
        return Problem(
            "sampled_at",
            f"sample time {when - now:.0f} s in the future",
            "This time is in the future; check the node's clock.",
        )
    if when < now - MAX_SAMPLE_AGE_S:
        return Problem(
            "sampled_at",
            f"sample time {now - when:.0f} s in the past (more than {MAX_SAMPLE_AGE_S:.0f} s)",
            f"This time is more than {MAX_SAMPLE_AGE_S / 60:.0f} minutes ago; send current samples and check the "
            "node's clock.",
        )
    for field, (low, high) in LIMITS.items():
        value = getattr(sample, field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return Problem(field, f"{field} is not a number ({value!r})", "Give a number.")
        if not low <= value <= high:
            return Problem(
                field, f"{field} {value:g} is outside {low:g}..{high:g}", f"No GPU reads {value:g}; check the sensor."
            )
    # Drivers round; a percent over is rounding, more is a broken reading.
    used, total = sample.mem_used_mb, sample.mem_total_mb
    if used is not None and total is not None and used > total * 1.01:
        return Problem(
            "mem_used_mb", f"mem_used_mb {used:g} exceeds mem_total_mb {total:g}", "More memory used than the GPU has."
        )
    return None


def problem_with(sample: GpuSample, *, now: float | None = None) -> str | None:
    """Why the sample cannot be true, or None when it can (the log's text of `sample_problem`)."""
    problem = sample_problem(sample, now=now)
    return None if problem is None else problem.text


def checked(samples: Iterable[GpuSample], *, source: str, now: float | None = None) -> list[GpuSample]:
    """The samples that pass the checks; each dropped one is logged (at most once a minute per GPU and reason)."""
    kept = []
    for sample in samples:
        problem = problem_with(sample, now=now)
        if problem is None:
            kept.append(sample)
        else:
            throttled.warning(
                sample.key,
                problem.split(" ")[0],
                "telemetry: dropped a %s sample of %s: %s",
                source,
                sample.key,
                problem,
            )
    return kept


def match_targets(samples: Iterable[GpuSample], targets: Iterable[GpuTarget], *, source: str) -> dict[str, GpuSample]:
    """Samples keyed by the inventory GPU they belong to: by UUID where both know it, else by node and index.

    Samples of GPUs the inventory does not know are dropped with a log line.
    """
    targets = list(targets)
    by_uuid = {target.uuid: target for target in targets if target.uuid}
    by_key = {target.key: target for target in targets}
    matched: dict[str, GpuSample] = {}
    for sample in samples:
        target = by_uuid.get(sample.uuid) if sample.uuid else None
        target = target or by_key.get(sample.key)
        if target is None:
            throttled.warning(
                sample.key, "unknown", "telemetry: %s reported %s, which is not in the inventory", source, sample.key
            )
            continue
        if sample.key != target.key:
            sample = dataclasses.replace(sample, node=target.node, index=target.index)
        if sample.mem_total_mb is None:
            sample = dataclasses.replace(sample, mem_total_mb=float(target.memory_mb))
        matched[target.key] = sample
    return matched
