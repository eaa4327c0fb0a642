"""Writes about reservations: book (once or weekly), cancel, approve, reject.

The rules come from policy, what is free and what would fit from availability; the tick moves bookings along.
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from accounts import audit
from accounts.errors import Conflict, InvalidInput
from accounts.locale import said_to, speaking
from accounts.models import Course, User
from accounts.notify import PORTAL, notify
from accounts.permissions import RESERVATION_OWNER_ACTION, require_admin, require_owner_or_admin
from accounts.quotas import effective_quota
from accounts.ratelimit import rate_limit_hit
from accounts.selectors import lab_admins
from accounts.services import notice_send, notices_retire
from labs.ledger import Ref, allocations_close
from labs.maintenance.selectors import maintenance_clash
from labs.models import HOLDING_STATUSES, Node, Reservation, ReservationNode, ReservationStatus
from labs.reservations.availability import conflict, free_nodes
from labs.reservations.node_request import NodeRequest
from labs.reservations.policy import ONE_HOUR, check_people, check_week, check_window, resolve_nodes
from labs.reservations.wording import when

WAITING_FOR_APPROVAL = gettext_lazy("Waiting for an admin's approval.")


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


def refuse_maintenance(nodes: list[Node], starts_at: dt.datetime, ends_at: dt.datetime) -> None:
    """A booking may not overlap maintenance of any of its nodes: 409 naming the window."""
    clash = maintenance_clash([node.pk for node in nodes], starts_at, ends_at)
    if clash is not None:
        raise Conflict(
            _("The lab has maintenance then (%(from)s to %(to)s): %(reason)s. Choose another time or other nodes.")
            % {"from": when(clash.starts_at), "to": when(clash.ends_at), "reason": clash.reason}
        )


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
                raise conflict(node_ids=None, count=count, starts_at=starts_at, ends_at=ends_at, until=until)
        else:
            nodes = wanted
        refuse_maintenance(nodes, starts_at, ends_at)
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
                    status_reason="" if status == ReservationStatus.APPROVED else said_to(owner, WAITING_FOR_APPROVAL),
                )
                _insert(reservation, nodes)
            return reservation
        except IntegrityError:
            if not isinstance(wanted, int):
                break
            # Someone took one of the nodes we picked between our read and our write: pick again.
    node_ids = None if isinstance(wanted, int) else [node.id for node in wanted]
    raise conflict(node_ids=node_ids, count=count, starts_at=starts_at, ends_at=ends_at, until=until)


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
    check_people(by=by, owner=owner, course=course)
    rate_limit_hit(user=by, action="reservation_create", now=now)
    limits = effective_quota(owner)
    title = title.strip()
    if not title:
        raise InvalidInput(_("Give the reservation a title people will recognise."), fields={"title": _("Required.")})

    windows = _weekly_windows(starts_at, ends_at, repeat_weekly_until)
    for window_start, window_end in windows:
        check_window(starts_at=window_start, ends_at=window_end, now=now, limits=limits)
    wanted = resolve_nodes(nodes, limits)
    count = wanted if isinstance(wanted, int) else len(wanted)
    needs_approval = count > limits.reservation_approval_nodes and not by.is_lab_admin
    status = ReservationStatus.PENDING if needs_approval else ReservationStatus.APPROVED
    until = now + dt.timedelta(days=limits.reservation_horizon_days)
    series = uuid.uuid4() if len(windows) > 1 else None

    made: list[Reservation] = []
    with transaction.atomic():
        for window_start, window_end in windows:
            hours = Decimal((window_end - window_start).total_seconds()) / ONE_HOUR
            check_week(owner=owner, starts_at=window_start, node_hours=hours * count, limits=limits)
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
            _("Repeat until a date after the first session."), fields={"repeat_weekly_until": _("Before the start.")}
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
                _("A weekly series may have at most 60 sessions."), fields={"repeat_weekly_until": _("Too far.")}
            )
    return windows


def _tell_admins_pending(reservation: Reservation, count: int) -> None:
    for admin in lab_admins():
        with speaking(admin):
            text = _(
                "%(owner)s asks for %(count)s nodes (%(title)s, %(at)s): approve or reject it under Reservations →"
                " Approvals."
            ) % {
                "owner": reservation.owner,
                "count": count,
                "title": reservation.title,
                "at": when(reservation.starts_at),
            }
        notice_send(
            user=admin,
            text=text,
            ref=f"reservation:{reservation.pk}:pending",
        )


def _retire_pending_notice(reservation: Reservation) -> None:
    """The admins' "approve or reject" notice goes once nothing it asked about waits (a series: all of it)."""
    if reservation.series is None:
        first = reservation
    else:
        series = Reservation.objects.filter(series=reservation.series)
        if series.filter(status=ReservationStatus.PENDING).exists():
            return
        first = series.order_by("pk").first()
    notices_retire(ref=f"reservation:{first.pk}:pending")


