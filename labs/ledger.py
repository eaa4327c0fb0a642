"""The ledger of GPU time: the one module that opens, closes and reads `Allocation` rows.

Everything that holds a GPU (a notebook session, a job attempt, a reservation window) is entered here when it takes
its GPUs and closed here when it gives them back; quotas, usage, the live grid's "who holds this GPU" and the
reconciler all read what is written here. No other module creates, updates or deletes Allocation rows
(tests/labs/test_ledger_owner.py reads the source to hold everyone to it).

A holder is named by a `Ref`: its kind and its key (`notebook:12`, `job:5#2` — the job's second attempt —,
`reservation:3`). Rows are written by the caller's transaction; callers lock what they must before (placement locks
the GPUs it chose, the scheduling pass runs under its lock).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator
from decimal import Decimal

from django.db import connection, transaction
from django.db.models import DurationField, ExpressionWrapper, F, Max, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from accounts.models import User
from accounts.prepared import Prepared
from labs.models import Allocation, AllocationKind
from labs.signals import holders_closed
from labs.usage import daysums


def _jit_off_for_the_session() -> bool:
    options = connection.settings_dict.get("OPTIONS", {}).get("options", "")
    return "jit=off" in options.replace(" ", "")


@contextlib.contextmanager
def without_jit() -> Iterator[None]:
    """PostgreSQL compiles a big aggregate over the ledger with JIT, which cost more than the query itself (1.7 s of
    JIT for 0.15 s of work on 250,000 entries, bench/USAGE_PLANS.md): the reports and the fair-share read run without
    it. Every connection the portal opens has it off (portal/settings/data.py); one opened with other options gets
    `SET LOCAL jit = off`, in a transaction of its own (or the caller's)."""
    if connection.vendor != "postgresql" or _jit_off_for_the_session():
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = off")
        yield


ONE = Decimal("1")


@dataclasses.dataclass(frozen=True)
class Ref:
    """Who holds GPU time: a kind of holder and its key, as the ledger stores it in `Allocation.ref`."""

    kind: str
    key: str

    def __post_init__(self) -> None:
        if self.kind not in AllocationKind.values or not self.key.startswith(f"{self.kind}:"):
            raise ValueError(f"not a ledger reference: {self.kind} {self.key!r}")

    def __str__(self) -> str:
        return self.key

    @classmethod
    def notebook(cls, session_id: int) -> Ref:
        return cls(AllocationKind.NOTEBOOK, f"notebook:{int(session_id)}")

    @classmethod
    def job(cls, job_id: int, attempt: int) -> Ref:
        return cls(AllocationKind.JOB, f"job:{int(job_id)}#{int(attempt)}")

    @classmethod
    def reservation(cls, reservation_id: int) -> Ref:
        return cls(AllocationKind.RESERVATION, f"reservation:{int(reservation_id)}")

    @classmethod
    def parse(cls, key: str) -> Ref:
        return cls(key.split(":", 1)[0], key)

    @property
    def holder_id(self) -> int | None:
        """The session's, job's or reservation's id (None for a key not written by these constructors)."""
        number = self.key.split(":", 1)[1].split("#", 1)[0]
        return int(number) if number.isdigit() else None

    @property
    def attempt(self) -> int | None:
        """A job attempt's number."""
        _, _, attempt = self.key.partition("#")
        return int(attempt) if attempt.isdigit() else None


@dataclasses.dataclass(frozen=True)
class GpuShare:
    """One GPU (or a share of one) a holder takes."""

    gpu_id: int
    share: Decimal = ONE


# --- writes ----------------------------------------------------------------------------------------------------------


def allocation_open(
    *,
    ref: Ref,
    user_id: int,
    shares: Iterable[GpuShare],
    at: dt.datetime,
    course_id: int | None = None,
    reason: str = "",
) -> list[Allocation]:
    """Enter the holder in the ledger: one open row per GPU it takes, from `at`, or from when the GPU was freed.

    A pass decides with the `now` it started with, but a job or notebook on the same GPU may be closed after that
    moment and before this placement (that is how the GPU became free): the new row starts at that close, so the
    ledger never shows the GPU held twice over."""
    shares = list(shares)
    freed_at = dict(
        Allocation.objects.filter(
            gpu_id__in=[slot.gpu_id for slot in shares],
            kind__in=(AllocationKind.JOB, AllocationKind.NOTEBOOK),
            ends_at__gt=at,  # held and freed since `at` (it may even have begun after it: a short job)
        )
        .values("gpu_id")
        .annotate(last=Max("ends_at"))
        .values_list("gpu_id", "last")
    )
    return Allocation.objects.bulk_create(
        Allocation(
            user_id=user_id,
            course_id=course_id,
            kind=ref.kind,
            ref=ref.key,
            gpu_id=slot.gpu_id,
            share=slot.share,
            starts_at=max(at, freed_at.get(slot.gpu_id, at)),
            reason=reason[:200],
        )
        for slot in shares
    )


def allocations_close(
    *, at: dt.datetime, ref: Ref | None = None, ids: Iterable[int] | None = None, reason: str | None = None
) -> int:
    """Close the open rows of a holder (`ref`) or the given rows (`ids`) at `at`; closed rows stay as they are.

    Returns how many rows were closed, so a caller that runs twice closes nothing the second time."""
    if (ref is None) == (ids is None):
        raise ValueError("close by ref or by ids, one of them")
    rows = Allocation.objects.filter(ends_at__isnull=True)
    rows = rows.filter(ref=ref.key, kind=ref.kind) if ref is not None else rows.filter(pk__in=list(ids or ()))
    changes: dict[str, object] = {"ends_at": at}
    if reason is not None:
        changes["reason"] = reason[:200]
    with transaction.atomic():
        # Locked, then closed by id: a close racing this one waits, then finds them closed and adds nothing twice.
        closing = list(rows.select_for_update().values_list("pk", "ref", *daysums.ENTRY_FIELDS[:-1]))
        closed = Allocation.objects.filter(pk__in=[row[0] for row in closing]).update(**changes)
        # The day sums beside the ledger, in the close's transaction.
        daysums.add_closed((*entry, at) for _pk, _ref, *entry in closing)
    found = {(kind, key, user_id, course_id) for _pk, key, user_id, course_id, kind, _s, _t in closing}
    if closed:
        refs = sorted({Ref(kind, key) for kind, key, _, _ in found}, key=str)
        user_ids = sorted({user_id for _, _, user_id, _ in found})
        course_ids = sorted({course_id for _, _, _, course_id in found if course_id is not None})
        transaction.on_commit(
            lambda: holders_closed.send(sender=Allocation, refs=refs, user_ids=user_ids, course_ids=course_ids, at=at)
        )
    return closed


def allocations_discard(*, ref: Ref) -> int:
    """Forget a holder's open rows as if it never held the GPUs: a notebook the hub could not start, back in the
    queue before it used anything. Closed rows are history and are never discarded."""
    deleted, _ = Allocation.objects.filter(ref=ref.key, kind=ref.kind, ends_at__isnull=True).delete()
    return deleted


# --- reads -----------------------------------------------------------------------------------------------------------


def is_entered(ref: Ref) -> bool:
    """Whether the holder has ever been entered (open or closed)."""
    return Allocation.objects.filter(ref=ref.key, kind=ref.kind).exists()


def refs_of(allocation_ids: Iterable[int], *, kind: str) -> set[Ref]:
    """The holders of these rows, of one kind (the receivers of `allocations_ended` find their work by them)."""
    keys = Allocation.objects.filter(pk__in=list(allocation_ids), kind=kind).values_list("ref", flat=True)
    return {Ref(kind, key) for key in keys}


def week_start(now: dt.datetime | None = None) -> dt.datetime:
    """Monday 00:00 of the current week in the lab's time zone (weekly quotas reset then)."""
    local = timezone.localtime(now or timezone.now())
    monday = local.date() - dt.timedelta(days=local.weekday())
    return timezone.make_aware(dt.datetime.combine(monday, dt.time.min), local.tzinfo)


def _held(start: dt.datetime, end: dt.datetime) -> ExpressionWrapper:
    """Each row's overlap with [start, end), an open row counting up to `end`."""
    return ExpressionWrapper(
        Least(Coalesce(F("ends_at"), Value(end)), Value(end)) - Greatest(F("starts_at"), Value(start)),
        output_field=DurationField(),
    )


def gpu_seconds(allocations: QuerySet[Allocation], *, start: dt.datetime, end: dt.datetime) -> Decimal:
    """GPU-seconds held within [start, end): each entry's share times its overlap with the window, an open entry
    counting up to `end`. The one definition of GPU time over a window (`gpu_hours`, the usage reports'
    `accounting.total_seconds` and `held_seconds`, its form for one entry, say the same)."""
    if end <= start:
        return Decimal(0)
    overlapping = allocations.filter(starts_at__lt=end).exclude(ends_at__lte=start)
    # Shares are few (1, 0.5, 0.25...): sum durations per share in the database, multiply here.
    total = Decimal(0)
    for row in overlapping.order_by().values("share").annotate(held=Sum(_held(start, end))):
        if row["held"]:
            total += row["share"] * Decimal(row["held"].total_seconds())
    return total


def gpu_hours(allocations: QuerySet[Allocation], *, start: dt.datetime, end: dt.datetime) -> Decimal:
    """GPU-hours held within [start, end) (`gpu_seconds`), to the hundredth."""
    return (gpu_seconds(allocations, start=start, end=end) / Decimal(3600)).quantize(Decimal("0.01"))


def held_seconds(starts_at: dt.datetime, ends_at: dt.datetime | None, *, start: dt.datetime, end: dt.datetime) -> float:
    """Seconds of one entry [starts_at, ends_at, or `end` while open) inside [start, end): `gpu_seconds`'s rule for
    entries already read (times its share)."""
    return max(0.0, (min(ends_at or end, end) - max(starts_at, start)).total_seconds())


def _gpu_hours_by(
    key: str, ids: Iterable[int], *, start: dt.datetime, end: dt.datetime, where: Q | None = None
) -> dict[int, Decimal]:
    """GPU-hours of notebooks and jobs within [start, end) per value of `key` ("user_id", "course_id") among `ids`,
    in one query; every id gets a total, 0 when it used nothing (reservations are not use). `where` narrows the
    entries."""
    ids = list(ids)
    if key == "user_id" and where is None and len(ids) == 1:
        rows = _HELD_PER_SHARE_OF_ONE.rows(ids[0], start, end)
    else:
        rows = _held_per_share(key, ids, start=start, end=end, where=where)
    totals: dict[int, Decimal] = dict.fromkeys(ids, Decimal(0))
    for row in rows:
        if row["held"]:
            totals[row[key]] += row["share"] * Decimal(row["held"].total_seconds()) / Decimal(3600)
    return {pk: total.quantize(Decimal("0.01")) for pk, total in totals.items()}


def _held_per_share(
    key: str, ids: list[int], *, start: dt.datetime, end: dt.datetime, where: Q | None = None
) -> QuerySet:
    """Per value of `key` among `ids` and per share, the time notebooks and jobs held within [start, end)."""
    overlapping = (
        Allocation.objects.filter(where or Q(), **{f"{key}__in": ids}, starts_at__lt=end)
        .exclude(ends_at__lte=start)
        .exclude(kind=AllocationKind.RESERVATION)
    )
    return overlapping.values(key, "share").annotate(held=Sum(_held(start, end)))


# One person's week (every job submission and dry run, the notebook start): `_held_per_share` for one person,
# compiled once (accounts.prepared).
_HELD_PER_SHARE_OF_ONE = Prepared(
    lambda user, start, end: _held_per_share("user_id", [user], start=start, end=end),
    user=Allocation._meta.get_field("user"),
    start=Allocation._meta.get_field("ends_at"),
    end=Allocation._meta.get_field("starts_at"),
)


def gpu_hours_by_user(
    user_ids: Iterable[int], *, start: dt.datetime, end: dt.datetime, where: Q | None = None
) -> dict[int, Decimal]:
    """GPU-hours of notebooks and jobs per person within [start, end), in one query (reservations are not use);
    `where` narrows the entries (a course's, those a viewer may see)."""
    return _gpu_hours_by("user_id", user_ids, start=start, end=end, where=where)


def week_gpu_hours(user: User, *, now: dt.datetime | None = None) -> Decimal:
    """GPU-hours this person used this week, notebooks and jobs together (reservations are not use)."""
    now = now or timezone.now()
    return gpu_hours_by_user([user.pk], start=week_start(now), end=now)[user.pk]


def week_gpu_hours_by_user(user_ids: Iterable[int], *, now: dt.datetime | None = None) -> dict[int, Decimal]:
    """`week_gpu_hours` for many people in one query (the scheduling pass, the notebook pass)."""
    now = now or timezone.now()
    return gpu_hours_by_user(user_ids, start=week_start(now), end=now)


def gpu_hours_by_course(course_ids: Iterable[int], *, start: dt.datetime, end: dt.datetime) -> dict[int, Decimal]:
    """GPU-hours of notebooks and jobs counted for each course within [start, end), in one query (the ledger's
    `course`: the course a session or job counted for; reservations are not use)."""
    return _gpu_hours_by("course_id", course_ids, start=start, end=end)
