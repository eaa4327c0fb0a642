"""GPU-hours from the one ledger (`labs.models.Allocation`), in SQL, for any window and grouping.

An entry counts `share × the part of [starts_at, ends_at) inside the window`; an open entry counts up to `now`, so the
window really ends at min(to, now). A grouping by key (user, course, node, kind) is one aggregate query; a grouping by
time (day, ISO week, month, term, in the lab's zone: a day over the DST night has its 23 or 25 hours) cuts every
entry at the buckets' edges — in PostgreSQL with `width_bucket` over the edges and a series of the buckets an entry
spans, elsewhere (the embedded SQLite run) by reading the clipped entries and cutting them here.

`labs.ledger.gpu_seconds` is the definition of GPU time over a window (`total_seconds` is it); the groupings here
agree with it to the second (tests/labs/usage/test_accounting.py).
"""

from __future__ import annotations

import bisect
import dataclasses
import datetime as dt
from collections.abc import Iterator

from django.conf import settings
from django.db import connection
from django.db.models import F, FloatField, Func, Q, QuerySet, Sum, Value
from django.db.models.functions import Cast, Coalesce, Greatest, Least
from django.utils import timezone

from accounts.csvsafe import safe_text
from labs.ledger import gpu_seconds, without_jit
from labs.models import Allocation

KEY_GROUPS = {"user": "user__username", "course": "course__code", "node": "gpu__node__name", "kind": "kind"}
TIME_GROUPS = ("day", "week", "month", "term")
GROUPS = (*KEY_GROUPS, *TIME_GROUPS)
NO_COURSE = "(no course)"


@dataclasses.dataclass(frozen=True)
class Period:
    """[start, end) asked for, and `now`: open entries count up to it, nothing counts after it."""

    start: dt.datetime
    end: dt.datetime
    now: dt.datetime

    def __post_init__(self) -> None:
        # In UTC: Python subtracts and compares two times of one zone by their wall clocks, wrong over a DST night.
        for name in ("start", "end", "now"):
            object.__setattr__(self, name, getattr(self, name).astimezone(dt.UTC))

    @property
    def until(self) -> dt.datetime:
        return max(self.start, min(self.end, self.now))


@dataclasses.dataclass(frozen=True)
class UsageRow:
    key: str
    gpu_seconds: float
    starts_at: dt.datetime | None = None  # a time bucket's edges
    ends_at: dt.datetime | None = None

    @property
    def gpu_hours(self) -> float:
        return self.gpu_seconds / 3600


class HeldSeconds(Func):
    """Seconds between two timestamps, as a float, on PostgreSQL and SQLite."""

    output_field = FloatField()
    arity = 2

    def as_sql(self, compiler, connection, **extra):  # PostgreSQL and the rest
        # date_part is float8; EXTRACT(EPOCH ...) is numeric since PostgreSQL 14, several times slower to sum.
        return self._render(compiler, connection, "date_part('epoch', %(expressions)s)", " - ")

    def as_sqlite(self, compiler, connection, **extra):
        return self._render(compiler, connection, "((julianday(%s) - julianday(%s)) * 86400.0)", None)

    def _render(self, compiler, connection, template, joiner):
        end_sql, end_params = compiler.compile(self.source_expressions[0])
        start_sql, start_params = compiler.compile(self.source_expressions[1])
        if joiner is None:
            return template % (end_sql, start_sql), [*end_params, *start_params]
        return template % {"expressions": f"{end_sql}{joiner}{start_sql}"}, [*end_params, *start_params]


def _overlaps(window: Period) -> tuple[Q, Q]:
    """The two ways an entry overlaps [start, until): begun before it and not ended by its start (the ends_at index;
    open entries are few), and begun inside it (a range of the (starts_at, id) index)."""
    from_before = Q(starts_at__lt=window.start) & (Q(ends_at__gt=window.start) | Q(ends_at__isnull=True))
    begun_inside = Q(starts_at__gte=window.start, starts_at__lt=window.until)
    return from_before, begun_inside


def in_window(allocations: QuerySet[Allocation], window: Period) -> QuerySet[Allocation]:
    """The entries that overlap [start, until)."""
    from_before, begun_inside = _overlaps(window)
    return allocations.filter(begun_inside | from_before)


def _clipped(window: Period) -> tuple[Greatest, Least]:
    start = Greatest(F("starts_at"), Value(window.start))
    end = Least(Coalesce(F("ends_at"), Value(window.until)), Value(window.until))
    return start, end


def _weighted(window: Period) -> Func:
    start, end = _clipped(window)
    return Sum(Cast("share", FloatField()) * HeldSeconds(end, start), output_field=FloatField())


