"""The periodic tick: lapse unapproved bookings, warn people on soon-reserved nodes, start reservations (ending
others' work there), end them, and release the ones nobody used. Safe to run twice, and to run late.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.locale import said_to, speaking
from accounts.notify import PORTAL, notify
from accounts.services import notice_send
from labs.ledger import GpuShare, Ref, allocation_open, allocations_close, is_entered
from labs.models import Allocation, AllocationKind, Gpu, Reservation, ReservationStatus
from labs.reservations.selectors import reservation_people
from labs.reservations.services import close_allocations, release_rows
from labs.reservations.wording import when
from labs.signals import allocations_ended


def _foreign_allocations(reservation: Reservation):
    """Open notebook and job allocations on the reserved nodes held by people the reservation is not for."""
    node_ids = reservation.node_rows.filter(holds=True).values("node_id")
    allocations = Allocation.objects.filter(
        ends_at__isnull=True, gpu__node__in=node_ids, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB]
    ).select_related("user", "gpu__node")
    # Who may use it when the window begins: that is when others' work is ended.
    people = reservation_people([reservation], at=reservation.starts_at)[reservation.pk]
    for allocation in allocations:
        if allocation.user_id not in people:
            yield allocation


def _warn(reservation: Reservation, now: dt.datetime) -> int:
    told = 0
    for allocation in _foreign_allocations(reservation):
        with speaking(allocation.user):
            text = (
                _(
                    "Your notebook on %(node)s will be stopped at %(at)s: the node is reserved for a class then. Save"
                    " your work, and start again after that time on a free node."
                )
                if allocation.kind == AllocationKind.NOTEBOOK
                else _(
                    "Your job on %(node)s will be stopped at %(at)s: the node is reserved for a class then. Save"
                    " your work, and start again after that time on a free node."
                )
            ) % {"node": allocation.gpu.node.name, "at": when(reservation.starts_at)}
        told += notice_send(
            user=allocation.user,
            level="warning",
            text=text,
            ref=f"{allocation.ref}:evict:{reservation.pk}:warned",
        )
    Reservation.objects.filter(pk=reservation.pk).update(warned_at=now)
    return told


def _activate(reservation: Reservation, now: dt.datetime) -> int:
    """The window begins: end others' work on the nodes, and enter the reservation in the ledger."""
    evicted = []
    for allocation in _foreign_allocations(reservation):
        evicted.append(allocation.pk)
        with speaking(allocation.user):
            text = (
                _("Your notebook on %(node)s was stopped: the node is reserved for “%(title)s” until %(until)s.")
                if allocation.kind == AllocationKind.NOTEBOOK
                else _("Your job on %(node)s was stopped: the node is reserved for “%(title)s” until %(until)s.")
            ) % {"node": allocation.gpu.node.name, "title": reservation.title, "until": when(reservation.ends_at)}
        notice_send(
            user=allocation.user,
            level="warning",
            text=text,
            ref=f"{allocation.ref}:evict:{reservation.pk}:ended",
        )
    if evicted:
        allocations_close(ids=evicted, at=now, reason=f"Ended for {reservation.ref}")
        ids, reason = list(evicted), _("The node is reserved for “%(title)s”.") % {"title": reservation.title}
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
    people = reservation_people([reservation], at=now)[reservation.pk]
    return used.filter(user_id__in=people).exists()


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
    report.expired = _lapse_unapproved(now)
    report.warned = _warn_upcoming(now)
    report.started, report.evicted = _start_due(now)
    report.ended = _end_due(now)
    if settings.RESERVATION_NO_SHOW_MIN > 0:
        report.released = _release_no_shows(now)
    return report


