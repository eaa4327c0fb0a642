"""What a job's owner is told (accounts.notify): it started, succeeded, failed, was preempted and queued again, or
waits much longer than its estimate. Called by the state machine (jobs/services/transitions.py) inside the move's
transaction, so a move that loses its race or rolls back tells nobody."""

from __future__ import annotations

import datetime as dt

from django.conf import settings

from accounts.models import User
from accounts.notify import notify
from jobs.models import Job, JobState

EVENTS = {JobState.RUNNING: "job.started", JobState.SUCCEEDED: "job.succeeded", JobState.FAILED: "job.failed"}


def _context(job: Job, detail: str = "") -> dict:
    return {"name": job.name, "id": job.pk, "attempt": job.attempt, "detail": detail}


def job_moved(job: Job, *, to: str, why: str, requeued: bool) -> None:
    """The job moved to `to` (`requeued`: its attempt ended and it is queued again)."""
    if requeued:
        event, detail = "job.preempted", why
    elif to in EVENTS:
        event = EVENTS[to]
        detail = ", ".join(job.node_names or []) if to == JobState.RUNNING else why
    else:
        return
    notify([User.objects.get(pk=job.owner_id)], event, _context(job, detail))


def stuck(job: Job, *, previous_estimate: dt.datetime | None, now: dt.datetime) -> bool:
    """Still queued NOTIFY_STUCK_FACTOR times as long as its last estimate said, and not told yet this attempt."""
    if previous_estimate is None or job.stuck_told_attempt >= job.attempt or now <= previous_estimate:
        return False
    expected = max((previous_estimate - job.queued_since).total_seconds(), 60.0)
    return (now - job.queued_since).total_seconds() >= settings.NOTIFY_STUCK_FACTOR * expected


def jobs_tell_stuck(jobs: list[Job]) -> None:
    """Tell each owner once per attempt (the caller saves `stuck_told_attempt`)."""
    owners = User.objects.in_bulk({job.owner_id for job in jobs})
    for job in jobs:
        job.stuck_told_attempt = job.attempt
        notify([owners.get(job.owner_id)], "job.stuck", _context(job, job.reason))
