"""Partial sums beside the ledger: the GPU time of closed ledger entries per day of the lab's zone, per person, course
and kind (`UsageDay`), and per course and kind (`UsageDayCourse`), so the day reports sum a few rows a day instead of
cutting a million entries at midnight (bench/USAGE_PLANS.md, section 5).

- Kept in the same transaction as the ledger's write: `labs.ledger.allocations_close` adds what it closed
  (`add_closed`); an entry saved or deleted one by one (the admin, the tests' fixtures) is added or taken back by the
  model's signals (`labs.apps`); a course deleted moves its time to no course, as its entries do
  (`course_deleted`). Open entries are never in the sums: the reports read them from the ledger.
- Exact: share × 1000 × microseconds, an integer, so a sum kept step by step equals one recomputed from the ledger
  bit for bit, and `disagreements` needs no tolerance.
- Checked and repaired: `recompute` gives the sums of days from the ledger (one SQL statement on PostgreSQL, the
  same cut here elsewhere); `check_ledger` reports the days that disagree (`day_sum_violations`), the reconciler
  rewrites the recent days (`repair`), the migration and bench_usage fill them with `rebuild`.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Iterator
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from labs.models import Allocation, UsageDay, UsageDayCourse

US = dt.timedelta(microseconds=1)
UNIT = 10**9  # share_us of one whole GPU for one second
Key = tuple[dt.date, int, int, str]  # day, user_id, course_key, kind


def local_midnight(day: dt.date) -> dt.datetime:
    """00:00 of the day in the lab's zone, in UTC (labs.usage.accounting.local_midnight)."""
    local = timezone.make_aware(dt.datetime.combine(day, dt.time.min), timezone.get_default_timezone())
    return local.astimezone(dt.UTC)


def local_day(moment: dt.datetime) -> dt.date:
    return timezone.localtime(moment, timezone.get_default_timezone()).date()


