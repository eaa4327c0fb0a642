"""Celery tasks of the job queue. Each takes ids, loads the rows and calls a service; each is safe to run twice.

Their names are jobs.enqueue's (services send them through it and never import this module).
"""

from __future__ import annotations

import logging

from celery import shared_task

from accounts.errors import BackendError
from jobs import enqueue
from jobs.idle import jobs_idle_upkeep
from jobs.services.dispatch import job_dispatch, job_stop, jobs_follow
from jobs.services.scheduling import scheduling_pass

log = logging.getLogger(__name__)


@shared_task(name=enqueue.SCHEDULE_PASS)
def schedule_pass() -> str:
    """One scheduling pass (beat tick, and after every submit, finish and cancel)."""
    report = scheduling_pass()
    # A pass that moved nothing is not news (the embedded run passes every few seconds): debug, not info.
    log.log(logging.INFO if report.started or report.preempted else logging.DEBUG, "scheduling pass: %s", report)
    return str(report)


@shared_task(name=enqueue.DISPATCH, bind=True, max_retries=8, default_retry_delay=10, acks_late=True)
def dispatch(self, job_id: int, attempt: int) -> str:
    """Start the attempt in the backend. A re-delivery after a crash finds the attempt there and only records it."""
    try:
        return job_dispatch(job_id=job_id, attempt=attempt)
    except BackendError as exc:
        log.warning("dispatch of job %s attempt %s failed (will retry): %s", job_id, attempt, exc)
        raise self.retry(exc=exc) from exc


@shared_task(name=enqueue.STOP, bind=True, max_retries=8, default_retry_delay=10, acks_late=True)
def stop(self, job_id: int, attempt: int, grace_s: int | None = None) -> str:
    """Stop the attempt (cancel or preemption): SIGTERM, the grace period, SIGKILL; the follower sees it go."""
    try:
        return job_stop(job_id=job_id, attempt=attempt, grace_s=grace_s)
    except BackendError as exc:
        if not exc.retryable:
            log.error("stop of job %s attempt %s failed: %s", job_id, attempt, exc)
            raise
        raise self.retry(exc=exc) from exc


@shared_task(name=enqueue.FOLLOW)
def follow() -> str:
    """Read the status of every placed attempt and move the rows along (beat, every JOBS_FOLLOW_INTERVAL_S)."""
    report = jobs_follow()
    log.log(logging.INFO if report.changed or report.errors else logging.DEBUG, "follow: %s", report)
    idle = jobs_idle_upkeep()
    log.log(logging.INFO if idle.warned or idle.stopped else logging.DEBUG, "idle GPUs: %s", idle)
    return f"{report}; idle GPUs: {idle}"


@shared_task(name="jobs.tasks.storage_measure", ignore_result=True)
def storage_measure() -> dict[str, int]:
    """What jobs and datasets hold on disk, for the usage pages (beat, every JOBS_STORAGE_MEASURE_S)."""
    from jobs.storage import storage_measure as measure

    return measure()
