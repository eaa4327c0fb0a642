"""Between the database and the backend: start an attempt, follow it, stop it. Every step is safe to repeat.

The backend names an attempt by (job id, attempt), so a dispatch that runs again after its worker died finds
the first one's attempt (AlreadyExists is success) instead of starting a second one; what the database lacks,
the next look at the backend's status fills in.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.conf import settings
from django.utils import timezone

from accounts.errors import BackendError
from accounts.selectors import role_of
from jobs import enqueue
from jobs.backends import JobBackend, JobStatus, get_job_backend
from jobs.backends.base import SCRIPT_ARGV, DatasetVolume, JobRef, JobSpec, LogPage
from jobs.models import PLACED_STATES, Dataset, Job, JobState, StopReason
from jobs.services.transitions import job_finish, job_lost, job_mark_running, job_request_stop, job_stop_done
from labs.ledger import refs_of
from labs.models import AllocationKind

log = logging.getLogger(__name__)

# A starting attempt the backend has never heard of this long after placement: its dispatch was lost; send again.
REDISPATCH_AFTER_S = 30
# A stop not done this long after its grace period: ask again.
RESTOP_AFTER_S = 60


def job_ref(job: Job, attempt: int | None = None) -> JobRef:
    return JobRef(job.pk, attempt or job.attempt)


def job_spec(job: Job) -> JobSpec:
    datasets = tuple(
        DatasetVolume(name=d.name, claim=d.claim, local_path=d.local_path)
        for d in Dataset.objects.filter(name__in=job.datasets).order_by("name")
    )
    return JobSpec(
        job_id=job.pk,
        attempt=job.attempt,
        image=job.image,
        command=SCRIPT_ARGV if job.script else tuple(job.command),
        script=job.script,
        gpu_share=job.gpu_share,
        scratch=job.scratch,
        bulk=job.bulk,
        owner_role=role_of(job.owner),
        gpus_per_node=job.gpus_per_node,
        max_runtime_s=job.max_runtime_s,
        nodes=job.nodes,
        node_names=tuple(job.node_names),
        gpu_indices=tuple(tuple(indices) for indices in job.gpu_indices),
        env=dict(job.env),
        display_name=job.name,
        owner=job.owner.username,
        owner_id=job.owner_id,
        course=job.course.code if job.course_id else "",
        datasets=datasets,
        resume_from=job.resumed_from_id,
    )


def _exit_code(status: JobStatus) -> int | None:
    codes = status.exit_codes
    if not codes:
        return None
    failed = [code for code in codes if code != 0]
    return failed[0] if failed else 0


def job_observe(*, job: Job, status: JobStatus, now: dt.datetime | None = None) -> str:
    """Bring a placed attempt's row in line with what the backend says of it. Returns what it did."""
    now = now or timezone.now()
    if job.state not in PLACED_STATES:
        return "not placed"
    if job.stop_requested_at is not None:
        if status.finished or status.phase == "missing":
            return "stopped" if job_stop_done(job=job, now=now) else "raced"
        return "stopping"
    if status.phase == "running" and job.state == JobState.STARTING:
        return "started" if job_mark_running(job=job, now=now) else "raced"
    if status.finished:
        if job.state == JobState.STARTING:
            job_mark_running(job=job, now=now, reason="ran (seen only when it had finished)")
        succeeded = status.phase == "succeeded"
        ok = job_finish(
            job=job, succeeded=succeeded, exit_code=_exit_code(status), message="" if succeeded else status.message
        )
        return status.phase if ok else "raced"
    if status.phase == "missing" and job.state == JobState.RUNNING:
        outcome = job_lost(job=job, why="the backend lost the attempt (its Job or process is gone)", now=now)
        return "raced" if outcome == "raced" else f"lost, {outcome}"
    return status.phase


def job_dispatch(*, job_id: int, attempt: int, backend: JobBackend | None = None) -> str:
    """Create the attempt in the backend (idempotent) and record what the backend says. Raises retryable errors."""
    job = Job.objects.select_related("owner", "course").filter(pk=job_id).first()
    if job is None or job.attempt != attempt or job.state != JobState.STARTING or job.stop_requested_at:
        return "nothing to do"
    backend = backend or get_job_backend()
    try:
        status = backend.create(job_spec(job))
    except BackendError as exc:
        if exc.retryable:
            raise
        job_finish(job=job, succeeded=False, message=f"could not be started: {exc}"[:500])
        return "refused"
    return job_observe(job=job, status=status)