def _lapse_unapproved(now: dt.datetime) -> int:
    """A booking no admin approved before it began lapses: its nodes go back, its owner is told."""
    lapsed = 0
    for reservation in Reservation.objects.filter(status=ReservationStatus.PENDING, starts_at__lte=now):
        with transaction.atomic():
            release_rows(reservation, end_at=None)
            reservation.status = ReservationStatus.CANCELLED
            reservation.status_reason = said_to(
                reservation.owner, gettext_lazy("No admin approved it before it began.")
            )
            reservation.save(update_fields=["status", "status_reason"])
            notice_send(
                user=reservation.owner,
                level="warning",
                text=said_to(
                    reservation.owner,
                    gettext_lazy("Your reservation “%(title)s” was not approved in time and has lapsed."),
                    title=reservation.title,
                ),
                ref=f"reservation:{reservation.pk}:lapsed",
            )
        lapsed += 1
    return lapsed


def _warn_upcoming(now: dt.datetime) -> int:
    """RESERVATION_WARN_LEAD_MIN before a window, the people whose work is on its nodes are warned once."""
    lead = dt.timedelta(minutes=settings.RESERVATION_WARN_LEAD_MIN)
    upcoming = Reservation.objects.filter(
        status=ReservationStatus.APPROVED, warned_at__isnull=True, starts_at__gt=now, starts_at__lte=now + lead
    )
    told = 0
    for reservation in upcoming.select_related("owner", "course"):
        with transaction.atomic():
            told += _warn(reservation, now)
            minutes = max(0, round((reservation.starts_at - now).total_seconds() / 60))
            notify(
                [reservation.owner],
                "reservation.starting",
                {
                    "id": reservation.pk,
                    "title": reservation.title,
                    "at": reservation.starts_at.isoformat(),
                    "minutes": minutes,
                },
                course=reservation.course,
            )
    return told


def _start_due(now: dt.datetime) -> tuple[int, int]:
    """Windows that began: each reservation enters the ledger and others' work on its nodes ends. (started, evicted)"""
    started = evicted = 0
    for reservation in Reservation.objects.filter(
        status=ReservationStatus.APPROVED, starts_at__lte=now, ends_at__gt=now
    ):
        with transaction.atomic():
            evicted += _activate(reservation, now)
        started += 1
    return started, evicted


def _end_due(now: dt.datetime) -> int:
    """Windows that are over: the reservation leaves the ledger at its end."""
    ended = 0
    for reservation in Reservation.objects.filter(
        status__in=[ReservationStatus.APPROVED, ReservationStatus.ACTIVE], ends_at__lte=now
    ):
        with transaction.atomic():
            close_allocations(reservation, at=reservation.ends_at)
            Reservation.objects.filter(pk=reservation.pk).update(status=ReservationStatus.ENDED)
        ended += 1
    return ended


def _release_no_shows(now: dt.datetime) -> int:
    """A reservation nobody it is for used in its first RESERVATION_NO_SHOW_MIN minutes goes back to the pool."""
    minutes = settings.RESERVATION_NO_SHOW_MIN
    idle = Reservation.objects.filter(
        status=ReservationStatus.ACTIVE, starts_at__lte=now - dt.timedelta(minutes=minutes), ends_at__gt=now
    ).select_related("owner")
    released = 0
    for reservation in idle:
        if _was_used(reservation, now):
            continue
        with transaction.atomic():
            release_rows(reservation, end_at=now)
            reservation.status = ReservationStatus.ENDED
            with speaking(reservation.owner):
                reservation.status_reason = _(
                    "Released at %(at)s: nobody used the nodes in the first %(minutes)s minutes."
                ) % {"at": when(now), "minutes": minutes}
            reservation.save(update_fields=["status", "status_reason", "ends_at"])
            notice_send(
                user=reservation.owner,
                level="warning",
                text=said_to(
                    reservation.owner,
                    gettext_lazy(
                        "Your reservation “%(title)s” was released: nobody used its nodes in the first %(minutes)s"
                        " minutes, so they went back to the shared pool."
                    ),
                    title=reservation.title,
                    minutes=minutes,
                ),
                ref=f"reservation:{reservation.pk}:released",
            )
            notify(
                [reservation.owner],
                "reservation.no_show",
                {"id": reservation.pk, "title": reservation.title, "minutes": minutes},
                course=reservation.course,
                already=(PORTAL,),
            )
        released += 1
    return released
