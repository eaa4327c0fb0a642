"""Writes about reservations: book, cancel, approve, reject, and the tick that makes them mean something.

The database has the last word on double booking (an exclusion constraint on ReservationNode);
the checks here come first only so that the answer can say what collides and what would fit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from labs.ledger import GpuShare, Ref, allocation_open, allocations_close, is_entered, week_start
from labs.models import (
    HOLDING_STATUSES,
    Allocation,
    AllocationKind,
    Gpu,
    Node,
    NodeStatus,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from labs.placement import may_use
from labs.signals import allocations_ended
from portal.accounts.models import Course, User
from portal.accounts.permissions import (
    RESERVATION_OWNER_ACTION,
    RESERVATIONS_STAFF_ONLY,
    require_admin,
    require_owner_or_admin,
    require_staff,
)
from portal.accounts.ratelimit import rate_limit_hit
from portal.accounts.selectors import course_ids_active_for, effective_quota
from portal.accounts.services import notice_send
from portal.errors import Conflict, InvalidInput, QuotaExceeded

ONE_HOUR = Decimal(3600)


class ReservationConflict(Conflict):
    """409: some node is taken for part of the window. Says which, and the earliest window that fits."""

    def __init__(self, message: str, *, conflicts: list[dict], earliest_fit: dict | None):
        super().__init__(message, conflicts=conflicts, earliest_fit=earliest_fit)
        self.conflicts = conflicts
        self.earliest_fit = earliest_fit


@dataclasses.dataclass(frozen=True)
class NodeRequest:
    """Exactly one of: named nodes, a count for the portal to pick, or the whole lab."""

    names: tuple[str, ...] = ()
    count: int | None = None
    all_nodes: bool = False

    def __post_init__(self) -> None:
        # The one check of the rule, for the API, the booking form and every other caller.
        if sum((bool(self.names), self.count is not None, self.all_nodes)) != 1:
            raise InvalidInput(
                "Give exactly one of: nodes (names), node_count, or all_nodes: true.",
                fields={"nodes": "Give exactly one of: nodes (names), node_count, or all_nodes: true."},
            )

    @property
    def kind(self) -> str:
        return "all" if self.all_nodes else ("count" if self.count is not None else "named")


def _local(moment: dt.datetime) -> str:
    return timezone.localtime(moment).strftime("%a %d %b %Y %H:%M")


def _num(value: Decimal | float | int) -> str:
    """1, 2.5, 160: a limit as a person writes it."""
    return f"{Decimal(str(value)).quantize(Decimal('0.1')).normalize():f}"


def _iso(moment: dt.datetime) -> str:
    return timezone.localtime(moment).isoformat()


# --- checks --------------------------------------------------------------------------


def _check_people(*, by: User, owner: User, course: Course | None) -> None:
    require_staff(by, RESERVATIONS_STAFF_ONLY)
    if owner != by:
        require_admin(by, "book on someone else's behalf")
    if not (owner.is_teacher or owner.is_lab_admin) or not owner.is_active:
        raise InvalidInput("A reservation belongs to an active teacher or admin.", fields={"owner": "Not a teacher."})
    if course is not None and not by.is_lab_admin and not course.teachers.filter(pk=owner.pk).exists():
        raise InvalidInput(
            f"You do not teach {course.code}.", fields={"course": f"Choose a course you teach, not {course.code}."}
        )


def _check_window(*, starts_at: dt.datetime, ends_at: dt.datetime, now: dt.datetime, limits) -> None:
    if ends_at <= starts_at:
        raise InvalidInput("The reservation must end after it starts.", fields={"ends_at": "Must be after the start."})
    if starts_at < now:
        raise InvalidInput(
            "That window has already begun; choose a time in the future.", fields={"starts_at": "In the past."}
        )
    notice = dt.timedelta(minutes=limits.reservation_notice_min)
    if starts_at < now + notice:
        raise InvalidInput(
            f"Reservations need {limits.reservation_notice_min} minutes' notice; start at {_local(now + notice)}"
            " or later.",
            fields={"starts_at": f"At least {limits.reservation_notice_min} minutes from now."},
        )
    horizon = now + dt.timedelta(days=limits.reservation_horizon_days)
    if ends_at > horizon:
        raise InvalidInput(
            f"You may book up to {limits.reservation_horizon_days} days ahead (until {_local(horizon)}).",
            fields={"ends_at": "Beyond the booking horizon."},
        )
    hours = Decimal((ends_at - starts_at).total_seconds()) / ONE_HOUR
    if hours > limits.reservation_max_hours:
        raise QuotaExceeded(
            f"A reservation may last at most {_num(limits.reservation_max_hours)} hour"
            f"{'' if limits.reservation_max_hours == 1 else 's'}; this one is {_num(hours)}.",
            limit="reservation_max_hours",
            used=float(round(hours, 2)),
            allowed=float(limits.reservation_max_hours),
        )


def _check_week(*, owner: User, starts_at: dt.datetime, node_hours: Decimal, limits) -> None:
    week = week_start(starts_at)
    week_end = week_start(week + dt.timedelta(days=7, hours=12))
    booked = Decimal(0)
    rows = ReservationNode.objects.filter(
        holds=True, reservation__owner=owner, reservation__starts_at__gte=week, reservation__starts_at__lt=week_end
    ).values_list("starts_at", "ends_at")
    for row_start, row_end in rows:
        booked += Decimal((row_end - row_start).total_seconds()) / ONE_HOUR
    if booked + node_hours > limits.reservation_node_hours_week:
        raise QuotaExceeded(
            f"That week you may reserve {_num(limits.reservation_node_hours_week)} node-hours; {_num(booked)} are"
            f" booked and this asks for {_num(node_hours)}.",
            limit="reservation_node_hours_week",
            used=float(round(booked, 2)),
            allowed=float(limits.reservation_node_hours_week),
        )


def _resolve_nodes(request: NodeRequest, limits) -> list[Node] | int:
    """Named nodes as rows (checked), or how many nodes to pick."""
    ready = Node.objects.filter(status=NodeStatus.READY)
    if request.all_nodes:
        wanted = list(ready.order_by("name"))
        if not wanted:
            raise InvalidInput("No node is ready to reserve.", fields={"nodes": "No ready nodes."})
        count = len(wanted)
    elif request.count is not None:
        count = request.count
        available = ready.count()
        if count < 1:
            raise InvalidInput("Reserve at least one node.", fields={"node_count": "At least 1."})
        if count > available:
            raise InvalidInput(
                f"Only {available} nodes are ready; you asked for {count}.",
                fields={"node_count": f"At most {available}."},
            )
        wanted = None
    else:
        names = sorted(set(request.names))
        if not names:
            raise InvalidInput("Name the nodes, give a node count, or ask for all nodes.", fields={"nodes": "Empty."})
        found = {node.name: node for node in Node.objects.filter(name__in=names)}
        unknown = [name for name in names if name not in found]
        if unknown:
            raise InvalidInput(f"Unknown nodes: {', '.join(unknown)}.", fields={"nodes": f"Unknown: {unknown}"})
        unready = [f"{name} is {found[name].status}" for name in names if found[name].status != NodeStatus.READY]
        if unready:
            raise InvalidInput(
                f"These nodes cannot be reserved now: {'; '.join(unready)}.", fields={"nodes": "Not ready."}
            )
        wanted = [found[name] for name in names]
        count = len(wanted)
    if count > limits.reservation_max_nodes:
        raise QuotaExceeded(
            f"You may reserve at most {limits.reservation_max_nodes} nodes at once; you asked for {count}.",
            limit="reservation_max_nodes",
            used=count,
            allowed=limits.reservation_max_nodes,
        )
    return wanted if wanted is not None else count


# --- conflicts and what would fit -------------------------------------------------------


def _busy_rows(node_ids, starts_at: dt.datetime, ends_at: dt.datetime):
    qs = ReservationNode.objects.filter(holds=True, starts_at__lt=ends_at, ends_at__gt=starts_at)
    if node_ids is not None:
        qs = qs.filter(node_id__in=node_ids)
    return qs.select_related("node").order_by("node__name", "starts_at")


def free_nodes(starts_at: dt.datetime, ends_at: dt.datetime) -> list[Node]:
    """Ready nodes with no holding reservation in [starts_at, ends_at)."""
    busy = ReservationNode.objects.filter(holds=True, starts_at__lt=ends_at, ends_at__gt=starts_at).values("node_id")
    return list(Node.objects.filter(status=NodeStatus.READY).exclude(id__in=busy).order_by("name"))


def earliest_fit(
    *, node_ids: list[int] | None, count: int, starts_at: dt.datetime, ends_at: dt.datetime, until: dt.datetime
) -> dict | None:
    """The first window as long as [starts_at, ends_at), no earlier, where the nodes (or `count` of them) are free."""
    length = ends_at - starts_at
    candidates_qs = Node.objects.filter(status=NodeStatus.READY)
    if node_ids is not None:
        candidates_qs = candidates_qs.filter(id__in=node_ids)
    names = dict(candidates_qs.values_list("id", "name"))
    if len(names) < count:
        return None
    busy: dict[int, list[tuple[dt.datetime, dt.datetime]]] = {node_id: [] for node_id in names}
    for row in ReservationNode.objects.filter(
        holds=True, node_id__in=names, ends_at__gt=starts_at, starts_at__lt=until
    ):
        busy[row.node_id].append((row.starts_at, row.ends_at))
    # A fitting window starts at the requested time or just as some booking ends.
    starts = sorted({starts_at} | {end for windows in busy.values() for _, end in windows if end > starts_at})
    for start in starts:
        end = start + length
        if end > until:
            break
        free = [nid for nid, windows in busy.items() if all(e <= start or s >= end for s, e in windows)]
        if len(free) >= count:
            chosen = sorted(names[nid] for nid in free)[:count] if node_ids is None else sorted(names.values())
            return {"starts_at": _iso(start), "ends_at": _iso(end), "nodes": chosen}
    return None


def _conflict(
    *, node_ids, count: int, starts_at: dt.datetime, ends_at: dt.datetime, until: dt.datetime
) -> ReservationConflict:
    rows = list(_busy_rows(node_ids, starts_at, ends_at))
    conflicts = [
        {"node": row.node.name, "starts_at": _iso(row.starts_at), "ends_at": _iso(row.ends_at)} for row in rows
    ]
    fit = earliest_fit(node_ids=node_ids, count=count, starts_at=starts_at, ends_at=ends_at, until=until)
    taken = sorted({row.node.name for row in rows})
    if node_ids is None:
        free = len(free_nodes(starts_at, ends_at))
        message = f"Only {free} node{'' if free == 1 else 's'} {'is' if free == 1 else 'are'} free in that window;"
        message += f" you asked for {count}."
    else:
        message = (
            f"{len(taken)} of the nodes {'is' if len(taken) == 1 else 'are'} already booked in that window"
            f" ({', '.join(taken[:6])}{'…' if len(taken) > 6 else ''})."
        )
    if fit:
        message += f" The earliest window that fits starts {_local(dt.datetime.fromisoformat(fit['starts_at']))}."
    return ReservationConflict(message, conflicts=conflicts, earliest_fit=fit)


# --- writes ------------------------------------------------------------------------------


def _insert(reservation: Reservation, nodes: list[Node]) -> None:
    """Write the rows the exclusion constraint guards; fail (and roll back) if any overlaps."""
    rows = ReservationNode.objects.bulk_create(
        ReservationNode(
            reservation=reservation, node=node, starts_at=reservation.starts_at, ends_at=reservation.ends_at
        )
        for node in nodes
    )
    # On PostgreSQL the constraint has already refused an overlap; this is the same rule for SQLite,
    # where the write lock we now hold keeps anyone else from slipping in between.
    clash = ReservationNode.objects.filter(
        holds=True,
        node__in=nodes,
        starts_at__lt=reservation.ends_at,
        ends_at__gt=reservation.starts_at,
    ).exclude(id__in=[row.id for row in rows])
    if clash.exists():
        raise IntegrityError("reservation_node_no_overlap")


def _book_one(
    *,
    by: User,
    owner: User,
    course: Course | None,
    title: str,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    request: NodeRequest,
    status: str,
    series: uuid.UUID | None,
    until: dt.datetime,
    wanted: list[Node] | int,
) -> Reservation:
    count = wanted if isinstance(wanted, int) else len(wanted)
    for _attempt in range(3):
        if isinstance(wanted, int):
            nodes = free_nodes(starts_at, ends_at)[:count]
            if len(nodes) < count:
                raise _conflict(node_ids=None, count=count, starts_at=starts_at, ends_at=ends_at, until=until)
        else:
            nodes = wanted
        try:
            with transaction.atomic():
                reservation = Reservation.objects.create(
                    owner=owner,
                    created_by=by,
                    course=course,
                    title=title,
                    starts_at=starts_at,
                    ends_at=ends_at,
                    status=status,
                    requested=request.kind,
                    series=series,
                    status_reason="" if status == ReservationStatus.APPROVED else "Waiting for an admin's approval.",
                )
                _insert(reservation, nodes)
            return reservation
        except IntegrityError:
            if not isinstance(wanted, int):
                break
            # Someone took one of the nodes we picked between our read and our write: pick again.
    node_ids = None if isinstance(wanted, int) else [node.id for node in wanted]
    raise _conflict(node_ids=node_ids, count=count, starts_at=starts_at, ends_at=ends_at, until=until)


def reservation_create(
    *,
    by: User,
    title: str,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    nodes: NodeRequest,
    course: Course | None = None,
    owner: User | None = None,
    repeat_weekly_until: dt.date | None = None,
    now: dt.datetime | None = None,
) -> list[Reservation]:
    """Book nodes for a window (or the same local time every week until a date). All or nothing.

    Returns the reservations made: one, or one per week of a series.
    """
    now = now or timezone.now()
    # In UTC from here on: Python subtracts two times of one zone by the wall clock, wrong across DST.
    starts_at, ends_at = starts_at.astimezone(dt.UTC), ends_at.astimezone(dt.UTC)
    owner = owner or by
    _check_people(by=by, owner=owner, course=course)
    rate_limit_hit(user=by, action="reservation_create", now=now)
    limits = effective_quota(owner)
    title = title.strip()
    if not title:
        raise InvalidInput("Give the reservation a title people will recognise.", fields={"title": "Required."})

    windows = _weekly_windows(starts_at, ends_at, repeat_weekly_until)
    for window_start, window_end in windows:
        _check_window(starts_at=window_start, ends_at=window_end, now=now, limits=limits)
    wanted = _resolve_nodes(nodes, limits)
    count = wanted if isinstance(wanted, int) else len(wanted)
    needs_approval = count > limits.reservation_approval_nodes and not by.is_lab_admin
    status = ReservationStatus.PENDING if needs_approval else ReservationStatus.APPROVED
    until = now + dt.timedelta(days=limits.reservation_horizon_days)
    series = uuid.uuid4() if len(windows) > 1 else None

    made: list[Reservation] = []
    with transaction.atomic():
        for window_start, window_end in windows:
            hours = Decimal((window_end - window_start).total_seconds()) / ONE_HOUR
            _check_week(owner=owner, starts_at=window_start, node_hours=hours * count, limits=limits)
            made.append(
                _book_one(
                    by=by,
                    owner=owner,
                    course=course,
                    title=title,
                    starts_at=window_start,
                    ends_at=window_end,
                    request=nodes,
                    status=status,
                    series=series,
                    until=until,
                    wanted=wanted,
                )
            )
        if needs_approval:
            _tell_admins_pending(made[0], count)
    return made


def _weekly_windows(
    starts_at: dt.datetime, ends_at: dt.datetime, until: dt.date | None
) -> list[tuple[dt.datetime, dt.datetime]]:
    """The same local wall-clock window each week (so a 14:00 class stays at 14:00 across DST)."""
    if until is None:
        return [(starts_at, ends_at)]
    local_start, local_end = timezone.localtime(starts_at), timezone.localtime(ends_at)
    if until < local_start.date():
        raise InvalidInput(
            "Repeat until a date after the first session.", fields={"repeat_weekly_until": "Before the start."}
        )
    windows = []
    week = 0
    while True:
        day_start = local_start.date() + dt.timedelta(weeks=week)
        if day_start > until:
            break
        start = timezone.make_aware(dt.datetime.combine(day_start, local_start.time()))
        end = timezone.make_aware(dt.datetime.combine(local_end.date() + dt.timedelta(weeks=week), local_end.time()))
        windows.append((start.astimezone(dt.UTC), end.astimezone(dt.UTC)))
        week += 1
        if week > 60:
            raise InvalidInput(
                "A weekly series may have at most 60 sessions.", fields={"repeat_weekly_until": "Too far."}
            )
    return windows


def _tell_admins_pending(reservation: Reservation, count: int) -> None:
    for admin in User.objects.filter(Q(role="admin") | Q(is_superuser=True), is_active=True):
        notice_send(
            user=admin,
            text=f"{reservation.owner} asks for {count} nodes ({reservation.title}, {_local(reservation.starts_at)}):"
            " approve or reject it under Reservations → Approvals.",
            ref=f"reservation:{reservation.pk}:pending",
        )


def _release_rows(reservation: Reservation, *, end_at: dt.datetime | None) -> None:
    """Free the nodes: before the window, drop the hold; during it, end the window now."""
    if end_at is None or end_at <= reservation.starts_at:
        reservation.node_rows.update(holds=False)
    else:
        reservation.node_rows.filter(ends_at__gt=end_at).update(ends_at=end_at)
        reservation.ends_at = min(reservation.ends_at, end_at)
    _close_reservation_allocations(reservation, at=end_at or timezone.now())


def reservation_cancel(*, by: User, reservation: Reservation, now: dt.datetime | None = None) -> Reservation:
    """Cancel before it starts; cut it short while it runs. The owner or an admin."""
    now = now or timezone.now()
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update().get(pk=reservation.pk)
        require_owner_or_admin(by, reservation.owner_id, RESERVATION_OWNER_ACTION)
        if reservation.status not in HOLDING_STATUSES or reservation.ends_at <= now:
            raise Conflict(f"This reservation is already {reservation.get_status_display().lower()}.")
        if reservation.starts_at > now:
            reservation.status = ReservationStatus.CANCELLED
            _release_rows(reservation, end_at=None)
        else:
            reservation.status = ReservationStatus.ENDED
            _release_rows(reservation, end_at=now)
        reservation.status_reason = f"Cancelled by {by.username} at {_local(now)}."
        reservation.save(update_fields=["status", "status_reason", "ends_at"])
        if by.pk != reservation.owner_id:
            notice_send(
                user=reservation.owner,
                text=f"Your reservation “{reservation.title}” ({_local(reservation.starts_at)}) was cancelled by"
                f" {by.username}.",
                ref=f"reservation:{reservation.pk}:cancelled",
                level="warning",
            )
    return reservation


def reservation_decide(*, by: User, reservation: Reservation, approve: bool, reason: str = "") -> Reservation:
    """An admin approves or rejects a pending reservation; the owner is told either way."""
    require_admin(by, "approve reservations")
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update().get(pk=reservation.pk)
        if reservation.status != ReservationStatus.PENDING:
            raise Conflict(f"This reservation is {reservation.get_status_display().lower()}, not waiting for you.")
        reservation.decided_by = by
        reservation.decided_at = timezone.now()
        if approve:
            reservation.status = ReservationStatus.APPROVED
            reservation.status_reason = f"Approved by {by.username}."
            text = f"Your reservation “{reservation.title}” ({_local(reservation.starts_at)}) was approved."
        else:
            reservation.status = ReservationStatus.CANCELLED
            reservation.status_reason = f"Rejected by {by.username}" + (f": {reason}" if reason else ".")
            _release_rows(reservation, end_at=None)
            text = f"Your reservation “{reservation.title}” was rejected: {reason or 'ask an admin why'}."
        reservation.save(update_fields=["status", "status_reason", "decided_by", "decided_at"])
        notice_send(user=reservation.owner, text=text, ref=f"reservation:{reservation.pk}:decided")
    return reservation


# --- the tick: warn, start, end, release -----------------------------------------------


def _close_reservation_allocations(reservation: Reservation, *, at: dt.datetime) -> None:
    allocations_close(ref=Ref.reservation(reservation.pk), at=at)


def _foreign_allocations(reservation: Reservation):
    """Open notebook and job allocations on the reserved nodes held by people the reservation is not for."""
    node_ids = reservation.node_rows.filter(holds=True).values("node_id")
    allocations = Allocation.objects.filter(
        ends_at__isnull=True, gpu__node__in=node_ids, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB]
    ).select_related("user", "gpu__node")
    # Whose courses are in term when the window begins: that is when others' work is ended.
    today = timezone.localdate(reservation.starts_at)
    cache: dict[int, frozenset[int]] = {}
    for allocation in allocations:
        course_ids = cache.setdefault(allocation.user_id, course_ids_active_for(allocation.user, today=today))
        if not may_use(reservation, allocation.user, course_ids):
            yield allocation


def _warn(reservation: Reservation, now: dt.datetime) -> int:
    told = 0
    for allocation in _foreign_allocations(reservation):
        what = "notebook" if allocation.kind == AllocationKind.NOTEBOOK else "job"
        told += notice_send(
            user=allocation.user,
            level="warning",
            text=f"Your {what} on {allocation.gpu.node.name} will be stopped at {_local(reservation.starts_at)}:"
            " the node is reserved for a class then. Save your work, and start again after that time on a free node.",
            ref=f"{allocation.ref}:evict:{reservation.pk}:warned",
        )
    Reservation.objects.filter(pk=reservation.pk).update(warned_at=now)
    return told


def _activate(reservation: Reservation, now: dt.datetime) -> int:
    """The window begins: end others' work on the nodes, and enter the reservation in the ledger."""
    evicted = []
    for allocation in _foreign_allocations(reservation):
        evicted.append(allocation.pk)
        what = "notebook" if allocation.kind == AllocationKind.NOTEBOOK else "job"
        notice_send(
            user=allocation.user,
            level="warning",
            text=f"Your {what} on {allocation.gpu.node.name} was stopped: the node is reserved for"
            f" “{reservation.title}” until {_local(reservation.ends_at)}.",
            ref=f"{allocation.ref}:evict:{reservation.pk}:ended",
        )
    if evicted:
        allocations_close(ids=evicted, at=now, reason=f"Ended for {reservation.ref}")
        ids, reason = list(evicted), f"The node is reserved for “{reservation.title}”."
        transaction.on_commit(lambda: allocations_ended.send(sender=Reservation, allocation_ids=ids, reason=reason))
    ref = Ref.reservation(reservation.pk)
    if not is_entered(ref):
        gpus = Gpu.objects.filter(node__reservation_rows__reservation=reservation, node__reservation_rows__holds=True)
        allocation_open(
            ref=ref,
            user_id=reservation.owner_id,
            course_id=reservation.course_id,
            shares=[GpuShare(gpu_id) for gpu_id in gpus.values_list("id", flat=True)],
            at=reservation.starts_at,
            reason=reservation.title,
        )
    Reservation.objects.filter(pk=reservation.pk).update(status=ReservationStatus.ACTIVE)
    return len(evicted)


