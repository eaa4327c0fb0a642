"""The rules a booking must pass before it is written: who may book, when, how long, how many nodes, how much a week.

Each check raises the error a person can act on (InvalidInput, QuotaExceeded); the limits come from the owner's quota.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

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
        raise InvalidInput(
            _("A reservation belongs to an active teacher or admin."), fields={"owner": _("Not a teacher.")}
        )
    if course is not None and not by.is_lab_admin and not course.teachers.filter(pk=owner.pk).exists():
        raise InvalidInput(
            _("You do not teach %(code)s.") % {"code": course.code},
            fields={"course": _("Choose a course you teach, not %(code)s.") % {"code": course.code}},
        )


def check_window(*, starts_at: dt.datetime, ends_at: dt.datetime, now: dt.datetime, limits) -> None:
    if ends_at <= starts_at:
        raise InvalidInput(
            _("The reservation must end after it starts."), fields={"ends_at": _("Must be after the start.")}
        )
    if starts_at < now:
        raise InvalidInput(
            _("That window has already begun; choose a time in the future."), fields={"starts_at": _("In the past.")}
        )
    notice = dt.timedelta(minutes=limits.reservation_notice_min)
    if starts_at < now + notice:
        raise InvalidInput(
            _("Reservations need %(minutes)s minutes' notice; start at %(at)s or later.")
            % {"minutes": limits.reservation_notice_min, "at": when(now + notice)},
            fields={
                "starts_at": _("At least %(minutes)s minutes from now.") % {"minutes": limits.reservation_notice_min}
            },
        )
    horizon = now + dt.timedelta(days=limits.reservation_horizon_days)
    if ends_at > horizon:
        raise InvalidInput(
            _("You may book up to %(days)s days ahead (until %(until)s).")
            % {"days": limits.reservation_horizon_days, "until": when(horizon)},
            fields={"ends_at": _("Beyond the booking horizon.")},
        )
    hours = Decimal((ends_at - starts_at).total_seconds()) / ONE_HOUR
    if hours > limits.reservation_max_hours:
        raise QuotaExceeded(
            ngettext(
                "A reservation may last at most %(max)s hour; this one is %(hours)s.",
                "A reservation may last at most %(max)s hours; this one is %(hours)s.",
                1 if limits.reservation_max_hours == 1 else 2,
            )
            % {"max": amount(limits.reservation_max_hours), "hours": amount(hours)},
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
            _("That week you may reserve %(allowed)s node-hours; %(booked)s are booked and this asks for %(asked)s.")
            % {
                "allowed": amount(limits.reservation_node_hours_week),
                "booked": amount(booked),
                "asked": amount(node_hours),
            },
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
            raise InvalidInput(_("No node is ready to reserve."), fields={"nodes": _("No ready nodes.")})
        count = len(wanted)
    elif request.count is not None:
        count = request.count
        available = ready.count()
        if count < 1:
            raise InvalidInput(_("Reserve at least one node."), fields={"node_count": _("At least 1.")})
        if count > available:
            raise InvalidInput(
                _("Only %(available)s nodes are ready; you asked for %(count)s.")
                % {"available": available, "count": count},
                fields={"node_count": _("At most %(available)s.") % {"available": available}},
            )
        wanted = None
    else:
        names = sorted(set(request.names))
        if not names:
            raise InvalidInput(
                _("Name the nodes, give a node count, or ask for all nodes."), fields={"nodes": _("Empty.")}
            )
        found = {node.name: node for node in Node.objects.filter(name__in=names)}
        unknown = [name for name in names if name not in found]
        if unknown:
            raise InvalidInput(
                _("Unknown nodes: %(names)s.") % {"names": ", ".join(unknown)},
                fields={"nodes": _("Unknown: %(names)s") % {"names": unknown}},
            )
        unready = [
            _("%(name)s is %(status)s") % {"name": name, "status": found[name].get_status_display().lower()}
            for name in names
            if found[name].status != NodeStatus.READY
        ]
        if unready:
            raise InvalidInput(
                _("These nodes cannot be reserved now: %(nodes)s.") % {"nodes": "; ".join(unready)},
                fields={"nodes": _("Not ready.")},
            )
        wanted = [found[name] for name in names]
        count = len(wanted)
    if count > limits.reservation_max_nodes:
        raise QuotaExceeded(
            _("You may reserve at most %(max)s nodes at once; you asked for %(count)s.")
            % {"max": limits.reservation_max_nodes, "count": count},
            limit="reservation_max_nodes",
            used=count,
            allowed=limits.reservation_max_nodes,
        )
    return wanted if wanted is not None else count