def total_seconds(allocations: QuerySet[Allocation], window: Period) -> float:
    """GPU-seconds of these entries within the window: the ledger's `gpu_seconds` over [start, until)."""
    with without_jit():
        return float(gpu_seconds(allocations, start=window.start, end=window.until))


def by_key(allocations: QuerySet[Allocation], window: Period, group_by: str) -> list[UsageRow]:
    """GPU-seconds per user, course, node or kind, most first."""
    if window.until <= window.start:
        return []
    field = KEY_GROUPS[group_by]
    rows = (
        in_window(allocations, window)
        .order_by()
        .values(field)
        .annotate(held=_weighted(window))
        .values_list(field, "held")
    )
    with without_jit():
        found = [UsageRow(key=key or NO_COURSE, gpu_seconds=float(held or 0)) for key, held in rows]
    return sorted(found, key=lambda row: (-row.gpu_seconds, row.key))


# --- Time buckets ----------------------------------------------------------------------------------------------------


def local_midnight(day: dt.date) -> dt.datetime:
    """00:00 of the day in the lab's zone (in UTC)."""
    local = timezone.make_aware(dt.datetime.combine(day, dt.time.min), timezone.get_current_timezone())
    return local.astimezone(dt.UTC)


def _term_starts(year: int) -> list[dt.date]:
    # (month, day) pairs, sorted, checked at start-up (accounts.env.envmonthdays): every year has them.
    return [dt.date(year, month, day) for month, day in settings.USAGE_TERM_STARTS]


def bucket_start(moment: dt.datetime, unit: str) -> dt.date:
    """The first local day of the bucket that holds `moment`."""
    day = timezone.localtime(moment).date()
    if unit == "day":
        return day
    if unit == "week":
        return day - dt.timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    candidates = [start for year in (day.year - 1, day.year) for start in _term_starts(year) if start <= day]
    return max(candidates)


def next_bucket(day: dt.date, unit: str) -> dt.date:
    if unit == "day":
        return day + dt.timedelta(days=1)
    if unit == "week":
        return day + dt.timedelta(days=7)
    if unit == "month":
        return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    return min(start for year in (day.year, day.year + 1) for start in _term_starts(year) if start > day)


def bucket_edges(window: Period, unit: str) -> list[dt.datetime]:
    """The window's start, every bucket edge inside it, and its end (`until`): n+1 edges for n buckets."""
    edges = [window.start]
    day = next_bucket(bucket_start(window.start, unit), unit)
    while (edge := local_midnight(day)) < window.until:
        edges.append(edge)
        day = next_bucket(day, unit)
    edges.append(window.until)
    return edges


def by_time(allocations: QuerySet[Allocation], window: Period, unit: str) -> list[UsageRow]:
    """GPU-seconds per bucket, in time order, every bucket of the window present (zero when nothing was held)."""
    if window.until <= window.start:
        return []
    edges = bucket_edges(window, unit)
    return bucket_rows(edges, unit, bucket_seconds(allocations, window, edges))


def bucket_seconds(allocations: QuerySet[Allocation], window: Period, edges: list[dt.datetime]) -> dict[int, float]:
    """GPU-seconds within the window per bucket number (1..n of `edges`, which may reach beyond the window)."""
    if window.until <= window.start:
        return {}
    if connection.vendor == "postgresql":
        return _buckets_in_sql(allocations, window, edges)
    return _buckets_here(allocations, window, edges)


def bucket_rows(edges: list[dt.datetime], unit: str, held: dict[int, float]) -> list[UsageRow]:
    return [
        UsageRow(
            key=bucket_start(edges[i], unit).isoformat(),
            gpu_seconds=held.get(i + 1, 0.0),
            starts_at=edges[i],
            ends_at=edges[i + 1],
        )
        for i in range(len(edges) - 1)
    ]


def buckets_sql(allocations: QuerySet[Allocation], window: Period, edges: list[dt.datetime]) -> tuple[str, list]:
    """PostgreSQL: GPU-seconds per bucket number (1..n), each entry cut at the edges it crosses."""
    start, end = _clipped(window)
    clipped = (
        in_window(allocations, window)
        .order_by()
        .annotate(s=start, e=end, sh=Cast("share", FloatField()))
        .values("s", "e", "sh")
    )
    inner, params = clipped.query.sql_with_params()
    sql = f"""
        WITH c AS ({inner}),
        b AS (
            SELECT s, e, sh, width_bucket(s, %s::timestamptz[]) AS i,
                   width_bucket(e - interval '1 microsecond', %s::timestamptz[]) AS j
            FROM c WHERE e > s
        )
        SELECT k, SUM(CASE WHEN i = j THEN sh * date_part('epoch', e - s)
                      ELSE sh * date_part('epoch', LEAST(e, (%s::timestamptz[])[k + 1])
                                                   - GREATEST(s, (%s::timestamptz[])[k])) END)
        FROM b, LATERAL generate_series(i, j) AS k
        GROUP BY k
    """  # noqa: S608 - `inner` is the ORM's own SQL; every value is a parameter
    return sql, [*params, edges, edges, edges, edges]


