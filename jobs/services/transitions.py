"""The job's state machine: every move is a conditional UPDATE (`WHERE state = old AND attempt = n`) plus an event.

Workers, the scheduling pass, the follower and people cancelling all race on the same rows; the row count of
the conditional UPDATE decides who won, and the loser does nothing. A move that ends an attempt also closes
the attempt's entries in the ledger, in the same transaction.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.locale import said_to, speaking
from jobs import enqueue
from jobs.models import PLACED_STATES, Job, JobEvent, JobState, StopReason
from jobs.notices import job_moved
from labs.ledger import Ref, allocations_close

REASON_MAX = 500


def transition(
    job: Job, *, to: str, why: str, now: dt.datetime | None = None, attempt_to: int | None = None, **fields: Any
) -> bool:
    """Move `job` from the state and attempt it was read in to `to`; False if someone moved it first.

    On success the in-memory `job` is updated too, and an event records the move.
    """
    now = now or timezone.now()
    values = {"state": to, "updated_at": now, **fields}
    if attempt_to is not None:
        values["attempt"] = attempt_to
    with transaction.atomic():
        moved = Job.objects.filter(pk=job.pk, state=job.state, attempt=job.attempt).update(**values)
        if not moved:
            return False
        JobEvent.objects.create(
            job_id=job.pk,
            at=now,
            from_state=job.state,
            to_state=to,
            attempt=attempt_to or job.attempt,
            reason=why[:REASON_MAX],
        )
        requeued = to == JobState.QUEUED and attempt_to is not None
        for name, value in values.items():
            setattr(job, name, value)
        job_moved(job, to=to, why=why[:REASON_MAX], requeued=requeued)
    return True


def close_allocations(job_id: int, attempt: int, *, at: dt.datetime, reason: str = "") -> int:
    """End the attempt's open ledger entries (GPUs given back)."""
    return allocations_close(ref=Ref.job(job_id, attempt), at=at, reason=reason)


def _after_attempt(job: Job, now: dt.datetime) -> dict[str, Any]:
    """Fields that clear what belonged to the attempt that just ended."""
    return {
        "stop_reason": StopReason.NONE,
        "stop_note": "",
        "stop_requested_at": None,
        "stopping_until": None,
        "started_as_backfill": False,
    }


def _requeue(job: Job, *, why: str, reason: str, now: dt.datetime) -> bool:
    """The attempt is over but the job is not: back to the queue as the next attempt (it resumes from a checkpoint)."""
    attempt = job.attempt
    return transition(
        job,
        to=JobState.QUEUED,
        why=said_to(
            job.owner,
            gettext_lazy("attempt %(n)s %(why)s; queued again as attempt %(next)s"),
            n=attempt,
            why=why,
            next=attempt + 1,
        ),
        now=now,
        attempt_to=attempt + 1,
        queued_since=now,
        node_names=[],
        gpu_indices=[],
        started_at=None,
        running_at=None,
        reason=reason,
        position=None,
        **_after_attempt(job, now),
    )


def job_mark_running(*, job: Job, reason: str = "", now: dt.datetime | None = None) -> bool:
    now = now or timezone.now()
    if job.state != JobState.STARTING:
        return False
    where = ", ".join(job.node_names) or "its node"
    return transition(
        job,
        to=JobState.RUNNING,
        why=reason or said_to(job.owner, gettext_lazy("running on %(nodes)s"), nodes=where),
        now=now,
        running_at=now,
    )