def entry_days(starts_at: dt.datetime, ends_at: dt.datetime, share: Decimal) -> Iterator[tuple[dt.date, int]]:
    """One closed entry cut at the lab's midnights: (day, share-thousandths × microseconds held that day)."""
    milli = int(Decimal(share) * 1000)
    start, end = starts_at.astimezone(dt.UTC), ends_at.astimezone(dt.UTC)
    day = local_day(start)
    while start < end:
        cut = min(end, local_midnight(day + dt.timedelta(days=1)))
        yield day, milli * ((cut - start) // US)
        start, day = cut, day + dt.timedelta(days=1)


def _sums(rows: Iterable[tuple], sign: int = 1) -> dict[Key, int]:
    """rows of (user_id, course_id, kind, share, starts_at, ends_at) -> their sums per key."""
    found: dict[Key, int] = defaultdict(int)
    for user_id, course_id, kind, share, starts_at, ends_at in rows:
        if ends_at is None:
            continue
        for day, held in entry_days(starts_at, ends_at, share):
            found[(day, user_id, course_id or 0, kind)] += sign * held
    return found


def _add(found: dict[Key, int]) -> None:
    """Add to the sums, creating the rows they lack, in one order (two closes never wait on each other crosswise)."""
    per_person = sorted((key, held) for key, held in found.items() if held)
    per_course: dict[tuple, int] = defaultdict(int)
    for (day, _user, course_key, kind), held in per_person:
        per_course[(day, course_key, kind)] += held
    with transaction.atomic(), connection.cursor() as cursor:
        if per_person:
            cursor.executemany(
                "INSERT INTO labs_usageday (day, user_id, course_key, kind, share_us)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (day, user_id, course_key, kind)"
                " DO UPDATE SET share_us = labs_usageday.share_us + EXCLUDED.share_us",
                [(*key, held) for key, held in per_person],
            )
        if per_course:
            cursor.executemany(
                "INSERT INTO labs_usagedaycourse (day, course_key, kind, share_us)"
                " VALUES (%s, %s, %s, %s) ON CONFLICT (day, course_key, kind)"
                " DO UPDATE SET share_us = labs_usagedaycourse.share_us + EXCLUDED.share_us",
                [(*key, held) for key, held in sorted(per_course.items())],
            )


ENTRY_FIELDS = ("user_id", "course_id", "kind", "share", "starts_at", "ends_at")


def add_closed(rows: Iterable[tuple]) -> None:
    """The ledger closed these entries ((user_id, course_id, kind, share, starts_at, ends_at), ends_at set): add
    them, in the caller's transaction."""
    _add(_sums(rows))


def take_back(rows: Iterable[tuple]) -> None:
    """These closed entries change or go (a save, a delete): take their time out of the sums."""
    _add(_sums(rows, sign=-1))


# --- From the ledger: recompute, compare, repair ---------------------------------------------------------------------

RECOMPUTE_SQL = """
    SELECT d::date AS day, a.user_id, COALESCE(a.course_id, 0) AS course_key, a.kind,
           SUM(ROUND(a.share * 1000)::bigint * ROUND(EXTRACT(EPOCH FROM
               LEAST(a.ends_at, (d + interval '1 day') AT TIME ZONE %(tz)s)
               - GREATEST(a.starts_at, d AT TIME ZONE %(tz)s)) * 1000000)::bigint) AS share_us
    FROM labs_allocation a,
         LATERAL generate_series(
             GREATEST((a.starts_at AT TIME ZONE %(tz)s)::date, %(first)s::date)::timestamp,
             LEAST(((a.ends_at - interval '1 microsecond') AT TIME ZONE %(tz)s)::date, %(last)s::date)::timestamp,
             interval '1 day') AS d
    WHERE a.ends_at IS NOT NULL AND a.ends_at > a.starts_at AND a.ends_at > %(lo)s AND a.starts_at < %(hi)s
    GROUP BY 1, 2, 3, 4
"""


FILL_SQL = "INSERT INTO labs_usageday (day, user_id, course_key, kind, share_us) " + RECOMPUTE_SQL


def _params(first: dt.date, last: dt.date) -> dict:
    return {"tz": settings.TIME_ZONE, "first": first, "last": last, "lo": local_midnight(first),
            "hi": local_midnight(last + dt.timedelta(days=1))}  # fmt: skip


def recompute(first: dt.date, last: dt.date) -> dict[Key, int]:
    """What the sums of the days first..last (both included) are by the ledger."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(RECOMPUTE_SQL, _params(first, last))
            return {(day, user_id, course_key, kind): int(held) for day, user_id, course_key, kind, held in cursor}
    lo, hi = local_midnight(first), local_midnight(last + dt.timedelta(days=1))
    rows = Allocation.objects.filter(ends_at__isnull=False, ends_at__gt=lo, starts_at__lt=hi).values_list(*ENTRY_FIELDS)
    return {key: held for key, held in _sums(rows.iterator(chunk_size=5000)).items() if first <= key[0] <= last}


def stored(first: dt.date, last: dt.date) -> dict[Key, int]:
    rows = UsageDay.objects.filter(day__gte=first, day__lte=last).exclude(share_us=0)
    return {(r.day, r.user_id, r.course_key, r.kind): r.share_us for r in rows.iterator(chunk_size=5000)}


def _course_disagrees(first: dt.date, last: dt.date) -> set[dt.date]:
    """Days whose per-course rows are not the sum of their per-person rows."""
    per_person = {
        (r["day"], r["course_key"], r["kind"]): r["held"]
        for r in UsageDay.objects.filter(day__gte=first, day__lte=last)
        .values("day", "course_key", "kind")
        .annotate(held=Sum("share_us"))
    }
    per_course = {
        (r.day, r.course_key, r.kind): r.share_us for r in UsageDayCourse.objects.filter(day__gte=first, day__lte=last)
    }
    keys = set(per_person) | set(per_course)
    return {key[0] for key in keys if (per_person.get(key) or 0) != (per_course.get(key) or 0)}


def disagreements(first: dt.date, last: dt.date) -> dict[dt.date, float]:
    """Days first..last whose sums disagree with the ledger: day -> GPU-seconds kept minus GPU-seconds by the ledger
    (over all its rows; 0.0 when only their split by person or course is off)."""
    expected, kept = recompute(first, last), stored(first, last)
    off: dict[dt.date, float] = {}
    for key in set(expected) | set(kept):
        if expected.get(key, 0) != kept.get(key, 0):
            off[key[0]] = off.get(key[0], 0.0) + (kept.get(key, 0) - expected.get(key, 0)) / UNIT
    for day in _course_disagrees(first, last):
        off.setdefault(day, 0.0)
    return dict(sorted(off.items()))


def rebuild(first: dt.date, last: dt.date) -> None:
    """Rewrite the sums of the days first..last from the ledger (the repair; the backfill of the whole ledger)."""
    with transaction.atomic():
        UsageDay.objects.filter(day__gte=first, day__lte=last).delete()
        UsageDayCourse.objects.filter(day__gte=first, day__lte=last).delete()
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(FILL_SQL, _params(first, last))
                cursor.execute(
                    "INSERT INTO labs_usagedaycourse (day, course_key, kind, share_us)"
                    " SELECT day, course_key, kind, SUM(share_us) FROM labs_usageday"
                    " WHERE day >= %s AND day <= %s GROUP BY day, course_key, kind",
                    [first, last],
                )
        else:
            _add(recompute(first, last))


def ledger_span() -> tuple[dt.date, dt.date] | None:
    """The first and last day any closed entry touches."""
    first = Allocation.objects.filter(ends_at__isnull=False).order_by("starts_at").values_list("starts_at", flat=True)
    last = Allocation.objects.filter(ends_at__isnull=False).order_by("-ends_at").values_list("ends_at", flat=True)
    start, end = first.first(), last.first()
    if start is None or end is None:
        return None
    kept = UsageDay.objects.order_by("day").values_list("day", flat=True)
    days = [local_day(start), local_day(end)] + [d for d in (kept.first(), kept.order_by("-day").first()) if d]
    return min(days), max(days)


def repair(first: dt.date, last: dt.date, *, dry_run: bool = False) -> dict[dt.date, float]:
    """Rewrite the days first..last that disagree with the ledger; returns them (what was off, in GPU-seconds)."""
    off = disagreements(first, last)
    if not dry_run:
        for day in off:
            rebuild(day, day)
    return off


# --- Read by the day reports -----------------------------------------------------------------------------------------


def _summed(
    first: dt.date, last: dt.date, *, per_person: bool, kinds: Iterable[str], user_id: int | None, course_id: int | None
) -> QuerySet:
    """The sums' rows of the days first..last (both included), of these kinds, of one person or course or all."""
    rows = UsageDay.objects.all() if per_person or user_id is not None else UsageDayCourse.objects.all()
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    if course_id is not None:
        rows = rows.filter(course_key=course_id)
    return rows.filter(day__gte=first, day__lte=last, kind__in=list(kinds)).order_by()


def day_seconds(
    first: dt.date, last: dt.date, *, kinds: Iterable[str], user_id: int | None = None, course_id: int | None = None
) -> dict[dt.date, float]:
    """GPU-seconds of closed entries per day first..last (both included), of these kinds, of one person or course."""
    rows = _summed(first, last, per_person=False, kinds=kinds, user_id=user_id, course_id=course_id)
    per_day = rows.values("day").annotate(held=Sum("share_us")).values_list("day", "held")
    return {day: int(held) / UNIT for day, held in per_day}


KEY_COLUMNS = {"user": "user_id", "course": "course_key", "kind": "kind"}


def key_seconds(
    first: dt.date,
    last: dt.date,
    group_by: str,
    *,
    kinds: Iterable[str],
    user_id: int | None = None,
    course_id: int | None = None,
) -> dict[int | str, float]:
    """GPU-seconds of closed entries over the days first..last (both included) per person (id), course (id, 0 for
    none) or kind, of these kinds, of one person or course; no key whose time is nil."""
    column = KEY_COLUMNS[group_by]
    rows = _summed(first, last, per_person=group_by == "user", kinds=kinds, user_id=user_id, course_id=course_id)
    per_key = rows.values(column).annotate(held=Sum("share_us")).values_list(column, "held")
    return {key: int(held) / UNIT for key, held in per_key if held}


# --- One entry saved or deleted (the model's signals, connected in labs.apps) -------------------------------------


def _entry(instance: Allocation) -> tuple:
    return tuple(getattr(instance, field) for field in ENTRY_FIELDS)


def before_save(sender, instance: Allocation, raw: bool = False, **kwargs) -> None:
    if raw or instance.pk is None:
        return
    take_back(Allocation.objects.filter(pk=instance.pk, ends_at__isnull=False).values_list(*ENTRY_FIELDS))


def after_save(sender, instance: Allocation, raw: bool = False, **kwargs) -> None:
    if not raw and instance.ends_at is not None:
        add_closed([_entry(instance)])


def after_delete(sender, instance: Allocation, **kwargs) -> None:
    if instance.ends_at is not None:
        take_back([_entry(instance)])


# A course deleted: its rows added to course 0's, then removed (each statement names its table: no SQL is built).
_COURSE_GONE_SQL = (
    "INSERT INTO labs_usageday (day, user_id, course_key, kind, share_us)"
    " SELECT day, user_id, 0, kind, share_us FROM labs_usageday WHERE course_key = %s"
    " ON CONFLICT (day, user_id, course_key, kind) DO UPDATE SET share_us = labs_usageday.share_us + EXCLUDED.share_us",
    "DELETE FROM labs_usageday WHERE course_key = %s",
    "INSERT INTO labs_usagedaycourse (day, course_key, kind, share_us)"
    " SELECT day, 0, kind, share_us FROM labs_usagedaycourse WHERE course_key = %s"
    " ON CONFLICT (day, course_key, kind) DO UPDATE SET share_us = labs_usagedaycourse.share_us + EXCLUDED.share_us",
    "DELETE FROM labs_usagedaycourse WHERE course_key = %s",
)


def course_deleted(sender, instance, **kwargs) -> None:
    """A course deleted: its ledger entries now say no course (`SET_NULL`, in the same transaction), and so do the
    sums."""
    with transaction.atomic(), connection.cursor() as cursor:
        for sql in _COURSE_GONE_SQL:
            cursor.execute(sql, [instance.pk])
