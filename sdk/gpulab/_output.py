"""How the CLI prints: JSON for scripts (--json), aligned tables and short sentences for people, errors as one line."""

from __future__ import annotations

import datetime as dt
import json
import sys
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


def when(value: Any) -> str:
    """A time in the local zone, short; '—' when there is none."""
    if isinstance(value, dt.datetime):
        return value.astimezone().strftime("%a %d %b %H:%M")
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
