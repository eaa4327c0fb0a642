"""The reservations week timeline's day lines and "now" line, drawn once per page and repeated on every node's row.

Forty rows of seven lines each through the template language were a third of the page's render; this builds the
same markup once. Positions are CSS percentages with a dot in every language (never the number format).
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext

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
