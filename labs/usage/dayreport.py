"""The time-bucket reports (day, week, month, term) from the partial sums beside the ledger (labs/usage/daysums.py):
the whole days inside the window from the sums, and from the ledger only what the sums cannot hold: the open entries,
and the window's ragged first and last day. The same figures as `accounting.by_time`, to the second
(tests/labs/usage/test_daysums.py), for a fraction of its work (bench/USAGE_PLANS.md, section 5)."""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt

from django.db.models import QuerySet
from django.utils import timezone

from labs.models import Allocation
from labs.usage import accounting, daysums
from labs.usage.accounting import Period, UsageRow


@dataclasses.dataclass(frozen=True)
class Holders:
    """What the entries are narrowed to, in the sums' terms: kinds, and optionally one person and one course."""

    kinds: tuple[str, ...]
    user_id: int | None = None
    course_id: int | None = None


def by_time(allocations: QuerySet[Allocation], holders: Holders, window: Period, unit: str) -> list[UsageRow]:
    """`accounting.by_time` of `allocations` — which must be exactly the entries `holders` names."""
    if window.until <= window.start:
        return []
    if timezone.get_current_timezone_name() != timezone.get_default_timezone_name():
        return accounting.by_time(allocations, window, unit)  # the sums are days of the lab's zone
    first = daysums.local_day(window.start)
    if daysums.local_midnight(first) < window.start:
        first += dt.timedelta(days=1)
    end_day = daysums.local_day(window.until)  # whole days: first .. end_day - 1
    if end_day <= first:
        return accounting.by_time(allocations, window, unit)
    inner_start, inner_end = daysums.local_midnight(first), daysums.local_midnight(end_day)
    edges = accounting.bucket_edges(window, unit)
    held: dict[int, float] = {}

    def add(found: dict[int, float]) -> None:
        for i, seconds in found.items():
            held[i] = held.get(i, 0.0) + seconds

    summed = daysums.day_seconds(
        first, end_day - dt.timedelta(days=1), kinds=holders.kinds, user_id=holders.user_id,
        course_id=holders.course_id,
    )  # fmt: skip
    for day, seconds in summed.items():
        add({bisect.bisect_right(edges, daysums.local_midnight(day)): seconds})  # 1-based, as width_bucket
    now = window.now
    add(accounting.bucket_seconds(allocations, Period(start=window.start, end=inner_start, now=now), edges))
    add(accounting.bucket_seconds(allocations, Period(start=inner_end, end=window.end, now=now), edges))
    still_open = allocations.filter(ends_at__isnull=True)
    add(accounting.bucket_seconds(still_open, Period(start=inner_start, end=inner_end, now=now), edges))
    return accounting.bucket_rows(edges, unit, held)
