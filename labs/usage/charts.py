"""Charts drawn here as SVG (no JavaScript, no npm): bars with their numbers written on them and a <title> to hover,
and a heat map whose cells carry their number and a shade, so none of them needs colour to be read. Each page also
shows the figures in a table beside the chart."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

BAR_W, GAP, HEIGHT, TOP, BOTTOM, LEFT = 34, 8, 180, 18, 36, 8


def bars(points: list[tuple[str, float]], *, unit: str = "GPU-h", title: str, limit: float | None = None) -> SafeString:
    """A bar per point (label, value), its value written above it; `limit` draws a dashed line (a quota)."""
    if not points:
        return mark_safe("")
    peak = max([value for _, value in points] + [limit or 0, 0.01])
    width = LEFT * 2 + len(points) * (BAR_W + GAP)
    parts = [
        f'<svg class="usage-chart" role="img" viewBox="0 0 {width} {HEIGHT + TOP + BOTTOM}" width="{width}" '
        f'height="{HEIGHT + TOP + BOTTOM}" data-points="{len(points)}"><title>{escape(title)}</title>'
    ]
    for i, (label, value) in enumerate(points):
        x = LEFT + i * (BAR_W + GAP)
        h = round(HEIGHT * value / peak, 1)
        y = TOP + HEIGHT - h
        text = f"{value:.1f}"
        parts.append(
            f'<g class="bar"><title>{escape(label)}: {text} {escape(unit)}</title>'
            f'<rect x="{x}" y="{y}" width="{BAR_W}" height="{h}" class="usage-bar"></rect>'
            f'<text x="{x + BAR_W / 2}" y="{y - 3}" text-anchor="middle" class="usage-value">{text}</text>'
            f'<text x="{x + BAR_W / 2}" y="{TOP + HEIGHT + 14}" text-anchor="middle" class="usage-label">'
            f"{escape(label[-5:])}</text></g>"
        )
    if limit:
        y = TOP + HEIGHT - HEIGHT * limit / peak
        weekly = escape(_("Weekly quota: %(limit)s %(unit)s") % {"limit": f"{limit:.1f}", "unit": unit})
        quota = escape(_("quota %(limit)s") % {"limit": f"{limit:.0f}"})
        parts.append(
            f'<g class="limit"><title>{weekly}</title>'
            f'<line x1="0" x2="{width}" y1="{y}" y2="{y}" class="usage-limit" stroke-dasharray="6 4"></line>'
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
