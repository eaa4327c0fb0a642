"""The reservations week timeline's markup that repeats on every node's row, built in Python.

- the day lines and the "now" line: drawn once per page and repeated on each row (forty rows of seven lines each
  through the template language were a third of the page's render);
- each booking's block: a reservation on twenty nodes is twenty blocks with the same link and the same tooltip
  (title, who, when, status), so those are made once per booking and page (the page's render context), not per row.

Positions are CSS percentages with a dot in every language (never the number format).
"""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from accounts.timefmt import fmt_datetime, fmt_time
from labs.templatetags.labels import reservation_status

register = template.Library()


@register.simple_tag
def timeline_lines(week: dict) -> SafeString:
    lines = format_html_join(
        "", '<span class="tl-grid" style="left: {}%"></span>', ((day["left"],) for day in week["days"])
    )
    if week.get("now") is None:
        return lines
    now = format_html('<span class="tl-now" style="left: {}%" title="{}"></span>', week["now"], gettext("Now"))
    return format_html("{}{}", lines, now)


@register.simple_tag(takes_context=True)
def timeline_block(context, block: dict) -> SafeString:
    """One booking's block on one node's row: a link for those who may open it, its tooltip, its place."""
    made = context.render_context.setdefault("timeline_block", {})
    key = (block["id"], block["starts_at"], block["ends_at"])
    if key not in made:
        who = f" — {block['who']}" if block["who"] else ""
        when = f"{fmt_datetime(block['starts_at'])}–{fmt_time(block['ends_at'])}"
        made[key] = (
            f"{block['title']}{who}, {when} ({reservation_status(block['status'])})",
            reverse("reservation", args=[block["id"]]) if block["can_open"] else None,
        )
    tooltip, href = made[key]
    classes = f"tl-block res-{block['status']}"
    if block["mine"]:
        classes += " mine"
    if str(context.get("highlight")) == str(block["id"]):
        classes += " highlight"
    style = f"left: {block['left']}%; width: {block['width']}%"
    if href is None:
        return format_html(
            '<span class="{}" style="{}" data-reservation="{}" title="{}">{}</span>',
            classes,
            style,
            block["id"],
            tooltip,
            block["title"],
        )
    return format_html(
        '<a href="{}" class="{}" style="{}" data-reservation="{}" title="{}">{}</a>',
        href,
        classes,
        style,
        block["id"],
        tooltip,
        block["title"],
    )