def release_rows(reservation: Reservation, *, end_at: dt.datetime | None) -> None:
    """Free the nodes: before the window, drop the hold; during it, end the window now. (Cancel, reject, the tick.)"""
    if end_at is None or end_at <= reservation.starts_at:
        reservation.node_rows.update(holds=False)
    else:
        reservation.node_rows.filter(ends_at__gt=end_at).update(ends_at=end_at)
        reservation.ends_at = min(reservation.ends_at, end_at)
    close_allocations(reservation, at=end_at or timezone.now())


def close_allocations(reservation: Reservation, *, at: dt.datetime) -> None:
    """End the reservation's own entry in the ledger (also the tick's, when a window ends)."""
    allocations_close(ref=Ref.reservation(reservation.pk), at=at)


def _end(reservation: Reservation, *, by: User, now: dt.datetime) -> None:
    """Cancel a locked reservation that has not begun, or end it now if it has; the caller saves and tells."""
    if reservation.starts_at > now:
        reservation.status = ReservationStatus.CANCELLED
        release_rows(reservation, end_at=None)
    else:
        reservation.status = ReservationStatus.ENDED
        release_rows(reservation, end_at=now)
    reservation.status_reason = _("Cancelled by %(who)s at %(at)s.") % {"who": by.username, "at": when(now)}
    reservation.save(update_fields=["status", "status_reason", "ends_at"])


def reservation_cancel(*, by: User, reservation: Reservation, now: dt.datetime | None = None) -> Reservation:
    """Cancel before it starts; cut it short while it runs. The owner or an admin."""
    now = now or timezone.now()
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update().get(pk=reservation.pk)
        require_owner_or_admin(by, reservation.owner_id, RESERVATION_OWNER_ACTION)
        if reservation.status not in HOLDING_STATUSES or reservation.ends_at <= now:
            raise Conflict(
                _("This reservation is already %(status)s.") % {"status": reservation.get_status_display().lower()}
            )
        _end(reservation, by=by, now=now)
        _retire_pending_notice(reservation)
        if by.pk != reservation.owner_id:
            with speaking(reservation.owner):
                text = _("Your reservation “%(title)s” (%(at)s) was cancelled by %(who)s.") % {
                    "title": reservation.title,
                    "at": when(reservation.starts_at),
                    "who": by.username,
                }
            notice_send(
                user=reservation.owner,
                text=text,
                ref=f"reservation:{reservation.pk}:cancelled",
                level="warning",
            )
    return reservation


SERIES_SCOPES = ("all", "from")


def series_sessions(reservation: Reservation, *, scope: str, now: dt.datetime | None = None) -> QuerySet:
    """The sessions of the reservation's weekly series that `scope` names and that still hold their nodes: "all"
    (every session not over yet) or "from" (this one and the later ones: the series, shortened), by start."""
    now = now or timezone.now()
    if reservation.series is None:
        raise InvalidInput(
            _("This reservation is not part of a weekly series."), fields={"series": _("Not a weekly series.")}
        )
    if scope not in SERIES_SCOPES:
        raise InvalidInput(_("Say which sessions: all or from."), fields={"series": _("Give all or from.")})
    sessions = Reservation.objects.filter(series=reservation.series, status__in=HOLDING_STATUSES, ends_at__gt=now)
    if scope == "from":
        sessions = sessions.filter(starts_at__gte=reservation.starts_at)
    return sessions.order_by("starts_at")


