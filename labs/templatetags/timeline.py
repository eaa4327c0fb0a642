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

from html import escape

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from accounts.timefmt import fmt_datetime, fmt_time
from labs.templatetags.labels import node_status, reservation_status

register = template.Library()


def _e(value) -> str:
    """Escaped for HTML text and attributes, as Django's escape would (these rows are built by the thousand per page
    and format_html costs several times more: the lazy wrappers, SafeString for every piece)."""
    return escape(str(value))


def _lines(week: dict) -> str:
    lines = "".join(f'<span class="tl-grid" style="left: {_e(day["left"])}%"></span>' for day in week["days"])
    if week.get("now") is None:
        return lines
    now = _e(gettext("Now"))  # (outside the f-string, where makemessages finds it)
    return f'{lines}<span class="tl-now" style="left: {_e(week["now"])}%" title="{now}"></span>'


def _href(booking: dict) -> str | None:
    """The reservation's page for those who may open it (theirs, their course's; admins), else None."""
    return reverse("reservation", args=[booking["id"]]) if booking["can_open"] else None


def _when(context, booking: dict) -> str:
    """Its window as every page says one: the start's day and time, then the end's time (accounts.timefmt); once
    per window and page, for its blocks and its row of the table."""
    said = context.render_context.setdefault("timeline_when", {})
    key = (booking["starts_at"], booking["ends_at"])
    if key not in said:
        said[key] = f"{fmt_datetime(booking['starts_at'])}–{fmt_time(booking['ends_at'])}"
    return said[key]


def _block(context, block: dict) -> str:
    """One booking's block on one node's row: a link for those who may open it, its tooltip, its place."""
    made = context.render_context.setdefault("timeline_block", {})
    key = (block["id"], block["starts_at"], block["ends_at"])
    if key not in made:
        who = f" — {block['who']}" if block["who"] else ""
        href = _href(block)
        made[key] = (
            _e(f"{block['title']}{who}, {_when(context, block)} ({reservation_status(block['status'])})"),
            None if href is None else _e(href),
            _e(block["title"]),
        )
    tooltip, href, title = made[key]
    classes = f"tl-block res-{_e(block['status'])}"
    if block["mine"]:
        classes += " mine"
    if str(context.get("highlight")) == str(block["id"]):
        classes += " highlight"
    style = f"left: {_e(block['left'])}%; width: {_e(block['width'])}%"
    attributes = f'class="{classes}" style="{style}" data-reservation="{_e(block["id"])}" title="{tooltip}"'
    if href is None:
        return f"<span {attributes}>{title}</span>"
    return f'<a href="{href}" {attributes}>{title}</a>'


@register.simple_tag(takes_context=True)
def timeline_rows(context, week: dict) -> SafeString:
    """Every node's row of the timeline: its name (and status unless ready), the day lines, its blocks."""
    lines = _lines(week)
    rows = []
    for node in week["nodes"]:
        badge = ""
        if node["status"] != "ready":
            badge = f' <span class="badge status-{_e(node["status"])}">{_e(node_status(node["status"]))}</span>'
        blocks = "".join(_block(context, block) for block in node["blocks"])
        name = _e(node["name"])
        rows.append(
            f'<div class="tl-row" data-node="{name}"><div class="tl-node">{name}{badge}</div>'
            f'<div class="tl-track">{lines}{blocks}</div></div>'
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - every value in it went through _e


@register.simple_tag(takes_context=True)
def week_table_rows(context, week: dict) -> SafeString:
    """The week as a table's rows: when, the reservation (a link for those who may open it, whose, yours), its nodes
    and status."""
    yours = _e(gettext("yours"))
    rows = []
    for booking in week["bookings"]:
        title = _e(booking["title"])
        if (href := _href(booking)) is not None:
            title = f'<a href="{_e(href)}">{title}</a>'
        who = f" — {_e(booking['who'])}" if booking["who"] else ""
        mine = f" ({yours})" if booking["mine"] else ""
        nodes = _e(f"{len(booking['nodes'])}: {', '.join(booking['nodes'])}")
        when = _e(_when(context, booking))
        rows.append(
            f'<tr data-reservation="{_e(booking["id"])}"><td>{when}</td><td>{title}{who}{mine}</td>'
            f"<td>{nodes}</td><td>{_e(reservation_status(booking['status']))}</td></tr>"
        )
    return mark_safe("\n".join(rows))  # noqa: S308 - every value in it went through _e
