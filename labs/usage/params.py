"""What a usage request asks for, read once for the API and the pages: the window, the grouping, the kinds, and
whose usage (a course, a person). Bad input is an InvalidInput naming the field; what the caller may not see is
decided by the selectors (`scope_for`)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.dates import OUT_OF_RANGE, date_in_range
from accounts.errors import InvalidInput
from accounts.models import User
from labs.models import AllocationKind
from labs.usage.accounting import GROUPS, Period, local_midnight
from labs.usage.selectors import USE_KINDS, Scope, scope_for

MAX_SPAN = dt.timedelta(days=2 * 366)
ENTRY = "entry"  # one CSV row per ledger entry (the export), CSV only
NOT_A_TIME = gettext_lazy(
    "Give a date (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM with a UTC offset, or in the lab's zone)."
)
# What the API's schema says `from` and `to` look like; anything else is refused before it is read.
MOMENT_PATTERN = r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$"


@dataclasses.dataclass(frozen=True)
class UsageQuery:
    scope: Scope
    window: Period
    group_by: str
    kinds: tuple[str, ...]


def parse_moment(raw: str, *, field: str, end_of_day: bool = False) -> dt.datetime:
    """A date is the start of that day in the lab's zone (for `to`, the end of it: the day is included)."""
    if not isinstance(raw, str) or not re.fullmatch(MOMENT_PATTERN, raw):
        raise InvalidInput(f"{field}: {NOT_A_TIME}", fields={field: NOT_A_TIME})
    try:
        if len(raw) == 10:
            day = dt.date.fromisoformat(raw)
            if not date_in_range(day):
                raise InvalidInput(f"{field}: {OUT_OF_RANGE}", fields={field: OUT_OF_RANGE})
            return local_midnight(day + dt.timedelta(days=1) if end_of_day else day)
        moment = parse_datetime(raw)
    except (ValueError, OverflowError):
        moment = None
    if moment is None:
        raise InvalidInput(f"{field}: {NOT_A_TIME}", fields={field: NOT_A_TIME})
    if timezone.is_naive(moment):
        try:
            moment = timezone.make_aware(moment)
        except (ValueError, OverflowError):
            raise InvalidInput(f"{field}: {NOT_A_TIME}", fields={field: NOT_A_TIME}) from None
    if not date_in_range(moment):
        raise InvalidInput(f"{field}: {OUT_OF_RANGE}", fields={field: OUT_OF_RANGE})
    return moment


def default_start(now: dt.datetime) -> dt.datetime:
    """Monday 00:00 eight weeks ago, in the lab's zone: this week and the seven before it."""
    today = timezone.localtime(now).date()
    return local_midnight(today - dt.timedelta(days=today.weekday() + 7 * 7))


def read_window(params: Mapping[str, str], *, now: dt.datetime) -> Period:
    raw_from, raw_to = params.get("from"), params.get("to")
    start = parse_moment(raw_from, field="from") if raw_from is not None else default_start(now)
    end = parse_moment(raw_to, field="to", end_of_day=True) if raw_to is not None else now
    if end <= start:
        raise InvalidInput(_("to: the window must end after it starts."), fields={"to": _("Must be after from.")})
    if end - start > MAX_SPAN:
        why = _("Ask for at most two years at a time.")
        raise InvalidInput(f"to: {why}", fields={"to": why})
    return Period(start=start, end=end, now=now)


def read_kinds(raw: str | None) -> tuple[str, ...]:
    if not raw:
        return USE_KINDS
    kinds = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    unknown = [kind for kind in kinds if kind not in AllocationKind.values]
    if unknown or not kinds:
        why = _("Choose among %(kinds)s, separated by commas.") % {"kinds": ", ".join(AllocationKind.values)}
        raise InvalidInput(f"kind: {why}", fields={"kind": why})
    return kinds


def read_query(
    params: Mapping[str, str], *, viewer: User, now: dt.datetime | None = None, entries_allowed: bool = False
) -> UsageQuery:
    """The whole request, checked: 400 for bad input, then 403/404 from the selectors for whose usage."""
    now = now or timezone.now()
    group_by = (params.get("group_by") or "user").strip()
    allowed = (*GROUPS, ENTRY) if entries_allowed else GROUPS
    if group_by not in allowed:
        groups = ", ".join(GROUPS)
        why = (
            _("Group by one of %(groups)s (or %(entry)s, as CSV).") % {"groups": groups, "entry": ENTRY}
            if entries_allowed
            else _("Group by one of %(groups)s.") % {"groups": groups}
        )
        raise InvalidInput(f"group_by: {why}", fields={"group_by": why})
    kinds = read_kinds(params.get("kind"))
    scope, window = read_scope_and_window(params, viewer=viewer, now=now)
    return UsageQuery(scope=scope, window=window, group_by=group_by, kinds=kinds)


def read_scope_and_window(
    params: Mapping[str, str], *, viewer: User, now: dt.datetime | None = None
) -> tuple[Scope, Period]:
    """Whose usage and when, for a request that neither groups nor filters by kind (the efficiency rows)."""
    window = read_window(params, now=now or timezone.now())
    scope = scope_for(
        viewer, course_code=(params.get("course") or "").strip(), username=(params.get("user") or "").strip()
    )
    return scope, window
