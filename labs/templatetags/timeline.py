"""The reservations week timeline's markup that repeats on every node's row, built in Python.

- the rows: one per node (forty in the lab), each with its name, its status when not ready, the day lines and its
  blocks; through the template language they were most of the page's CPU;
- the day lines and the "now" line: drawn once per page and repeated on each row;
- each booking's block: a reservation on twenty nodes is twenty blocks with the same link and the same tooltip
  (title, who, when, status), so those are made once per booking and page (the page's render context), not per row;
- the week as a table (the timeline's alternative for screen readers and phones): one row per booked window.

Positions are CSS percentages with a dot in every language (never the number format).
"""

from __future__ import annotations

from django import template
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from accounts.timefmt import fmt_datetime, fmt_time
from labs.templatetags.labels import node_status, reservation_status

register = template.Library()


def _lines(week: dict) -> SafeString:
    lines = format_html_join(
        "", '<span class="tl-grid" style="left: {}%"></span>', ((day["left"],) for day in week["days"])
    )
    if week.get("now") is None:
        return lines
    now = format_html('<span class="tl-now" style="left: {}%" title="{}"></span>', week["now"], gettext("Now"))
    return format_html("{}{}", lines, now)


def _href(booking: dict) -> str | None:
    """The reservation's page for those who may open it (theirs, their course's; admins), else None."""
    return reverse("reservation", args=[booking["id"]]) if booking["can_open"] else None


def _when(booking: dict) -> str:
    """Its window as every page says one: the start's day and time, then the end's time (accounts.timefmt)."""
    return f"{fmt_datetime(booking['starts_at'])}–{fmt_time(booking['ends_at'])}"


def _block(context, block: dict) -> SafeString:
    """One booking's block on one node's row: a link for those who may open it, its tooltip, its place."""
    made = context.render_context.setdefault("timeline_block", {})
    key = (block["id"], block["starts_at"], block["ends_at"])
    if key not in made:
        who = f" — {block['who']}" if block["who"] else ""
        made[key] = (
            f"{block['title']}{who}, {_when(block)} ({reservation_status(block['status'])})",
            _href(block),
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


@register.simple_tag(takes_context=True)
def timeline_rows(context, week: dict) -> SafeString:
    """Every node's row of the timeline: its name (and status unless ready), the day lines, its blocks."""
    lines = _lines(week)
    rows = []
    for node in week["nodes"]:
        badge = ""
        if node["status"] != "ready":
            badge = format_html(' <span class="badge status-{}">{}</span>', node["status"], node_status(node["status"]))
        blocks = mark_safe("".join(_block(context, block) for block in node["blocks"]))  # noqa: S308 - each built by format_html
        rows.append(
            format_html(
                '<div class="tl-row" data-node="{}"><div class="tl-node">{}{}</div>'
                '<div class="tl-track">{}{}</div></div>',
                node["name"],
                node["name"],
                badge,
                lines,
                blocks,
            )
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - each built by format_html


@register.simple_tag
def week_table_rows(week: dict) -> SafeString:
    """The week as a table's rows: when, the reservation (a link for those who may open it, whose, yours), its nodes
    and status."""
    yours = gettext("yours")
    rows = []
    for booking in week["bookings"]:
        if (href := _href(booking)) is not None:
            title = format_html('<a href="{}">{}</a>', href, booking["title"])
        else:
            title = format_html("{}", booking["title"])
        who = format_html(" — {}", booking["who"]) if booking["who"] else ""
        mine = format_html(" ({})", yours) if booking["mine"] else ""
        nodes = f"{len(booking['nodes'])}: {', '.join(booking['nodes'])}"
        rows.append(
            format_html(
                '<tr data-reservation="{}"><td>{}</td><td>{}{}{}</td><td>{}</td><td>{}</td></tr>',
                booking["id"],
                _when(booking),
                title,
                who,
                mine,
                nodes,
                reservation_status(booking["status"]),
            )
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - each built by format_html
