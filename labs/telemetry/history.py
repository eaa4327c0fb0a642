"""One-minute buckets of every GPU's samples: averaged and peaked in memory, written when the minute is over.

A sample is counted once, by its own time (a pushed sample read on two ticks is one sample), and
a minute is written a few seconds after it ends, so late pushes still land in it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.db import transaction

from labs.models import Gpu, GpuMinute
from labs.telemetry.samples import GpuSample

log = logging.getLogger("labs.telemetry")

# Wait this long after a minute ends before writing it: pushes may arrive late.
GRACE_S = 5.0
FIELDS = (("util_pct", "util"), ("mem_used_mb", "mem_used"), ("temp_c", "temp"), ("power_w", "power"))
COLUMNS = {
    "util": ("util_avg", "util_max"),
    "mem_used": ("mem_used_avg_mb", "mem_used_max_mb"),
    "temp": ("temp_avg_c", "temp_max_c"),
    "power": ("power_avg_w", "power_max_w"),
}


@dataclasses.dataclass
class _Bucket:
    samples: int = 0
    sums: dict[str, float] = dataclasses.field(default_factory=dict)
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
    peaks: dict[str, float] = dataclasses.field(default_factory=dict)

    def add(self, sample: GpuSample) -> None:
        self.samples += 1
        for field, name in FIELDS:
            value = getattr(sample, field)
            if value is None:
                continue
            self.sums[name] = self.sums.get(name, 0.0) + value
            self.counts[name] = self.counts.get(name, 0) + 1
            self.peaks[name] = max(self.peaks.get(name, value), value)

    def columns(self) -> dict[str, float | None]:
        values: dict[str, float | None] = {}
        for name, (avg, peak) in COLUMNS.items():
            count = self.counts.get(name, 0)
            values[avg] = round(self.sums[name] / count, 2) if count else None
            values[peak] = self.peaks.get(name)
        return values


class MinuteBuckets:
    def __init__(self) -> None:
        self._buckets: dict[tuple[int, int], _Bucket] = {}
        self._last_seen: dict[int, float] = {}

    def add(self, gpu_id: int, sample: GpuSample) -> None:
        if sample.sampled_at <= self._last_seen.get(gpu_id, float("-inf")):
            return  # the same pushed sample read again, or an older one
        self._last_seen[gpu_id] = sample.sampled_at
        minute = int(sample.sampled_at // 60) * 60
        self._buckets.setdefault((gpu_id, minute), _Bucket()).add(sample)

    def pending(self) -> int:
        return len(self._buckets)

    def due(self, now: float, *, everything: bool = False) -> list[GpuMinute]:
        """Take the buckets of minutes that are over (all of them with `everything`) as unsaved rows."""
        rows = []
        for (gpu_id, minute), bucket in list(self._buckets.items()):
            if everything or minute + 60 + GRACE_S <= now:
                del self._buckets[(gpu_id, minute)]
                try:
                    at = dt.datetime.fromtimestamp(minute, tz=dt.UTC)
                except (OverflowError, OSError, ValueError):
                    log.warning("telemetry: dropped the minute of GPU %s at %s: no date has that time", gpu_id, minute)
                    continue
                rows.append(GpuMinute(gpu_id=gpu_id, minute=at, samples=bucket.samples, **bucket.columns()))
        return rows


def minutes_save(*, rows: list[GpuMinute]) -> int:
    """Write finished minutes; a minute written before (a restarted collector) is replaced."""
    if not rows:
        return 0
    update = ["samples", *[column for pair in COLUMNS.values() for column in pair]]
    # A GPU may have left the inventory since its minute began.
    known = set(Gpu.objects.filter(pk__in={row.gpu_id for row in rows}).values_list("pk", flat=True))
    rows = [row for row in rows if row.gpu_id in known]
    with transaction.atomic():
        GpuMinute.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["gpu", "minute"], update_fields=update
        )
    return len(rows)


def minutes_prune(*, before: dt.datetime) -> int:
    deleted, _ = GpuMinute.objects.filter(minute__lt=before).delete()
    if deleted:
        log.info("telemetry: pruned %d minute buckets older than %s", deleted, before.isoformat())
    return deleted
