"""A budget's current period: its first and last day, and its window [start, end) in the lab's time zone."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.utils import formats, timezone
from django.utils.translation import gettext as _

from accounts.timefmt import fmt_date


@dataclasses.dataclass(frozen=True)
class Period:
    first_day: dt.date
    last_day: dt.date
    start: dt.datetime  # the first day's local midnight
    end: dt.datetime  # the local midnight after the last day

    @property
    def label(self) -> str:
        """ "in November 2026" or "from 2026-10-01 to 2027-01-31": how sentences name the period."""
        if (
            self.first_day.day == 1
            and (self.last_day + dt.timedelta(days=1)).day == 1
            and (self.first_day.month == self.last_day.month)
        ):
            return _("in %(month)s") % {"month": formats.date_format(self.first_day, "MONTH_YEAR_FORMAT")}
        return _("from %(first)s to %(last)s") % {"first": fmt_date(self.first_day), "last": fmt_date(self.last_day)}

    @property
    def resets(self) -> str:
        """When new use may start again: the next period's first day, or the budget's end."""
        return fmt_date(self.last_day + dt.timedelta(days=1))


def _midnight(day: dt.date) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(day, dt.time.min), timezone.get_current_timezone())


def _month_of(day: dt.date) -> tuple[dt.date, dt.date]:
    first = day.replace(day=1)
    following = (first + dt.timedelta(days=32)).replace(day=1)
    return first, following - dt.timedelta(days=1)


def period_of(*, period: str, starts_on: dt.date, ends_on: dt.date | None, now: dt.datetime) -> Period | None:
    """The period in force at `now`, or None when the budget does not count then (not begun, or over)."""
    today = timezone.localtime(now).date()
    if today < starts_on or (ends_on is not None and today > ends_on):
        return None
    if period == "month":
        first, last = _month_of(today)
        first, last = max(first, starts_on), min(last, ends_on) if ends_on else last
    else:  # a term budget always has its last day (budget_term_has_an_end, budget_problems)
        first, last = starts_on, ends_on
    return Period(first, last, _midnight(first), _midnight(last + dt.timedelta(days=1)))


def budget_period(budget, now: dt.datetime) -> Period | None:
    return period_of(period=budget.period, starts_on=budget.starts_on, ends_on=budget.ends_on, now=now)
