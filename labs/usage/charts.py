"""Charts drawn here as SVG (no JavaScript, no npm): bars with their numbers written on them and a <title> to hover,
and a heat map whose cells carry their number and a shade, so none of them needs colour to be read. Each page also
shows the figures in a table beside the chart."""

from __future__ import annotations

import math
import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from accounts.locale import fmt_number, fmt_quantity

BAR_W, GAP, HEIGHT, TOP, BOTTOM, LEFT, AXIS = 34, 8, 180, 18, 36, 8, 44
MIN_TOP = 1.0  # GPU-hours: the scale never reaches below one, so a few GPU-minutes draw a sliver, not a full bar
CHAR_W = 6  # about one character of the 10 px label font
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def nice_scale(peak: float, *, at_least: float = MIN_TOP, ticks: int = 5) -> tuple[float, float]:
    """The top of a zero-based axis and its tick step (1, 2 or 5 × a power of ten), at most `ticks` steps."""
    peak = max(peak, at_least)
    raw = peak / ticks
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return step * math.ceil(peak / step - 1e-9), step


def hours_text(value: float) -> str:
    """GPU-hours written with the precision they need: 12, 1.5, 0.25, or minutes below a tenth (0.009 → 0.5 min)."""
    if value <= 0:
        return "0"
    if value >= 10:
        return fmt_number(value, 0)
    if value >= 1:
        return fmt_number(value, 1)
    if value >= 0.1:
        return fmt_number(value, 2)
    minutes = value * 60
    return _("%(minutes)s min") % {"minutes": fmt_number(minutes, 1) if minutes < 10 else fmt_number(minutes, 0)}


def short_label(label: str, room: int = 18) -> str:
    if DAY.fullmatch(label):
        return label[5:]  # a day: its month and day
    return label if len(label) <= room else label[: room - 1] + "…"


def bars(points: list[tuple[str, float]], *, unit: str = "GPU-h", title: str, limit: float | None = None) -> SafeString:
    """A bar per point (label, value) on a zero-based axis with ticks, its value written above it; `limit` draws a
    dashed line (a quota). The axis reaches at least MIN_TOP so that a tiny figure looks tiny."""
    if not points:
        return mark_safe("")
    top, step = nice_scale(max([value for _, value in points] + [limit or 0]))
    labels = [short_label(label) for label, _ in points]
    slot = max(BAR_W, max(len(text) for text in labels) * CHAR_W + 4)
    width = AXIS + LEFT * 2 + len(points) * (slot + GAP)
    parts = [
        f'<svg class="usage-chart" role="img" viewBox="0 0 {width} {HEIGHT + TOP + BOTTOM}" width="{width}" '
        f'height="{HEIGHT + TOP + BOTTOM}" data-points="{len(points)}" data-top="{top:g}">'
        f"<title>{escape(title)}</title>"
        f'<text x="2" y="10" class="usage-label">{escape(unit)}</text>'
    ]
    for n in range(round(top / step) + 1):
        tick = n * step
        y = TOP + HEIGHT - HEIGHT * tick / top
        parts.append(
            f'<g class="tick"><line x1="{AXIS - 4}" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" class="usage-grid"></line>'
            f'<text x="{AXIS - 6}" y="{y + 3:.1f}" text-anchor="end" class="usage-label">'
            f"{fmt_quantity(tick)}</text></g>"
        )
    for i, ((label, value), shown) in enumerate(zip(points, labels, strict=True)):
        x = AXIS + LEFT + i * (slot + GAP)
        h = round(HEIGHT * value / top, 1)
        y = TOP + HEIGHT - h
        text = hours_text(value)
        parts.append(
            f'<g class="bar"><title>{escape(label)}: {value:.4f} {escape(unit)}</title>'
            f'<rect x="{x + (slot - BAR_W) / 2}" y="{y}" width="{BAR_W}" height="{h}" class="usage-bar"></rect>'
            f'<text x="{x + slot / 2}" y="{y - 3}" text-anchor="middle" class="usage-value">{escape(text)}</text>'
            f'<text x="{x + slot / 2}" y="{TOP + HEIGHT + 14}" text-anchor="middle" class="usage-label">'
            f"{escape(shown)}</text></g>"
        )
    parts.append(
        f'<line x1="{AXIS}" x2="{AXIS}" y1="{TOP}" y2="{TOP + HEIGHT}" class="usage-axis"></line>'
        f'<line x1="{AXIS}" x2="{width}" y1="{TOP + HEIGHT}" y2="{TOP + HEIGHT}" class="usage-axis"></line>'
    )
    if limit:
        y = TOP + HEIGHT - HEIGHT * limit / top
        weekly = escape(_("Weekly quota: %(limit)s %(unit)s") % {"limit": fmt_number(limit, 1), "unit": unit})
        quota = escape(_("quota %(limit)s") % {"limit": f"{limit:.0f}"})
        parts.append(
            f'<g class="limit"><title>{weekly}</title>'
            f'<line x1="{AXIS}" x2="{width}" y1="{y}" y2="{y}" class="usage-limit" stroke-dasharray="6 4"></line>'
            f'<text x="{width - 4}" y="{y - 4}" text-anchor="end" class="usage-label">{quota}</text></g>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text in it is escaped above


def heat_map(rows: list[str], columns: list[str], values: dict[tuple[str, str], float], *, title: str) -> SafeString:
    """rows × columns cells shaded by value (0..100) with the value written in each cell."""
    if not rows:
        return mark_safe("")
    cell, label_w, head = 26, 56, 18
    width, height = label_w + cell * len(columns), head + cell * len(rows)
    parts = [
        f'<svg class="usage-heat" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>{escape(title)}</title>"
    ]
    for j, column in enumerate(columns):
        parts.append(
            f'<text x="{label_w + j * cell + cell / 2}" y="12" text-anchor="middle" class="usage-label">'
            f"{escape(column)}</text>"
        )
    for i, row in enumerate(rows):
        y = head + i * cell
        parts.append(f'<text x="2" y="{y + cell * 0.65}" class="usage-label">{escape(row)}</text>')
        for j, column in enumerate(columns):
            value = values.get((row, column))
            x = label_w + j * cell
            if value is None:
                parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" class="heat-none"></rect>')
                continue
            shade = round(0.08 + 0.85 * min(max(value, 0), 100) / 100, 2)
            ink = "heat-ink-light" if shade > 0.55 else "heat-ink"
            use = escape(_("%(value)s %% utilisation") % {"value": f"{value:.0f}"})
            parts.append(
                f"<g><title>{escape(row)} {escape(column)}:00 — {use}</title>"
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" class="heat-cell" fill-opacity="{shade}">'
                f'</rect><text x="{x + cell / 2}" y="{y + cell * 0.65}" text-anchor="middle" class="{ink}">'
                f"{value:.0f}</text></g>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text in it is escaped above
