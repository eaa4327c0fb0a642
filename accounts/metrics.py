"""The people side's figures for /metrics: portal/ops.py composes every app's into one scrape."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from accounts.selectors import people_by_role


def register_metrics(registry: CollectorRegistry) -> None:
    """Add the accounts' gauges to `registry`, read from the database now."""
    users = Gauge("portal_users", "People with an active account, by role.", ["role"], registry=registry)
    for role, count in people_by_role().items():
        users.labels(role=role).set(count)
