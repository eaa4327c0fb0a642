"""A tolerant reader of the Prometheus text exposition format (what dcgm-exporter serves on :9400/metrics).

prometheus_client's parser stops at the first line it cannot read; an exporter that prints one odd
line must not hide the other GPUs, so this reader skips such lines and counts them.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterable

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|\})')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}


@dataclasses.dataclass(frozen=True, slots=True)
class Row:
    """One series value: metric name, its labels, the value, and the exporter's timestamp (s) if it gave one."""

    name: str
    labels: dict[str, str]
    value: float
    timestamp: float | None = None


@dataclasses.dataclass
class ParseResult:
    rows: list[Row]
    skipped: int  # lines that were not comments and could not be read


def _unescape(value: str) -> str:
    return re.sub(r"\\[\\\"n]", lambda m: _ESCAPES[m.group(0)], value)


def _number(text: str) -> float:
    lowered = text.lower()
    if lowered in ("nan",):
        return math.nan
    if lowered in ("+inf", "inf"):
        return math.inf
    if lowered == "-inf":
        return -math.inf
    return float(text)


def _timestamp(text: str) -> float:
    """Milliseconds since the epoch, as seconds; a number too large for a float is a malformed line (ValueError)."""
    try:
        return int(text) / 1000.0
    except OverflowError:
        raise ValueError("the timestamp is out of range") from None


def parse_line(line: str) -> Row | None:
    """The row on this line; None for blank lines and comments. Raises ValueError on a malformed line."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    match = _NAME.match(line)
    if not match:
        raise ValueError("no metric name")
    name = match.group(0)
    rest = line[match.end() :]
    labels: dict[str, str] = {}
    if rest.startswith("{"):
        position = 1
        if rest[1:].lstrip().startswith("}"):
            position = rest.index("}") + 1
        else:
            while True:
                label = _LABEL.match(rest, position)
                if not label:
                    raise ValueError("malformed labels")
                labels[label.group(1)] = _unescape(label.group(2))
                position = label.end()
                if label.group(3) == "}":
                    break
                # A trailing comma before the brace is allowed.
                if rest[position:].lstrip().startswith("}"):
                    position = rest.index("}", position) + 1
                    break
        rest = rest[position:]
    parts = rest.split()
    if not parts or len(parts) > 2:
        raise ValueError("expected a value and an optional timestamp")
    value = _number(parts[0])
    timestamp = _timestamp(parts[1]) if len(parts) == 2 else None
    return Row(name=name, labels=labels, value=value, timestamp=timestamp)


def parse_text(text: str, *, names: Iterable[str] | None = None) -> ParseResult:
    """Rows of the exposition text; with `names`, only those metrics (the rest is not even parsed)."""
    wanted = set(names) if names is not None else None
    rows: list[Row] = []
    skipped = 0
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        if wanted is not None:
            match = _NAME.match(stripped)
            if match and match.group(0) not in wanted:
                continue
        try:
            row = parse_line(stripped)
        except ValueError:
            skipped += 1
            continue
        if row is not None:
            rows.append(row)
    return ParseResult(rows=rows, skipped=skipped)
