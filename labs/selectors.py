"""Reads about the lab: nodes, and GPU time from the allocation ledger."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Max, QuerySet
from django.utils import timezone

from accounts.models import User
from accounts.prepared import Prepared
from labs.ledger import Ref, week_gpu_hours, week_start
from labs.models import Allocation, AllocationKind, Gpu, Node, NodeStatus


def nodes_visible_to(user: User) -> QuerySet[Node]:
    """Every signed-in person may see the lab's nodes; who holds what is filtered elsewhere."""
    return Node.objects.prefetch_related("gpus").order_by("name")


# Every scheduling pass and every job submission's check and dry run read these: compiled once (accounts.prepared).
_GPUS_HELD = Prepared(
    lambda: (
        Allocation.objects.filter(ends_at__isnull=True)
        .exclude(kind=AllocationKind.RESERVATION)
        .values_list("gpu_id", flat=True)
    )
)
_NODES_UP = Prepared(
    lambda: Node.objects.exclude(status=NodeStatus.DOWN).order_by("name").values_list("pk", "name", "status")
)
_GPUS_UP = Prepared(
    lambda: Gpu.objects.exclude(node__status=NodeStatus.DOWN).order_by("index").values_list("pk", "node_id", "index")
)
_READY_TOPS = Prepared(
    lambda: (
        Gpu.objects.filter(node__status=NodeStatus.READY)
        .values("node")
        .annotate(top=Max("index"))
        .order_by()
        .values_list("top", flat=True)
    )
)


def gpus_held_now() -> set[int]:
    """The ids of the GPUs that notebooks, jobs or other work hold now (a reservation holds none itself)."""
    return set(_GPUS_HELD.rows())


def nodes_up() -> list[tuple[int, str, str]]:
    """(id, name, status) of every node that is not down, by name."""
    return _NODES_UP.rows()


def gpus_up() -> list[tuple[int, int, int]]:
    """(id, node id, index) of the GPUs of every node that is not down, by index."""
    return _GPUS_UP.rows()


def ready_gpu_tops() -> list[int]:
    """The highest GPU index of each ready node, in one query."""
    return _READY_TOPS.rows()


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


def _running(user: User, kind: str) -> int:
    return Allocation.objects.filter(user=user, kind=kind, ends_at__isnull=True).values("ref").distinct().count()


def usage_of(user: User, *, now: dt.datetime | None = None) -> dict[str, object]:
    now = now or timezone.now()
    start = week_start(now)
    return {
        "gpu_hours_week": float(week_gpu_hours(user, now=now)),
        "notebooks_running": _running(user, AllocationKind.NOTEBOOK),
        "jobs_running": _running(user, AllocationKind.JOB),
        "week_started_at": start,
    }


def quota_meter(used: float | Decimal, allowed: float | Decimal) -> dict[str, object]:
    """A usage meter (templates/labs/_quota_meter.html): how full, and its colour: amber from
    NOTEBOOKS_QUOTA_WARN_PCT (where the warning notice goes out), full at the limit or with nothing allowed."""
    percent = 0 if allowed <= 0 else min(100, int(used * 100 / allowed))
    if allowed <= 0 or used >= allowed:
        level = "full"
    elif used * 100 >= allowed * settings.NOTEBOOKS_QUOTA_WARN_PCT:
        level = "warn"
    else:
        level = "ok"
    return {"used": used, "allowed": allowed, "percent": percent, "level": level}


def node_work(node: Node) -> list[Allocation]:
    """The notebooks and job attempts running on the node now (their open ledger rows, with whose and which course),
    oldest first: what draining it would stop."""
    return list(
        Allocation.objects.filter(
            gpu__node=node, ends_at__isnull=True, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB]
        )
        .select_related("user", "course", "gpu")
        .order_by("starts_at", "id")
    )


def node_work_by_holder(node: Node) -> list[dict]:
    """`node_work` with one row per notebook or job attempt: kind, id, ref, user, course, GPU indexes, since."""
    rows: dict[str, dict] = {}
    for allocation in node_work(node):
        row = rows.setdefault(
            allocation.ref,
            {
                "kind": allocation.kind,
                "id": Ref.parse(allocation.ref).holder_id,
                "ref": allocation.ref,
                "user": allocation.user,
                "course": allocation.course,
                "gpus": [],
                "since": allocation.starts_at,
            },
        )
        row["gpus"].append(allocation.gpu.index)
    return list(rows.values())