def job_finish(
    *,
    job: Job,
    succeeded: bool,
    exit_code: int | None = None,
    message: str = "",
    now: dt.datetime | None = None,
) -> bool:
    """The attempt ended by itself (or could not be started): succeeded or failed, GPUs back to the ledger."""
    now = now or timezone.now()
    if job.state not in PLACED_STATES:
        return False
    to = JobState.SUCCEEDED if succeeded else JobState.FAILED
    # In the owner's words: the job page shows the events and the final message.
    if succeeded:
        reason = said_to(job.owner, gettext_lazy("finished (exit code 0)"))
    else:
        with speaking(job.owner):
            code = _("exit code %(code)s") % {"code": exit_code} if exit_code is not None else _("no exit code")
            reason = _("failed (%(code)s)") % {"code": code} + (f": {message}" if message else "")
    attempt = job.attempt
    with transaction.atomic():
        if not transition(
            job,
            to=to,
            why=reason,
            now=now,
            finished_at=now,
            exit_code=exit_code,
            message=message[:500],
            **_after_attempt(job, now),
        ):
            return False
        close_allocations(job.pk, attempt, at=now, reason=f"job {to}")
        enqueue.schedule_pass_after_commit()
    return True


def job_stop_done(*, job: Job, now: dt.datetime | None = None) -> bool:
    """An attempt that was asked to stop is gone: cancelled for good, or requeued as attempt + 1 if preempted."""
    now = now or timezone.now()
    if job.state not in PLACED_STATES or job.stop_requested_at is None:
        return False
    attempt = job.attempt
    with transaction.atomic():
        if job.stop_reason == StopReason.PREEMPTED:
            note = job.stop_note or "preempted"
            moved = _requeue(
                job,
                why=said_to(job.owner, gettext_lazy("preempted: %(note)s"), note=note),
                reason=said_to(job.owner, gettext_lazy("queued again after preemption")),
                now=now,
            )
        else:
            moved = transition(
                job,
                to=JobState.CANCELLED,
                why=job.stop_note or "cancelled",
                now=now,
                finished_at=now,
                message=job.stop_note[:500],
                **_after_attempt(job, now),
            )
        if not moved:
            return False
        close_allocations(job.pk, attempt, at=now, reason="job stopped")
        enqueue.schedule_pass_after_commit()
    return True


def job_lost(*, job: Job, why: str, now: dt.datetime | None = None) -> str:
    """The backend lost a placed attempt (its Job or process vanished): requeue it or fail it, as the policy says.

    A preemptible job below JOBS_LOST_MAX_ATTEMPTS goes back to the queue as the next attempt, as a preempted one
    does (it resumes from its checkpoint); any other fails with `why`. Returns "requeued", "failed" or "raced"."""
    from django.conf import settings

    now = now or timezone.now()
    if job.state not in PLACED_STATES:
        return "raced"
    if not job.preemptible or job.attempt >= settings.JOBS_LOST_MAX_ATTEMPTS:
        return "failed" if job_finish(job=job, succeeded=False, message=why, now=now) else "raced"
    attempt = job.attempt
    with transaction.atomic():
        if not _requeue(
            job,
            why=said_to(job.owner, gettext_lazy("lost: %(why)s"), why=why),
            reason=said_to(job.owner, gettext_lazy("queued again: the cluster lost its last attempt")),
            now=now,
        ):
            return "raced"
        close_allocations(job.pk, attempt, at=now, reason="job attempt lost")
        enqueue.schedule_pass_after_commit()
    return "requeued"


def job_request_stop(*, job: Job, why: str, note: str, grace_s: float, now: dt.datetime | None = None) -> bool:
    """Ask a placed attempt to stop (cancel or preemption); the stop task deletes it, the follower sees it go.

    Conditional on no stop having been asked for yet, so two askers send one stop.
    """
    now = now or timezone.now()
    moved = Job.objects.filter(
        pk=job.pk, state__in=PLACED_STATES, attempt=job.attempt, stop_requested_at__isnull=True
    ).update(
        stop_reason=why,
        stop_note=note[:300],
        stop_requested_at=now,
        stopping_until=now + dt.timedelta(seconds=grace_s),
        updated_at=now,
    )
    if not moved:
        return False
    job.stop_reason, job.stop_note, job.stop_requested_at = why, note[:300], now
    job.stopping_until = now + dt.timedelta(seconds=grace_s)
    enqueue.stop_after_commit(job.pk, job.attempt, int(grace_s))
    return True
