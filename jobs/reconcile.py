"""The jobs' part of the reconciler (labs/reconcile.py) and of the ledger check (labs/ledger_check.py), registered
in JobsConfig.ready() since labs never imports jobs.

- A job attempt holds its ledger entries while it is starting or running; a finished job's, and an attempt the job
  has moved on from (requeued), are over: the check reports them and the reconciler closes them when they ended.
- A Job the backend runs that the portal does not know (no such job, or not its current placed attempt) is
  stopped once it is RECONCILE_GRACE_S old and the job row has not moved for as long. Only this instance's Jobs are
  listed (`list_running`: the portal's labels and PORTAL_INSTANCE_ID), so someone else's are never touched.
- A placed attempt whose Job vanished (running, or starting for longer than the grace) is requeued or failed as
  `job_lost` says (JOBS_LOST_MAX_ATTEMPTS); one that was being stopped is recorded as stopped.
- The local backend's files are not kept for ever: the work dirs of attempts that finished more than
  JOBS_LOCAL_KEEP_DAYS ago, and the checkpoints of jobs over for good as long (or of jobs that no longer exist), are
  removed; logs stay. (On the cluster, JOBS_TTL_AFTER_FINISHED_S removes finished Jobs and their pods.)
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.utils import timezone

from accounts.errors import BackendError
from jobs.backends import get_job_backend
from jobs.models import FINISHED_STATES, PLACED_STATES, Job, JobEvent, JobState
from jobs.outputs import outputs_purge_notices
from jobs.services.dispatch import job_ref
from jobs.services.transitions import job_lost, job_stop_done
from labs.ledger import Ref
from labs.ledger_check import FINISHED, GONE, LIVE, Holder, register_holder_kind
from labs.models import AllocationKind
from labs.reconcile import Action, register_step

LOST = "its Job vanished from the cluster"
NEVER_STARTED = "its Job never appeared in the cluster"


# --- The ledger check's judge of job attempts ----------------------------------------------------------------------


def judge_attempts(refs: list[Ref], now: dt.datetime) -> dict[Ref, Holder]:
    jobs = Job.objects.in_bulk({ref.holder_id for ref in refs if ref.holder_id is not None})
    moved_on: dict[tuple[int, int], dt.datetime] = {}
    for job_id, attempt, at in JobEvent.objects.filter(job_id__in=jobs).values_list("job_id", "attempt", "at"):
        for earlier in range(1, attempt):
            key = (job_id, earlier)
            if key not in moved_on or at < moved_on[key]:
                moved_on[key] = at  # the first event of a later attempt: when this one was over
    judged = {}
    for ref in refs:
        job = jobs.get(ref.holder_id)
        if job is None or ref.attempt is None:
            judged[ref] = Holder(GONE, "no such job")
            continue
        describe = f"job {job.pk} attempt {ref.attempt} ({job.state if ref.attempt == job.attempt else 'superseded'})"
        if ref.attempt == job.attempt and job.state in PLACED_STATES:
            judged[ref] = Holder(LIVE, describe)
        elif ref.attempt == job.attempt and job.state in FINISHED_STATES:
            judged[ref] = Holder(FINISHED, describe, job.finished_at)
        elif ref.attempt < job.attempt:
            judged[ref] = Holder(FINISHED, describe, moved_on.get((job.pk, ref.attempt)))
        else:
            judged[ref] = Holder(GONE, f"{describe}: the attempt is not placed")
    return judged


def note_closed(ref: Ref, at: dt.datetime, sentence: str) -> None:
    """The reconciler closed an attempt's entries: the job's events say so."""
    job = Job.objects.filter(pk=ref.holder_id).first()
    if job is not None:
        JobEvent.objects.create(
            job=job, at=timezone.now(), from_state=job.state, to_state=job.state, attempt=ref.attempt or job.attempt,
            reason=f"reconciler: {sentence}"[:500],
        )  # fmt: skip


# --- Steps ---------------------------------------------------------------------------------------------------------


def _older(moment: dt.datetime | float | None, now: dt.datetime) -> bool:
    if moment is None:
        return False
    if isinstance(moment, float | int):
        moment = dt.datetime.fromtimestamp(moment, dt.UTC)
    return (now - moment).total_seconds() >= settings.RECONCILE_GRACE_S


def stop_unknown_attempts(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    backend = get_job_backend()
    running = backend.list_running()  # listed first: a row read after it has at least been placed
    jobs = Job.objects.in_bulk({ref.job_id for ref in running})
    actions = []
    for ref in running:
        job = jobs.get(ref.job_id)
        if job is not None and job.attempt == ref.attempt and job.state in PLACED_STATES:
            continue
        if not _older(ref.created_at, now) or (job is not None and not _older(job.updated_at, now)):
            continue
        why = "no such job" if job is None else f"the job is {job.state} at attempt {job.attempt}"
        sentence = f"stopped {ref.name}, which the portal does not run ({why})"
        if dry_run:
            actions.append(Action("unknown_job", ref.name, sentence, done=False))
            continue
        backend.delete(ref, grace_s=settings.JOBS_STOP_GRACE_S)
        if job is not None:
            JobEvent.objects.create(
                job=job, at=now, from_state=job.state, to_state=job.state, attempt=ref.attempt,
                reason=f"reconciler: attempt {ref.attempt} was still running in the cluster; stopped",
            )  # fmt: skip
        actions.append(Action("unknown_job", ref.name, sentence))
    return actions


def heal_vanished_attempts(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    backend = get_job_backend()
    actions = []
    errors = []
    for job in Job.objects.filter(state__in=PLACED_STATES).order_by("pk"):
        try:
            status = backend.status(job_ref(job))
        except BackendError as exc:  # one job's status failing must not hide the others'
            errors.append(exc)
            continue
        if status.phase != "missing":
            continue
        target = f"job:{job.pk}#{job.attempt}"
        if job.stop_requested_at is not None:
            sentence = f"recorded job {job.pk} attempt {job.attempt} as stopped: it was being stopped and is gone"
            if dry_run:
                actions.append(Action("lost_job", target, sentence, done=False))
            elif job_stop_done(job=job, now=now):
                actions.append(Action("lost_job", target, sentence))
            continue
        if job.state == JobState.STARTING and not _older(job.started_at, now):
            continue  # its dispatch may still be on its way (the follower sends it again)
        why = LOST if job.state == JobState.RUNNING else NEVER_STARTED
        if dry_run:
            actions.append(Action("lost_job", target, f"would requeue or fail job {job.pk}: {why}", done=False))
            continue
        attempt = job.attempt
        outcome = job_lost(job=job, why=why, now=now)
        if outcome != "raced":
            actions.append(Action("lost_job", target, f"{outcome} job {job.pk} (attempt {attempt}): {why}"))
    if errors and not actions:
        raise errors[0]
    return actions


def expire_local_files(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    backend = get_job_backend()
    if backend.name != "local":
        return []
    days = settings.JOBS_LOCAL_KEEP_DAYS
    cutoff = now - dt.timedelta(days=days)
    held = backend.checkpoint_jobs()
    rows = Job.objects.filter(pk__in=held).values_list("pk", "state", "finished_at")
    finished = {pk: at for pk, state, at in rows if state in FINISHED_STATES and at is not None}
    known = {pk for pk, _, _ in rows}
    over = [
        job_id
        for job_id, changed in held.items()
        if (job_id not in known and changed < cutoff.timestamp()) or finished.get(job_id, now) < cutoff
    ]
    gone = backend.expire(before=cutoff.timestamp(), jobs_over=over, dry_run=dry_run)
    sentence = f"removed {{}}: over for more than {days} day{'s' if days != 1 else ''} (JOBS_LOCAL_KEEP_DAYS)"
    return [Action("expired_files", str(path), sentence.format(path), done=not dry_run) for path in gone]


register_holder_kind(AllocationKind.JOB, judge_attempts, on_closed=note_closed)
register_step("jobs-unknown", stop_unknown_attempts, order=10)
register_step("jobs-vanished", heal_vanished_attempts, order=20)


def notify_outputs_purge(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    """Before expire_local_files removes a finished job's outputs, its owner is told (JOBS_OUTPUTS_NOTICE_DAYS)."""
    if dry_run or get_job_backend().name != "local":
        return []
    sent = outputs_purge_notices(now=now)
    return [Action("outputs_notice", "jobs", f"told {sent} owner(s) their job outputs go soon")] if sent else []


register_step("jobs-outputs-notice", notify_outputs_purge, order=29)
register_step("jobs-expire-local", expire_local_files, order=30)
