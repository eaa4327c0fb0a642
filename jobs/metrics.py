"""Training jobs' figures for /metrics: jobs by state, and how long the queue makes people wait.

portal/ops.py composes every app's into one scrape; the numbers are read from the database now (jobs/selectors.py).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge

from jobs.models import JobState
from jobs.selectors import job_counts_by_state, queue_waits


def register_metrics(registry: CollectorRegistry) -> None:
    """Add the jobs' gauges to `registry`."""
    jobs = Gauge("portal_jobs", "Training jobs by state.", ["state"], registry=registry)
    by_state = job_counts_by_state()
    for state in JobState.values:
        jobs.labels(state=state).set(by_state.get(state, 0))
    waits = Gauge(
        "portal_job_queue_wait_seconds",
        "Queue waits: the oldest job still queued, and the mean wait of attempts that started in the last hour.",
        ["stat"],
        registry=registry,
    )
    for stat, seconds in queue_waits().items():
        waits.labels(stat=stat).set(seconds)