def reservation_series_cancel(
    *, by: User, reservation: Reservation, scope: str = "all", now: dt.datetime | None = None
) -> list[Reservation]:
    """Cancel a weekly series as a whole ("all") or shorten it ("from": this session and the later ones), in one
    transaction; a session under way ends now. The owner or an admin; the owner is told once."""
    now = now or timezone.now()
    require_owner_or_admin(by, reservation.owner_id, RESERVATION_OWNER_ACTION)
    with transaction.atomic():
        sessions = list(series_sessions(reservation, scope=scope, now=now).select_for_update())
        if not sessions:
            raise Conflict(_("No session of this series is left to cancel."))
        for session in sessions:
            _end(session, by=by, now=now)
        _retire_pending_notice(sessions[0])
        if by.pk != reservation.owner_id:
            notice_send(
                user=reservation.owner,
                text=_("%(count)s sessions of your weekly reservation “%(title)s” were cancelled by %(who)s.")
                % {"count": len(sessions), "title": reservation.title, "who": by.username},
                ref=f"reservation-series:{reservation.series}:{scope}:{sessions[0].pk}:cancelled",
                level="warning",
            )
    return sessions


def reservation_decide(*, by: User, reservation: Reservation, approve: bool, reason: str = "") -> Reservation:
    """An admin approves or rejects a pending reservation; the owner is told either way."""
    require_admin(by, gettext_noop("approve reservations"))
    with transaction.atomic():
        reservation = Reservation.objects.select_for_update().get(pk=reservation.pk)
        if reservation.status != ReservationStatus.PENDING:
            raise Conflict(
                _("This reservation is %(status)s, not waiting for you.")
                % {"status": reservation.get_status_display().lower()}
            )
        reservation.decided_by = by
        reservation.decided_at = timezone.now()
        if approve:
            reservation.status = ReservationStatus.APPROVED
            reservation.status_reason = _("Approved by %(who)s.") % {"who": by.username}
            with speaking(reservation.owner):
                text = _("Your reservation “%(title)s” (%(at)s) was approved.") % {
                    "title": reservation.title,
                    "at": when(reservation.starts_at),
                }
        else:
            reservation.status = ReservationStatus.CANCELLED
            if reason:
                reservation.status_reason = _("Rejected by %(who)s: %(reason)s") % {
                    "who": by.username,
                    "reason": reason,
                }
            else:
                reservation.status_reason = _("Rejected by %(who)s.") % {"who": by.username}
            release_rows(reservation, end_at=None)
            with speaking(reservation.owner):
                text = _("Your reservation “%(title)s” was rejected: %(reason)s.") % {
                    "title": reservation.title,
                    "reason": reason or _("ask an admin why"),
                }
        reservation.save(update_fields=["status", "status_reason", "decided_by", "decided_at"])
        audit.record(
            actor=by,
            action="reservation.approve" if approve else "reservation.reject",
            target=reservation,
            target_label=f"{reservation.title} ({reservation.owner.username})",
            before={"status": ReservationStatus.PENDING},
            after={"status": reservation.status},
            reason=reason,
            course=reservation.course_id,
        )
        _retire_pending_notice(reservation)
        notice_send(user=reservation.owner, text=text, ref=f"reservation:{reservation.pk}:decided")
        if approve:
            notify(
                [reservation.owner],
                "reservation.approved",
                {"id": reservation.pk, "title": reservation.title, "at": reservation.starts_at.isoformat()},
                course=reservation.course,
                already=(PORTAL,),
            )
        else:
            notify(
                [reservation.owner],
                "reservation.rejected",
                {"id": reservation.pk, "title": reservation.title, "reason": reason},
                already=(PORTAL,),
            )
    return reservation