def job_stop(*, job_id: int, attempt: int, grace_s: int | None = None, backend: JobBackend | None = None) -> str:
    """Delete the attempt in the backend (SIGTERM, grace, SIGKILL; idempotent) and record it if it is gone."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job.attempt != attempt or job.state not in PLACED_STATES or job.stop_requested_at is None:
        return "nothing to do"
    backend = backend or get_job_backend()
    ref = job_ref(job)
    backend.delete(ref, grace_s=grace_s)
    return job_observe(job=job, status=backend.status(ref))


@dataclasses.dataclass
class FollowReport:
    seen: int = 0
    changed: dict[str, int] = dataclasses.field(default_factory=dict)
    errors: int = 0

    def __str__(self) -> str:
        moves = ", ".join(f"{k} {v}" for k, v in sorted(self.changed.items())) or "no changes"
        return f"{self.seen} placed jobs: {moves}; {self.errors} backend errors"


def jobs_follow(*, backend: JobBackend | None = None, now: dt.datetime | None = None) -> FollowReport:
    """Read every placed attempt's status from the backend and move its row along; resend lost work."""
    now = now or timezone.now()
    backend = backend or get_job_backend()
    report = FollowReport()
    for job in Job.objects.filter(state__in=PLACED_STATES).order_by("pk"):
        report.seen += 1
        try:
            status = backend.status(job_ref(job))
        except BackendError as exc:
            report.errors += 1
            log.warning("status of job %s failed: %s", job.pk, exc)
            continue
        outcome = job_observe(job=job, status=status, now=now)
        if outcome == "missing" and job.state == JobState.STARTING and not job.stop_requested_at:
            if job.started_at and (now - job.started_at).total_seconds() > REDISPATCH_AFTER_S:
                enqueue.dispatch_again(job.pk, job.attempt)
                outcome = "redispatched"
        elif (
            outcome == "stopping"
            and job.stopping_until is not None
            and (now - job.stopping_until).total_seconds() > RESTOP_AFTER_S
        ):
            enqueue.stop_again(job.pk, job.attempt)
            outcome = "stop resent"
        if outcome not in ("pending", "running", "stopping"):
            report.changed[outcome] = report.changed.get(outcome, 0) + 1
    return report


def jobs_preempt_for_allocations(*, allocation_ids: list[int], reason: str) -> list[int]:
    """The lab ended these ledger entries (a reservation's window began on their nodes): stop and requeue the jobs.

    The attempt goes back to the queue as attempt + 1 once it is gone; the tick has already given the GPUs back.
    """
    attempts = {
        (ref.holder_id, ref.attempt)
        for ref in refs_of(allocation_ids, kind=AllocationKind.JOB)
        if ref.holder_id is not None and ref.attempt is not None
    }
    stopped = []
    for job_id, attempt in sorted(attempts):
        job = Job.objects.filter(pk=job_id, attempt=attempt, state__in=PLACED_STATES).first()
        if job is None:
            continue
        if job_request_stop(
            job=job,
            why=StopReason.PREEMPTED,
            note=reason or "its node is reserved now",
            grace_s=settings.JOBS_PREEMPT_GRACE_S,
        ):
            stopped.append(job.pk)
    return stopped


def job_logs(
    *,
    job: Job,
    attempt: int | None = None,
    rank: int = 0,
    tail_lines: int | None = None,
    offset: int | None = None,
    limit_bytes: int | None = None,
) -> LogPage:
    """A page of the output of one rank of an attempt (the current one by default); empty before it started.

    The end of the log by default, its last `tail_lines` lines, or `limit_bytes` from byte `offset`; never more
    than JOBS_LOG_RESPONSE_MAX_BYTES, whatever was asked (the page says when that cut it).
    """
    attempt = attempt or job.attempt
    if job.state == JobState.QUEUED and attempt == job.attempt:
        return LogPage()
    return get_job_backend().logs(
        job_ref(job, attempt), rank=rank, tail_lines=tail_lines, offset=offset, limit_bytes=limit_bytes
    )
