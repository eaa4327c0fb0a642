"""What the collector reads from the database on each tick: the GPUs to watch and who holds each one.

Holders come from the allocation ledger only (notebooks, job attempts, reservation windows), as
plain dicts: they travel in channel-layer messages, which carry no Decimals or datetimes.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Q
from django.utils import timezone

from labs.models import Allocation, Gpu
from labs.telemetry.samples import GpuTarget


def open_holders(now: dt.datetime | None = None, *, gpu_ids: list[int] | None = None) -> dict[int, list[dict]]:
    """Per GPU id, the ledger entries holding it now, oldest first."""
    now = now or timezone.now()
    rows = Allocation.objects.filter(starts_at__lte=now).filter(Q(ends_at__isnull=True) | Q(ends_at__gt=now))
    if gpu_ids is not None:
        rows = rows.filter(gpu_id__in=gpu_ids)
    holders: dict[int, list[dict]] = defaultdict(list)
    for row in rows.order_by("starts_at", "id").values(
        "gpu_id", "user_id", "user__username", "course_id", "course__code", "kind", "ref", "share", "starts_at"
    ):
        holders[row["gpu_id"]].append(
            {
                "user_id": row["user_id"],
                "user": row["user__username"],
                "course_id": row["course_id"],
                "course": row["course__code"],
                "kind": row["kind"],
                "ref": row["ref"],
                "share": float(row["share"]),
                "since": row["starts_at"].isoformat(),
            }
        )
    return dict(holders)


def lab_targets(now: dt.datetime | None = None) -> tuple[list[GpuTarget], dict[int, list[dict]]]:
    """Every GPU of the inventory with its node's status, and the holders of each (two queries)."""
    holders = open_holders(now)
    targets = [
        GpuTarget(
            gpu_id=gpu.pk,
            node=gpu.node.name,
            index=gpu.index,
            uuid=gpu.uuid,
            model=gpu.model,
            memory_mb=gpu.memory_mb,
            node_status=gpu.node.status,
            node_reason=gpu.node.status_reason if gpu.node.status != "ready" else "",
            held=gpu.pk in holders,
        )
        for gpu in Gpu.objects.select_related("node").order_by("node__name", "index")
    ]
    return targets, holders
