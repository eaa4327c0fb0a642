"""The node page's last-hour charts, drawn as inline SVG: no chart library, nothing loaded from elsewhere."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

from labs.models import GpuMinute

WIDTH = 600
HEIGHT = 120
# A gap of more than this between buckets breaks the line (the GPU was not sampled then).
GAP = dt.timedelta(minutes=2)


@dataclasses.dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    top: float  # the value at the top edge
    lines: list[str]  # SVG polyline "points" attributes, one per unbroken stretch
    peak_lines: list[str]
    latest: float | None
    width: int = WIDTH
    height: int = HEIGHT


def _segments(rows: Sequence[GpuMinute], column: str, *, start: dt.datetime, end: dt.datetime, top: float) -> list[str]:
    span = (end - start).total_seconds() or 1.0
    segments: list[list[str]] = []
    previous: dt.datetime | None = None
    for row in rows:
        value = getattr(row, column)
        if value is None:
            previous = None
            continue
        x = (row.minute - start).total_seconds() / span * WIDTH
        y = HEIGHT - min(max(value / top, 0.0), 1.0) * HEIGHT
        if previous is None or row.minute - previous > GAP:
            segments.append([])
        segments[-1].append(f"{x:.1f},{y:.1f}")
        previous = row.minute
    return [" ".join(points) for points in segments]


def gpu_charts(rows: Sequence[GpuMinute], *, memory_mb: int, end: dt.datetime) -> list[Chart]:
    """Utilisation, memory, temperature and power over the hour before `end`."""
    start = end - dt.timedelta(hours=1)
    specs = [
        ("Utilisation", "%", 100.0, "util_avg", "util_max"),
        ("Memory used", "MiB", float(memory_mb), "mem_used_avg_mb", "mem_used_max_mb"),
        ("Temperature", "°C", 100.0, "temp_avg_c", "temp_max_c"),
        ("Power", "W", 500.0, "power_avg_w", "power_max_w"),
    ]
    charts = []
    for title, unit, top, avg, peak in specs:
        latest = next((getattr(row, avg) for row in reversed(rows) if getattr(row, avg) is not None), None)
        charts.append(
            Chart(
                title=title,
                unit=unit,
                top=top,
                lines=_segments(rows, avg, start=start, end=end, top=top),
                peak_lines=_segments(rows, peak, start=start, end=end, top=top),
                latest=latest,
            )
        )
    return charts
