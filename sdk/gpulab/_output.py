"""How the CLI prints: JSON for scripts (--json), aligned tables and short sentences for people, errors as one line."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import zoneinfo
from collections.abc import Iterable, Sequence
from typing import Any

from gpulab.models import Model, parse_time


def as_json(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, Model):
            return item.to_dict()
        if isinstance(item, list | tuple):
            return [plain(x) for x in item]
        if isinstance(item, dict):
            return {k: plain(v) for k, v in item.items()}
        if isinstance(item, dt.datetime | dt.date):
            return item.isoformat()
        return item

    return json.dumps(plain(value), indent=2, sort_keys=False)


# Times are printed in the portal's zone (the lab's, LAB_TIME_ZONE), as its pages show them: every time the API
# gives carries that zone's offset, kept as it is. --time-zone (or GPULAB_TIME_ZONE) names another: "local" for this
# machine's, or a zone name such as Europe/Lisbon; "server" is the default.
SERVER, LOCAL = "server", "local"
_time_zone = ""


def set_time_zone(name: str | None) -> None:
    """The zone `when` prints in, from --time-zone, then GPULAB_TIME_ZONE; ValueError for a name that is none."""
    global _time_zone  # noqa: PLW0603 - one CLI run, one choice
    chosen = (name or os.environ.get("GPULAB_TIME_ZONE") or SERVER).strip()
    if chosen not in (SERVER, LOCAL):
        try:
            zoneinfo.ZoneInfo(chosen)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            why = f"unknown time zone {chosen!r} (use server, local or a name such as Europe/Lisbon)"
            raise ValueError(why) from exc
    _time_zone = (name or "").strip()


def when(value: Any) -> str:
    """A time in the portal's zone (or the one chosen with --time-zone), short; '—' when there is none."""
    if isinstance(value, dt.datetime):
        zone = _time_zone or os.environ.get("GPULAB_TIME_ZONE") or SERVER
        if zone == LOCAL:
            value = value.astimezone()
        elif zone != SERVER and value.tzinfo is not None:
            value = value.astimezone(zoneinfo.ZoneInfo(zone))
        return value.strftime("%a %d %b %H:%M")
    return "—" if value in (None, "") else str(value)


def cell(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "—"
    if isinstance(value, dt.datetime):
        return when(value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).replace("\n", " ")


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str) -> str:
    rows = [[cell(v) for v in row] for row in rows]
    if not rows:
        return empty
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], 80)
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for row in rows:
        lines.append("  ".join(v[:80].ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def progress(text: str) -> None:
    """Progress goes to stderr, so that stdout stays what a script reads."""
    print(text, file=sys.stderr, flush=True)


def fit_sentence(fit: dict[str, Any] | None) -> str:
    if not fit:
        return "nothing fits within the booking horizon"
    starts = when(parse_time(fit.get("starts_at")))
    ends = when(parse_time(fit.get("ends_at")))
    nodes = ", ".join(fit.get("nodes") or [])
    return f"earliest fit: {starts} – {ends}" + (f" on {nodes}" if nodes else "")
