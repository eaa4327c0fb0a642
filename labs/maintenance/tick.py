"""Maintenance along its life, at the reservation tick's interval (the task labs.tasks.maintenance_tick): tell the
people with work or bookings on its nodes MAINTENANCE_NOTIFY_LEAD_H ahead; at its start drain the nodes (notebooks
end, job attempts are preempted with their grace and queued again: labs.services.node_drain) and cordon them with
the reason; at its end uncordon those it cordoned. Each step is marked on the row (notified_at, started_at,
ended_at), claimed with a conditional UPDATE so two ticks never do it twice; safe to run late (a window already over
only restores)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.errors import Conflict
from accounts.models import User
from accounts.notify import notify
from labs.maintenance.selectors import maintenance_nodes
from labs.models import HOLDING_STATUSES, Allocation, AllocationKind, Maintenance, NodeStatus, ReservationNode
from labs.services import node_drain, node_uncordon

log = logging.getLogger(__name__)

MARK = "Maintenance"  # how the nodes' status reason starts, so the end uncordons only what the window cordoned


@dataclasses.dataclass
class MaintenanceReport:
    notified: int = 0
    started: int = 0
    drained: int = 0
    ended: int = 0


def _claim(maintenance: Maintenance, field: str, now: dt.datetime) -> bool:
    return bool(Maintenance.objects.filter(pk=maintenance.pk, **{f"{field}__isnull": True}).update(**{field: now}))


def affected_people(maintenance: Maintenance, *, now: dt.datetime) -> list[User]:
    """Whoever runs a notebook or job on its nodes now, or holds a booking on them during the window."""
    node_ids = list(maintenance_nodes(maintenance).values_list("id", flat=True))
    working = Allocation.objects.filter(
        gpu__node_id__in=node_ids, ends_at__isnull=True, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB]
    ).values_list("user_id", flat=True)
    booking = ReservationNode.objects.filter(
        node_id__in=node_ids,
        holds=True,
        starts_at__lt=maintenance.ends_at,
        ends_at__gt=max(now, maintenance.starts_at),
        reservation__status__in=HOLDING_STATUSES,
    ).values_list("reservation__owner_id", flat=True)
    return list(User.objects.filter(pk__in=set(working) | set(booking), is_active=True).order_by("pk"))


def _context(maintenance: Maintenance) -> dict:
    names = "*" if maintenance.all_nodes else ", ".join(sorted(n.name for n in maintenance.nodes.all()))
    return {
        "id": maintenance.pk,
        "nodes": names,
        "starts_at": maintenance.starts_at.isoformat(),
        "ends_at": maintenance.ends_at.isoformat(),
        "reason": maintenance.reason,
    }


def _announce(now: dt.datetime) -> int:
    lead = dt.timedelta(hours=settings.MAINTENANCE_NOTIFY_LEAD_H)
    told = 0
    for maintenance in Maintenance.objects.filter(
        notified_at__isnull=True, ended_at__isnull=True, starts_at__lte=now + lead, ends_at__gt=now
    ):
        with transaction.atomic():
            if _claim(maintenance, "notified_at", now):
                told += notify(affected_people(maintenance, now=now), "maintenance.announced", _context(maintenance))
    return told


def _reason(maintenance: Maintenance) -> str:
    until = timezone.localtime(maintenance.ends_at).strftime("%Y-%m-%d %H:%M")
    return f"{MARK} until {until}: {maintenance.reason}"[:300]


def _start(now: dt.datetime) -> tuple[int, int]:
    started = drained = 0
    for maintenance in Maintenance.objects.filter(started_at__isnull=True, starts_at__lte=now, ends_at__gt=now):
        if not _claim(maintenance, "started_at", now):
            continue
        started += 1
        for node in maintenance_nodes(maintenance).order_by("name"):
            try:
                drained += len(node_drain(node=node, by=maintenance.created_by, reason=_reason(maintenance), now=now))
            except Conflict as exc:  # a node that is down: nothing runs there; it is not cordoned
                log.warning("maintenance %s: %s not drained: %s", maintenance.pk, node.name, exc)
    return started, drained


def _end(now: dt.datetime) -> int:
    ended = 0
    for maintenance in Maintenance.objects.filter(ended_at__isnull=True, ends_at__lte=now):
        if not _claim(maintenance, "ended_at", now):
            continue
        ended += 1
        if maintenance.started_at is None:
            continue  # never began (the tick was down the whole window): nothing to restore
        for node in maintenance_nodes(maintenance).filter(
            status=NodeStatus.CORDONED, status_reason=_reason(maintenance)
        ):
            node_uncordon(node=node, by=maintenance.created_by, reason=f"end of maintenance {maintenance.pk}")
    return ended


def maintenance_tick(*, now: dt.datetime | None = None) -> MaintenanceReport:
    now = now or timezone.now()
    report = MaintenanceReport()
    report.ended = _end(now)
    report.notified = _announce(now)
    report.started, report.drained = _start(now)
    return report