def _was_used(reservation: Reservation, now: dt.datetime) -> bool:
    node_ids = reservation.node_rows.values("node_id")
    used = Allocation.objects.filter(
        gpu__node__in=node_ids, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB], starts_at__lt=now
    ).filter(Q(ends_at__isnull=True) | Q(ends_at__gt=reservation.starts_at))
    course_ids: dict[int, frozenset[int]] = {}
    for allocation in used.select_related("user"):
        ids = course_ids.setdefault(
            allocation.user_id, course_ids_active_for(allocation.user, today=timezone.localdate(now))
        )
        if may_use(reservation, allocation.user, ids):
            return True
    return False


@dataclasses.dataclass
class TickReport:
    expired: int = 0
    warned: int = 0
    started: int = 0
    evicted: int = 0
    ended: int = 0
    released: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{name} {value}" for name, value in dataclasses.asdict(self).items())


def reservations_tick(*, now: dt.datetime | None = None) -> TickReport:
    """Move reservations along their life; safe to run twice, and to run late."""
    now = now or timezone.now()
    report = TickReport()
    lead = dt.timedelta(minutes=settings.RESERVATION_WARN_LEAD_MIN)
    no_show = dt.timedelta(minutes=settings.RESERVATION_NO_SHOW_MIN)

    for reservation in Reservation.objects.filter(status=ReservationStatus.PENDING, starts_at__lte=now):
        with transaction.atomic():
            _release_rows(reservation, end_at=None)
            reservation.status = ReservationStatus.CANCELLED
            reservation.status_reason = "No admin approved it before it began."
            reservation.save(update_fields=["status", "status_reason"])
            notice_send(
                user=reservation.owner,
                level="warning",
                text=f"Your reservation “{reservation.title}” was not approved in time and has lapsed.",
                ref=f"reservation:{reservation.pk}:lapsed",
            )
        report.expired += 1

    upcoming = Reservation.objects.filter(
        status=ReservationStatus.APPROVED, warned_at__isnull=True, starts_at__gt=now, starts_at__lte=now + lead
    )
    for reservation in upcoming:
        with transaction.atomic():
            report.warned += _warn(reservation, now)

    for reservation in Reservation.objects.filter(
        status=ReservationStatus.APPROVED, starts_at__lte=now, ends_at__gt=now
    ):
        with transaction.atomic():
            report.evicted += _activate(reservation, now)
        report.started += 1

    for reservation in Reservation.objects.filter(
        status__in=[ReservationStatus.APPROVED, ReservationStatus.ACTIVE], ends_at__lte=now
    ):
        with transaction.atomic():
            _close_reservation_allocations(reservation, at=reservation.ends_at)
            Reservation.objects.filter(pk=reservation.pk).update(status=ReservationStatus.ENDED)
        report.ended += 1

    if settings.RESERVATION_NO_SHOW_MIN > 0:
        idle = Reservation.objects.filter(
            status=ReservationStatus.ACTIVE, starts_at__lte=now - no_show, ends_at__gt=now
        ).select_related("owner")
        for reservation in idle:
            if _was_used(reservation, now):
                continue
            with transaction.atomic():
                _release_rows(reservation, end_at=now)
                reservation.status = ReservationStatus.ENDED
                reservation.status_reason = (
                    f"Released at {_local(now)}: nobody used the nodes in the first"
                    f" {settings.RESERVATION_NO_SHOW_MIN} minutes."
                )
                reservation.save(update_fields=["status", "status_reason", "ends_at"])
                notice_send(
                    user=reservation.owner,
                    level="warning",
                    text=f"Your reservation “{reservation.title}” was released: nobody used its nodes in the first"
                    f" {settings.RESERVATION_NO_SHOW_MIN} minutes, so they went back to the shared pool.",
                    ref=f"reservation:{reservation.pk}:released",
                )
            report.released += 1
    return report
