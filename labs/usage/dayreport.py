"""The time-bucket reports (day, week, month, term) and the reports by person, course and kind, from the partial sums
beside the ledger (labs/usage/daysums.py): the whole days inside the window from the sums, and from the ledger only
what the sums cannot hold: the open entries, and the window's ragged first and last day. The same figures as
`accounting.by_time` and `accounting.by_key`, to the second (tests/labs/usage/test_daysums.py), for a fraction of
their work (bench/USAGE_PLANS.md, sections 5 and 6). By node stays on the ledger: the sums have no node."""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Course, User
from labs.models import Allocation
from labs.usage import accounting, daysums
from labs.usage.accounting import NO_COURSE, Period, UsageRow

SUMMED_KEYS = ("user", "course", "kind")


@dataclasses.dataclass(frozen=True)
class Holders:
    """What the entries are narrowed to, in the sums' terms: kinds, and optionally one person and one course."""

    kinds: tuple[str, ...]
    user_id: int | None = None
    course_id: int | None = None


def _whole_days(window: Period) -> tuple[dt.date, dt.date] | None:
    """The whole days of the lab's zone inside the window (the first, and the day after the last), or None when
    there is none or the report is read in another zone (the sums are days of the lab's zone)."""
    if timezone.get_current_timezone_name() != timezone.get_default_timezone_name():
        return None
    first = daysums.local_day(window.start)
    if daysums.local_midnight(first) < window.start:
        first += dt.timedelta(days=1)
    end_day = daysums.local_day(window.until)
    return (first, end_day) if first < end_day else None


def _from_the_ledger(allocations: QuerySet[Allocation], window: Period, days: tuple[dt.date, dt.date]) -> list:
    """What the sums of the whole days `days` cannot hold, as (entries, period) pairs: the ragged edges of the window
    before and after them, and the entries still open within them."""
    inner_start, inner_end = daysums.local_midnight(days[0]), daysums.local_midnight(days[1])
    now = window.now
    return [
        (allocations, Period(start=window.start, end=inner_start, now=now)),
        (allocations, Period(start=inner_end, end=window.end, now=now)),
        (allocations.filter(ends_at__isnull=True), Period(start=inner_start, end=inner_end, now=now)),
    ]


def by_time(allocations: QuerySet[Allocation], holders: Holders, window: Period, unit: str) -> list[UsageRow]:
    """`accounting.by_time` of `allocations` — which must be exactly the entries `holders` names."""
    if window.until <= window.start:
        return []
    days = _whole_days(window)
    if days is None:
        return accounting.by_time(allocations, window, unit)
    edges = accounting.bucket_edges(window, unit)
    held: dict[int, float] = {}

    def add(found: dict[int, float]) -> None:
        for i, seconds in found.items():
            held[i] = held.get(i, 0.0) + seconds

    summed = daysums.day_seconds(
        days[0], days[1] - dt.timedelta(days=1), kinds=holders.kinds, user_id=holders.user_id,
        course_id=holders.course_id,
    )  # fmt: skip
    for day, seconds in summed.items():
        add({bisect.bisect_right(edges, daysums.local_midnight(day)): seconds})  # 1-based, as width_bucket
    for entries, period in _from_the_ledger(allocations, window, days):
        add(accounting.bucket_seconds(entries, period, edges))
    return accounting.bucket_rows(edges, unit, held)


def _named(group_by: str, seconds: dict) -> dict[str, float]:
    """The sums' keys (a person's or course's id, 0 for no course, a kind) as the report names them."""
    if group_by == "user":
        names = dict(User.objects.filter(pk__in=list(seconds)).values_list("pk", "username"))
    elif group_by == "course":
        # The sums move a deleted course's time to 0 in its delete's transaction; one deleted between these two
        # reads is named as its entries now are.
        codes = dict(Course.objects.filter(pk__in=list(seconds)).values_list("pk", "code"))
        names = {key: codes.get(key, NO_COURSE) for key in seconds}
    else:
        names = {kind: kind for kind in seconds}
    named: dict[str, float] = {}
    for key, held in seconds.items():
        named[names[key]] = named.get(names[key], 0.0) + held
    return named


def by_key(allocations: QuerySet[Allocation], holders: Holders, window: Period, group_by: str) -> list[UsageRow]:
    """`accounting.by_key` of `allocations` by person, course or kind — `allocations` must be exactly the entries
    `holders` names. A key with no time in the window is not listed."""
    days = _whole_days(window) if window.until > window.start and group_by in SUMMED_KEYS else None
    if days is None:
        return accounting.by_key(allocations, window, group_by)
    held = _named(
        group_by,
        daysums.key_seconds(
            days[0], days[1] - dt.timedelta(days=1), group_by, kinds=holders.kinds, user_id=holders.user_id,
            course_id=holders.course_id,
        ),
    )  # fmt: skip
    for entries, period in _from_the_ledger(allocations, window, days):
        for row in accounting.by_key(entries, period, group_by):
            held[row.key] = held.get(row.key, 0.0) + row.gpu_seconds
    found = [UsageRow(key=key, gpu_seconds=seconds) for key, seconds in held.items() if seconds]
    return sorted(found, key=lambda row: (-row.gpu_seconds, row.key))