def _buckets_in_sql(allocations: QuerySet[Allocation], window: Period, edges: list[dt.datetime]) -> dict[int, float]:
    sql, params = buckets_sql(allocations, window, edges)
    with without_jit(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {int(k): float(held or 0) for k, held in cursor.fetchall()}


def _buckets_here(allocations: QuerySet[Allocation], window: Period, edges: list[dt.datetime]) -> dict[int, float]:
    held: dict[int, float] = {}
    rows = in_window(allocations, window).order_by().values_list("starts_at", "ends_at", "share")
    for starts_at, ends_at, share in rows.iterator(chunk_size=5000):
        s = max(starts_at, window.start)
        e = min(ends_at or window.until, window.until)
        i = bisect.bisect_right(edges, s)  # 1-based, as width_bucket
        while i < len(edges) and s < e:
            cut = min(e, edges[i])
            held[i] = held.get(i, 0.0) + float(share) * (cut - s).total_seconds()
            s, i = cut, i + 1
    return held


def usage(allocations: QuerySet[Allocation], window: Period, group_by: str) -> list[UsageRow]:
    """The report: one row per key or per time bucket."""
    if group_by in KEY_GROUPS:
        return by_key(allocations, window, group_by)
    return by_time(allocations, window, group_by)


# --- Every entry, for the CSV export ---------------------------------------------------------------------------------

ENTRY_COLUMNS = (
    "id",
    "user__username",
    "course__code",
    "kind",
    "ref",
    "gpu__node__name",
    "gpu__index",
    "share",
    "starts_at",
    "ends_at",
)


# The text columns among them, which people (usernames, refs) or the inventory (node names) write: escaped in the
# COPY's own SQL (the pages are escaped as they are written: labs/usage/csvstream.py).
ENTRY_TEXT_COLUMNS = ("user__username", "course__code", "kind", "ref", "gpu__node__name")


def _copy_columns() -> list:
    return [safe_text(column) if column in ENTRY_TEXT_COLUMNS else column for column in ENTRY_COLUMNS]


def _phases(allocations: QuerySet[Allocation], window: Period) -> list[QuerySet[Allocation]]:
    return [allocations.filter(overlap) for overlap in _overlaps(window)]


def entries_copy(allocations: QuerySet[Allocation], window: Period) -> Iterator[bytes]:
    """PostgreSQL: the same rows as `entries`, as CSV written by the server (COPY ... TO STDOUT), in the chunks it
    sends: several times faster than building rows here, memory still constant (nothing is held but a chunk). Text
    that starts like a spreadsheet formula gets a `'` in front in the SQL itself (accounts.csvsafe.safe_text)."""
    if window.until <= window.start:
        return
    for rows in _phases(allocations, window):
        sql, params = rows.order_by("starts_at", "id").values_list(*_copy_columns()).query.sql_with_params()
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", params) as copy,
        ):
            for chunk in copy:
                yield bytes(chunk)


def entries(allocations: QuerySet[Allocation], window: Period, *, page: int = 10_000) -> Iterator[list[tuple]]:
    """The window's entries in pages, ordered by (starts_at, id): first those begun before the window and still held
    at its start (few), then those begun inside it, each page one range of the (starts_at, id) index (keyset): memory
    stays constant however many there are, and no transaction is held open between pages."""
    if window.until <= window.start:
        return
    for rows in _phases(allocations, window):
        yield from _pages(rows, page)


def _pages(rows: QuerySet[Allocation], page: int) -> Iterator[list[tuple]]:
    base = rows.order_by("starts_at", "id").values_list(*ENTRY_COLUMNS)
    last: tuple[dt.datetime, int] | None = None
    while True:
        query = base
        if last is not None:
            query = query.filter(starts_at__gte=last[0]).exclude(starts_at=last[0], id__lte=last[1])
        found = list(query[:page])
        if not found:
            return
        yield found
        if len(found) < page:
            return
        last = (found[-1][8], found[-1][0])
