"""The rules a booking must pass before it is written: who may book, when, how long, how many nodes, how much a week.

Each check raises the error a person can act on (InvalidInput, QuotaExceeded); the limits come from the owner's quota.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils.translation import gettext_noop

from accounts.errors import InvalidInput, QuotaExceeded
from accounts.models import Course, User
from accounts.permissions import RESERVATIONS_STAFF_ONLY, require_admin, require_staff
from labs.ledger import week_start
from labs.models import Node, NodeStatus, ReservationNode
from labs.reservations.node_request import NodeRequest
from labs.reservations.wording import amount, when

ONE_HOUR = Decimal(3600)


def check_people(*, by: User, owner: User, course: Course | None) -> None:
    require_staff(by, RESERVATIONS_STAFF_ONLY)
    if owner != by:
        require_admin(by, gettext_noop("book on someone else's behalf"))
    if not (owner.is_teacher or owner.is_lab_admin) or not owner.is_active:
        raise InvalidInput("A reservation belongs to an active teacher or admin.", fields={"owner": "Not a teacher."})
    if course is not None and not by.is_lab_admin and not course.teachers.filter(pk=owner.pk).exists():
        raise InvalidInput(
            f"You do not teach {course.code}.", fields={"course": f"Choose a course you teach, not {course.code}."}
        )


def check_window(*, starts_at: dt.datetime, ends_at: dt.datetime, now: dt.datetime, limits) -> None:
    if ends_at <= starts_at:
        raise InvalidInput("The reservation must end after it starts.", fields={"ends_at": "Must be after the start."})
    if starts_at < now:
        raise InvalidInput(
            "That window has already begun; choose a time in the future.", fields={"starts_at": "In the past."}
        )
    notice = dt.timedelta(minutes=limits.reservation_notice_min)
    if starts_at < now + notice:
        raise InvalidInput(
            f"Reservations need {limits.reservation_notice_min} minutes' notice; start at {when(now + notice)}"
            " or later.",
            fields={"starts_at": f"At least {limits.reservation_notice_min} minutes from now."},
        )
    horizon = now + dt.timedelta(days=limits.reservation_horizon_days)
    if ends_at > horizon:
        raise InvalidInput(
            f"You may book up to {limits.reservation_horizon_days} days ahead (until {when(horizon)}).",
            fields={"ends_at": "Beyond the booking horizon."},
        )
    hours = Decimal((ends_at - starts_at).total_seconds()) / ONE_HOUR
    if hours > limits.reservation_max_hours:
        raise QuotaExceeded(
            f"A reservation may last at most {amount(limits.reservation_max_hours)} hour"
            f"{'' if limits.reservation_max_hours == 1 else 's'}; this one is {amount(hours)}.",
            limit="reservation_max_hours",
            used=float(round(hours, 2)),
            allowed=float(limits.reservation_max_hours),
        )


def check_week(*, owner: User, starts_at: dt.datetime, node_hours: Decimal, limits) -> None:
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
            f"That week you may reserve {amount(limits.reservation_node_hours_week)} node-hours; {amount(booked)} are"
            f" booked and this asks for {amount(node_hours)}.",
            limit="reservation_node_hours_week",
            used=float(round(booked, 2)),
            allowed=float(limits.reservation_node_hours_week),
        )


def resolve_nodes(request: NodeRequest, limits) -> list[Node] | int:
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
