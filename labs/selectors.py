"""Reads about the lab: nodes, and GPU time from the allocation ledger."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db.models import Count, DurationField, ExpressionWrapper, F, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from labs.models import Allocation, AllocationKind, Gpu, Node, NodeStatus
from portal.accounts.models import User


def nodes_visible_to(user: User) -> QuerySet[Node]:
    """Every signed-in person may see the lab's nodes; who holds what is filtered elsewhere."""
    return Node.objects.prefetch_related("gpus").order_by("name")


def lab_summary() -> dict[str, int]:
    by_status = dict(Node.objects.values_list("status").annotate(n=Count("id")))
    return {
        "nodes": sum(by_status.values()),
        "ready": by_status.get(NodeStatus.READY, 0),
        "cordoned": by_status.get(NodeStatus.CORDONED, 0),
        "down": by_status.get(NodeStatus.DOWN, 0),
        "gpus": Gpu.objects.count(),
        "gpus_ready": Gpu.objects.filter(node__status=NodeStatus.READY).count(),
        "gpus_held": Allocation.objects.filter(ends_at__isnull=True).values("gpu").distinct().count(),
    }


def open_allocations_by_kind() -> dict[str, int]:
    return dict(Allocation.objects.filter(ends_at__isnull=True).values_list("kind").annotate(n=Count("id")))


def week_start(now: dt.datetime | None = None) -> dt.datetime:
    """Monday 00:00 of the current week in the lab's time zone (weekly quotas reset then)."""
    local = timezone.localtime(now or timezone.now())
    monday = local.date() - dt.timedelta(days=local.weekday())
    return timezone.make_aware(dt.datetime.combine(monday, dt.time.min), local.tzinfo)


def gpu_hours(allocations: QuerySet[Allocation], *, start: dt.datetime, end: dt.datetime) -> Decimal:
    """GPU-hours held within [start, end): each entry's share times its overlap with the window."""
    overlapping = allocations.filter(starts_at__lt=end).exclude(ends_at__lte=start)
    held = ExpressionWrapper(
        Least(Coalesce(F("ends_at"), Value(end)), Value(end)) - Greatest(F("starts_at"), Value(start)),
        output_field=DurationField(),
    )
    # Shares are few (1, 0.5, 0.25...): sum durations per share in the database, multiply here.
    total = Decimal(0)
    for row in overlapping.values("share").annotate(held=Sum(held)):
        if row["held"]:
            total += row["share"] * Decimal(row["held"].total_seconds()) / Decimal(3600)
    return total.quantize(Decimal("0.01"))


def _running(user: User, kind: str) -> int:
    return Allocation.objects.filter(user=user, kind=kind, ends_at__isnull=True).values("ref").distinct().count()


def usage_of(user: User, *, now: dt.datetime | None = None) -> dict[str, object]:
    now = now or timezone.now()
    start = week_start(now)
    return {
        "gpu_hours_week": float(
            gpu_hours(
                Allocation.objects.filter(user=user).exclude(kind=AllocationKind.RESERVATION), start=start, end=now
            )
        ),
        "notebooks_running": _running(user, AllocationKind.NOTEBOOK),
        "jobs_running": _running(user, AllocationKind.JOB),
        "week_started_at": start,
    }
