"""Reads for the API and the pages: the live state of the GPUs a person may see, a node's last hour, alerts.

Other capabilities read telemetry here (and only here): the core's node page through `node_gpus`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from accounts.models import User
from labs.models import Allocation, AllocationKind, GpuAlert, GpuAlertKind, GpuMinute, Node
from labs.telemetry import store
from labs.telemetry.charts import gpu_charts
from labs.telemetry.holders import lab_targets
from labs.telemetry.samples import gpu_key
from labs.telemetry.state import stored_state
from labs.telemetry.visibility import Viewer, public_gpus, viewer_for


def open_alerts() -> QuerySet[GpuAlert]:
    return GpuAlert.objects.filter(cleared_at__isnull=True).select_related("gpu__node").order_by("-raised_at")


def _alerts_by_gpu() -> dict[int, list[dict]]:
    alerts: dict[int, list[dict]] = defaultdict(list)
    for alert in open_alerts():
        alerts[alert.gpu_id].append({"kind": alert.kind, "message": alert.message})
    return alerts


def gpu_states_now(*, node: str | None = None) -> list[dict[str, Any]]:
    """Every GPU's latest values from the store, with holders and node status read fresh from the database."""
    now = time.time()
    targets, holders = lab_targets()
    if node is not None:
        targets = [target for target in targets if target.node == node]
    latest = store.read_latest()["gpus"]
    alerts = _alerts_by_gpu()
    return [
        stored_state(
            target,
            latest.get(target.key),
            holders=holders.get(target.gpu_id, []),
            alerts=alerts.get(target.gpu_id, []),
            now=now,
            stale_after_s=settings.TELEMETRY_STALE_AFTER_S,
        )
        for target in targets
    ]


def gpus_visible_to(user: User, *, node: str | None = None, viewer: Viewer | None = None) -> list[dict[str, Any]]:
    """The latest sample of every GPU, as this person may see it (see labs.telemetry.visibility)."""
    return public_gpus(gpu_states_now(node=node), viewer or viewer_for(user))


def node_last_hour(node: Node, *, now: dt.datetime | None = None) -> dict[int, list[GpuMinute]]:
    """Per GPU id, the node's one-minute buckets of the last hour, oldest first."""
    now = now or timezone.now()
    rows = GpuMinute.objects.filter(gpu__node=node, minute__gte=now - dt.timedelta(hours=1)).order_by("minute")
    by_gpu: dict[int, list[GpuMinute]] = defaultdict(list)
    for row in rows:
        by_gpu[row.gpu_id].append(row)
    return by_gpu


def node_gpus(user: User, node: Node, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """What the node page shows of its GPUs, as this person may see them.

    `gpus`: per GPU of the inventory, {"gpu", "live" (its record, or None), "charts" (its last hour)}; `alerts`: the
    node's open health alerts (admins only, else empty); `available`: how many of its GPUs the person could use now.
    """
    now = now or timezone.now()
    viewer = viewer_for(user)
    live = {gpu["index"]: gpu for gpu in gpus_visible_to(user, node=node.name, viewer=viewer)}
    history = node_last_hour(node, now=now)
    gpus = [
        {
            "gpu": gpu,
            "live": live.get(gpu.index),
            "charts": gpu_charts(history.get(gpu.pk, []), memory_mb=gpu.memory_mb, end=now),
        }
        for gpu in node.gpus.all()
    ]
    return {
        "gpus": gpus,
        "alerts": list(open_alerts().filter(gpu__node=node)) if viewer.is_admin else [],
        "available": sum(1 for gpu in live.values() if gpu["available"]),
    }


def telemetry_summary() -> dict[str, Any]:
    """Figures for /metrics: GPUs by live state, open alerts, running notebooks and jobs, the collector's pulse."""
    states = gpu_states_now()
    by_state = {"free": 0, "busy": 0, "stale": 0}
    for state in states:
        if state["stale"]:
            by_state["stale"] += 1
        elif state["holders"]:
            by_state["busy"] += 1
        else:
            by_state["free"] += 1
    alerts = dict(
        GpuAlert.objects.filter(cleared_at__isnull=True).values_list("kind").annotate(n=Count("id")).order_by()
    )
    running = dict(
        Allocation.objects.filter(ends_at__isnull=True, kind__in=[AllocationKind.NOTEBOOK, AllocationKind.JOB])
        .values_list("kind")
        .annotate(n=Count("ref", distinct=True))
        .order_by()
    )
    latest_at = store.read_latest()["at"]
    return {
        "gpus": by_state,
        "alerts": {kind: alerts.get(kind, 0) for kind in GpuAlertKind.values},
        "running": {kind: running.get(kind, 0) for kind in (AllocationKind.NOTEBOOK, AllocationKind.JOB)},
        "tick_age_s": None if latest_at is None else max(0.0, time.time() - latest_at),
        "dropped_total": store.dropped_total(),
    }


@dataclasses.dataclass(frozen=True)
class GpuUtil:
    """A GPU's utilisation in the latest sample, and whether that sample is fresh."""

    util_pct: float | None  # None: the sample had no figure
    fresh: bool  # sampled no more than TELEMETRY_STALE_AFTER_S before `now`


def gpu_util_of(pairs: Iterable[tuple[str, int]], *, now: dt.datetime) -> dict[tuple[str, int], GpuUtil]:
    """The latest utilisation of each (node name, GPU index) asked for, read from the store; a GPU with no stored
    sample is left out. For the notebooks' idle culling, which counts unknown or stale as busy."""
    latest = store.read_latest()["gpus"]
    found = {}
    for node, index in pairs:
        state = latest.get(gpu_key(node, index))
        if not state:
            continue
        sampled = parse_datetime(state.get("sampled_at") or "")
        fresh = sampled is not None and (now - sampled).total_seconds() <= settings.TELEMETRY_STALE_AFTER_S
        found[(node, index)] = GpuUtil(util_pct=state.get("util_pct"), fresh=fresh)
    return found
