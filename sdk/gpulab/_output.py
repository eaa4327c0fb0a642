"""How the CLI prints: JSON for scripts (--json), aligned tables and short sentences for people, errors as one line."""

from __future__ import annotations

import datetime as dt
import functools
import json
import sys
from collections.abc import Callable, Iterable, Sequence
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


# Where printed times are: the lab's zone (the portal's LAB_TIME_ZONE, asked once, when a time is first printed), a
# zone given with --tz, or this machine's (--tz local, or a portal that does not say). Set by the CLI (cli.main).
_zone: Callable[[], dt.tzinfo | None] | None = None


def print_times_in(zone: Callable[[], dt.tzinfo | None] | None) -> None:
    """Print times in the zone `zone()` returns (asked at most once); None: this machine's zone."""
    global _zone
    _zone = functools.cache(zone) if zone is not None else None


def when(value: Any) -> str:
    """A time in the lab's zone (or --tz's), short; '—' when there is none."""
    if isinstance(value, dt.datetime):
        return value.astimezone(_zone() if _zone else None).strftime("%a %d %b %H:%M")
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
