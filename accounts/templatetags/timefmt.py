"""The one rule for time on the pages (accounts/timefmt.py): `{% load timefmt %}` then `{{ value|when }}` (day and
time), `{{ value|day }}`, `{{ value|clock }}`, `{{ seconds|duration }}`;
and numbers as the language writes them, `{{ value|num }}` (1,234.5 / 1.234,5)."""

from __future__ import annotations

from django import template

from accounts import timefmt
from accounts.locale import fmt_quantity

register = template.Library()

register.filter("when", timefmt.fmt_datetime)
register.filter("day", timefmt.fmt_date)
register.filter("clock", timefmt.fmt_time)
register.filter("duration", timefmt.fmt_duration)
register.filter("num", fmt_quantity)
