"""How well a holder used its GPUs: one HolderEfficiency row per job attempt or notebook session, from the
telemetry's one-minute history (`GpuMinute`) over the holder's ledger entries.

- mean utilisation: the minutes' average utilisation, weighted by the time held in each minute (and the share);
- p95 utilisation: the 95th percentile of the held minutes' averages;
- peak memory: the highest memory use seen in a held minute (the GPU's: a shared GPU's memory is everyone's);
- energy (Wh): each held minute's average power × the seconds held in it × the share, summed;
- idle GPU-hours: share × time held in minutes whose average utilisation is under USAGE_IDLE_UTIL_PCT.

A minute without telemetry counts in GPU-hours (the ledger's) but in none of the rest; `telemetry_minutes` says how
many had it. The RTX 4090 has no DCGM profiling metrics: utilisation (DCGM_FI_DEV_GPU_UTIL), memory and power are
what there is. Written when the holder ends (the ledger's `holders_closed` signal, after commit), refreshed for
running holders and for those that ended before their last minute was written (Celery beat, labs/usage/tasks.py).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from labs.ledger import Ref
from labs.models import Allocation, AllocationKind, GpuMinute, HolderEfficiency
from labs.usage.accounting import Period, total_seconds

log = logging.getLogger("labs.usage")
MINUTE = dt.timedelta(minutes=1)
MEASURED = (AllocationKind.JOB, AllocationKind.NOTEBOOK)


def p95(values: list[float]) -> float | None:
    """The 95th percentile by nearest rank (the ceil(0.95 n)-th smallest, in integers: no float rounding)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, (95 * len(ordered) + 99) // 100 - 1)]


def efficiency_compute(*, ref: Ref, now: dt.datetime | None = None) -> HolderEfficiency | None:
    """Compute (or recompute) the holder's row; None when the ledger has no entry of it or it is no job/notebook."""
    if ref.kind not in MEASURED:
        return None
    now = now or timezone.now()
    entries = list(Allocation.objects.filter(kind=ref.kind, ref=ref.key).select_related("gpu"))
    if not entries:
        return None
    started = min(entry.starts_at for entry in entries)
    open_ = any(entry.ends_at is None for entry in entries)
    ended = None if open_ else max(entry.ends_at for entry in entries)
    until = ended or now
    seconds = total_seconds(
        Allocation.objects.filter(kind=ref.kind, ref=ref.key), Period(start=started, end=until, now=now)
    )
    threshold = settings.USAGE_IDLE_UTIL_PCT
    util_weighted = util_weight = energy_j = idle_s = 0.0
    per_minute: list[float] = []
    peak_mem: float | None = None
    minutes_seen = 0
    for entry in entries:
        start, end = entry.starts_at, min(entry.ends_at or now, now)
        if end <= start:
            continue
        share = float(entry.share)
        first = start.replace(second=0, microsecond=0)
        minutes = GpuMinute.objects.filter(gpu_id=entry.gpu_id, minute__gte=first, minute__lt=end).values_list(
            "minute", "util_avg", "mem_used_max_mb", "power_avg_w"
        )
        for minute, util, mem, power in minutes.iterator(chunk_size=2000):
            held = (min(minute + MINUTE, end) - max(minute, start)).total_seconds()
            if held <= 0:
                continue
            minutes_seen += 1
            if util is not None:
                util_weighted += util * held * share
                util_weight += held * share
                per_minute.append(util)
                if util < threshold:
                    idle_s += held * share
            if mem is not None:
                peak_mem = mem if peak_mem is None else max(peak_mem, mem)
            if power is not None:
                energy_j += power * held * share
    node_id = entries[0].gpu.node_id
    values = {
        "holder_kind": ref.kind,
        "holder_id": ref.holder_id,
        "attempt": ref.attempt,
        "user_id": entries[0].user_id,
        "course_id": entries[0].course_id,
        "node_id": node_id,
        "started_at": started,
        "ended_at": ended,
        "gpu_hours": seconds / 3600,
        "mean_util_pct": round(util_weighted / util_weight, 2) if util_weight else None,
        "p95_util_pct": p95(per_minute),
        "peak_mem_mb": peak_mem,
        "energy_wh": round(energy_j / 3600, 3) if minutes_seen else None,
        "idle_gpu_hours": idle_s / 3600,
        "telemetry_minutes": minutes_seen,
        "computed_at": now,
    }
    with transaction.atomic():
        row, _ = HolderEfficiency.objects.update_or_create(holder_ref=ref.key, defaults=values)
    return row


def on_holders_closed(sender, *, refs, at=None, **kwargs) -> None:
    """The ledger closed these holders (after commit): compute their rows. Never lets a failure reach the closer."""
    for ref in refs:
        if ref.kind not in MEASURED:
            continue
        try:
            efficiency_compute(ref=ref)
        except Exception:  # the refresh computes it again; the closer's work is done and must not fail for this
            log.exception("usage: could not compute the efficiency of %s", ref)


def holders_to_refresh(*, now: dt.datetime, limit: int = 500) -> list[Ref]:
    """Running holders (long runners), and holders ended in the last USAGE_EFFICIENCY_DAYS whose row is missing or
    was computed before their last minute could be written."""
    since = now - dt.timedelta(days=settings.USAGE_EFFICIENCY_DAYS)
    # Ordered by the holder only: the model's ordering (starts_at) would make DISTINCT keep one row per GPU entry.
    running = Allocation.objects.filter(kind__in=MEASURED, ends_at__isnull=True).order_by("kind", "ref")
    refs = {Ref(kind, key) for kind, key in running.values_list("kind", "ref").distinct()[:limit]}
    ended = (
        Allocation.objects.filter(kind__in=MEASURED, ends_at__gte=since, ends_at__lte=now)
        .values_list("kind", "ref", "ends_at")
        .order_by("-ends_at")
    )
    candidates = {}
    for kind, key, ends_at in ended[: limit * 4]:
        candidates.setdefault(key, (kind, ends_at))
    computed = dict(
        HolderEfficiency.objects.filter(holder_ref__in=list(candidates)).values_list("holder_ref", "computed_at")
    )
    settle = MINUTE * 2  # the collector writes a minute a few seconds after it ends
    for key, (kind, ends_at) in candidates.items():
        at = computed.get(key)
        if at is None or (at < ends_at + settle <= now):
            refs.add(Ref(kind, key))
    return sorted(refs, key=str)[: limit * 2]


def efficiency_refresh(*, now: dt.datetime | None = None) -> int:
    now = now or timezone.now()
    done = 0
    for ref in holders_to_refresh(now=now):
        if efficiency_compute(ref=ref, now=now) is not None:
            done += 1
    return done
