"""The lab's figures for /metrics: nodes, open ledger entries, live GPUs, alerts, running work, the collector's pulse.

portal/ops.py composes every app's into one scrape; each call reads the database (and the telemetry store) now,
so every web process answers the same.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from labs.budgets.selectors import budgets_in_force, course_gpu_hours_this_week, course_gpus_held
from labs.models import AllocationKind, NodeStatus
from labs.selectors import lab_summary, open_allocations_by_kind
from labs.telemetry.selectors import telemetry_summary


def register_metrics(registry: CollectorRegistry) -> None:
    """Add the lab's gauges to `registry`: the inventory and the ledger, then telemetry."""
    nodes = Gauge("portal_nodes", "Nodes of the lab, by status.", ["status"], registry=registry)
    summary = lab_summary()
    for status in NodeStatus.values:
        nodes.labels(status=status).set(summary[status])
    held = Gauge("portal_allocations_open", "Ledger entries still holding a GPU, by kind.", ["kind"], registry=registry)
    by_kind = open_allocations_by_kind()
    for kind in AllocationKind.values:
        held.labels(kind=kind).set(by_kind.get(kind, 0))
    _telemetry(registry)
    _courses_and_budgets(registry)


def _telemetry(registry: CollectorRegistry) -> None:
    summary = telemetry_summary()
    gpus = Gauge("portal_gpus", "GPUs by live state (stale: no sample lately).", ["state"], registry=registry)
    for state, count in summary["gpus"].items():
        gpus.labels(state=state).set(count)
    alerts = Gauge("portal_gpu_alerts_open", "Open GPU health alerts, by kind.", ["kind"], registry=registry)
    for kind, count in summary["alerts"].items():
        alerts.labels(kind=kind).set(count)
    running = Gauge("portal_running", "Notebooks and jobs holding GPUs now.", ["kind"], registry=registry)
    for kind, count in summary["running"].items():
        running.labels(kind=kind).set(count)
    age = Gauge(
        "portal_telemetry_tick_age_seconds",
        "Seconds since the telemetry collector last stored a tick.",
        registry=registry,
    )
    age.set(summary["tick_age_s"] if summary["tick_age_s"] is not None else float("nan"))
    dropped = Counter(
        "portal_telemetry_samples_dropped", "GPU samples dropped as impossible or unknown.", registry=registry
    )
    dropped.inc(summary["dropped_total"])


def _courses_and_budgets(registry: CollectorRegistry) -> None:
    """GPU-hours per course (this week; GPUs held now) and each budget's use, for the Grafana board in deploy/."""
    week = Gauge(
        "portal_course_gpu_hours_week",
        "GPU-hours of each course in term since Monday 00:00 (lab time), notebooks and jobs.",
        ["course"],
        registry=registry,
    )
    for code, used in course_gpu_hours_this_week().items():
        week.labels(course=code).set(float(used))
    held = Gauge(
        "portal_course_gpus_held", "GPUs each course's work holds now (shares added).", ["course"], registry=registry
    )
    for code, share in course_gpus_held().items():
        held.labels(course=code).set(float(share))
    labels = ["budget", "name", "scope"]
    allowed = Gauge(
        "portal_budget_gpu_hours", "GPU-hours of each budget in force, per period.", labels, registry=registry
    )
    used = Gauge(
        "portal_budget_used_gpu_hours", "GPU-hours used of each budget this period.", labels, registry=registry
    )
    ratio = Gauge(
        "portal_budget_used_ratio", "Share of each budget used this period (1 = all).", labels, registry=registry
    )
    for use in budgets_in_force():
        names = {"budget": str(use.budget.pk), "name": use.budget.name, "scope": use.budget.scope_label}
        allowed.labels(**names).set(float(use.budget.gpu_hours))
        used.labels(**names).set(float(use.used_gpu_hours))
        ratio.labels(**names).set(float(use.used_gpu_hours / use.budget.gpu_hours))
