"""Submitting, previewing and cancelling jobs.

A request is checked first (services/validation.py: every field, then who may use what); then quotas
(QuotaExceeded), counted with the person's row locked so that two submissions at once cannot both take the
last slot. Nothing is written unless every check passes.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.errors import Conflict, InvalidInput, QuotaExceeded
from accounts.models import User
from accounts.permissions import JOB_OWNER_ACTION, require_owner_or_admin
from accounts.prepared import Prepared
from accounts.quotas import QuotaLimits, effective_quota
from accounts.ratelimit import rate_limit_hit
from jobs import enqueue
from jobs.backends.base import SCRIPT_ARGV
from jobs.models import ACTIVE_STATES, Job, JobEvent, JobState, StopReason
from jobs.policy import QueuedJob
from jobs.selectors import template_for_use
from jobs.services.scheduling import Preview, preview, user_key
from jobs.services.templates import template_request
from jobs.services.transitions import job_request_stop, transition
from jobs.services.validation import JobRequest, validate_request
from jobs.services.waiting_words import formatter
from labs.budgets.services import budgets_guard
from labs.ledger import week_gpu_hours


def _check_quota(
    user: User, request: JobRequest, now: dt.datetime, *, tell: bool = True
) -> tuple[QuotaLimits, Decimal]:
    """Refuse what the person's limits do not allow; their limits and this week's GPU-hours otherwise (the dry run
    reuses them)."""
    limits = effective_quota(user)
    if request.total_gpus > limits.max_gpus_per_job:
        raise QuotaExceeded(
            ngettext(
                "You may use at most %(max)s GPU per job; this one asks for %(asked)s.",
                "You may use at most %(max)s GPUs per job; this one asks for %(asked)s.",
                limits.max_gpus_per_job,
            )
            % {"max": limits.max_gpus_per_job, "asked": request.total_gpus},
            limit="max_gpus_per_job",
            used=request.total_gpus,
            allowed=limits.max_gpus_per_job,
        )
    active = Job.objects.filter(owner=user, state__in=ACTIVE_STATES).count()
    if active >= limits.max_jobs:
        raise QuotaExceeded(
            _(
                "You have %(active)s jobs queued or running and your limit is %(max)s; wait for one to finish or"
                " cancel one."
            )
            % {"active": active, "max": limits.max_jobs},
            limit="max_jobs",
            used=active,
            allowed=limits.max_jobs,
        )
    used = week_gpu_hours(user, now=now)
    need = Decimal(request.total_gpus * request.max_runtime_s) / Decimal(3600)
    if used + need > limits.gpu_hours_week:
        left = max(limits.gpu_hours_week - used, Decimal(0))
        raise QuotaExceeded(
            _(
                "At its max runtime this job needs %(need)s GPU-hours; you have %(left)s of %(week)s left this week."
                " Ask for less time or fewer GPUs."
            )
            % {"need": f"{need:.1f}", "left": f"{left:.1f}", "week": f"{limits.gpu_hours_week:.0f}"},
            limit="gpu_hours_week",
            used=float(used),
            allowed=float(limits.gpu_hours_week),
            need=float(need),
        )
    # A budget it counts against (the person's, its course's: validate_request takes a course reservation's course
    # when none was named), used up and set to block, refuses it.
    budgets_guard(user=user, course=request.course, now=now, tell=tell)
    return limits, used


# Locks the person's row: one submission at a time per person, so max_jobs is counted right. Compiled once.
_LOCK_PERSON = Prepared(
    lambda pk: User.objects.select_for_update().filter(pk=pk).order_by().values_list("pk"), pk=User._meta.pk
)


def _with_template(user: User, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields of a submission from a course template (`template`: its id, `parameters`: NAME: value), filled in
    from it; the fields as they are otherwise. A template the person may not use is "no such template" (400)."""
    template_id = fields.pop("template", None)
    parameters = fields.pop("parameters", None)
    if template_id in (None, ""):
        if parameters not in (None, {}, ""):
            why = _("Parameters go with a template; give template too, or leave them out.")
            raise InvalidInput(why, fields={"parameters": why})
        return fields
    template = template_for_use(user, template_id)
    if template is None:
        why = _("No such template among your courses' templates.")
        raise InvalidInput(why, fields={"template": why})
    return template_request(template=template, parameters=parameters, fields=fields)


def job_submit(*, user: User, now: dt.datetime | None = None, resumed_from: Job | None = None, **fields: Any) -> Job:
    """Queue a job. Nothing is written unless every check passes; a scheduling pass follows the commit.

    `fields` are validate_request's: name, image, command or script, gpus, max_runtime_s, nodes, priority, reservation,
    env, datasets, course; or `template` and `parameters` (services/templates.py) in place of the program, image and
    sizes. The job comes back with the position and reason a dry run of the policy gives.
    """
    now = now or timezone.now()
    rate_limit_hit(user=user, action="job_submit", now=now)
    request = validate_request(user=user, now=now, **_with_template(user, fields))
    with transaction.atomic():
        _LOCK_PERSON.rows(user.pk)
        limits, used = _check_quota(user, request, now)
        job = Job.objects.create(
            owner=user,
            course=request.course,
            name=request.name,
            image=request.image,
            command=list(request.command),
            script=request.script,
            gpu_share=request.gpu_share,
            scratch=request.scratch,
            bulk=request.bulk,
            env=request.env,
            gpus_per_node=request.gpus_per_node,
            nodes=request.nodes,
            max_runtime_s=request.max_runtime_s,
            priority=request.priority,
            reservation=request.reservation,
            datasets=list(request.datasets),
            idle_ok_reason=request.idle_ok_reason,
            resumed_from=resumed_from,
            submitted_at=now,
            queued_since=now,
        )
        why = f"submitted, from the checkpoint of job {resumed_from.pk}" if resumed_from else "submitted"
        JobEvent.objects.create(job=job, at=now, from_state="", to_state=JobState.QUEUED, attempt=1, reason=why)
        queued = queued_from_request(job.pk, user, request, now)
        answer = preview(queued, now=now, limits={user.pk: limits}, used={user.pk: used})
        job.reason = answer.sentence if not answer.starts_now else "starting now"
        job.position = answer.position if not answer.starts_now else 1
        job.estimated_start = answer.estimated_start.replace(microsecond=0) if answer.estimated_start else None
        job.save(update_fields=["reason", "position", "estimated_start"])
        enqueue.schedule_pass_after_commit()
    return job


def queued_from_request(job_id: int | str, user: User, request: JobRequest, now: dt.datetime) -> QueuedJob:
    return QueuedJob(
        id=job_id,
        user=user_key(user.pk),
        gpus_per_node=request.gpus_per_node,
        max_runtime_s=float(request.max_runtime_s),
        submitted_at=now.timestamp(),
        nodes=request.nodes,
        priority_class=request.priority,
        reservation_id=request.reservation.pk if request.reservation else None,
        queued_since=now.timestamp(),
    )


def _program_problem(request: JobRequest) -> str | None:
    """Where the backend can tell before it runs (the local one: the program on the job's PATH), why it could not
    start; None otherwise. A cluster's images are not looked into: there the image's own programs decide."""
    if settings.JOBS_BACKEND != "local":
        return None
    from jobs.backends.local import LocalJobs

    return LocalJobs.program_problem(SCRIPT_ARGV if request.script else request.command, request.env)


def job_preview(*, user: User, now: dt.datetime | None = None, **fields: Any) -> Preview:
    """ "Will it start now?": the request checked as job_submit would (its image, its command or script too), then
    a dry run of the policy. Writes nothing."""
    now = now or timezone.now()
    rate_limit_hit(user=user, action="job_submit", now=now)
    request = validate_request(user=user, now=now, **_with_template(user, fields))
    if (problem := _program_problem(request)) is not None:
        return Preview(False, _("No: it would not start: %(why)s.") % {"why": problem})
    try:
        limits, used = _check_quota(user, request, now, tell=False)
    except QuotaExceeded as exc:
        return Preview(False, _("No: %(why)s") % {"why": exc.message}, help=exc.extra.get("help", ""))
    queued = queued_from_request("preview", user, request, now)
    return preview(queued, now=now, limits={user.pk: limits}, used={user.pk: used})


def job_cancel(*, user: User, job: Job, now: dt.datetime | None = None) -> Job:
    """Cancel: a queued job at once; a placed one is stopped (SIGTERM, grace, SIGKILL) and cancelled when gone."""
    now = now or timezone.now()
    require_owner_or_admin(user, job.owner_id, JOB_OWNER_ACTION)
    who = "its owner" if job.owner_id == user.pk else f"{user.username} (admin)"
    for _attempt in range(3):
        job = Job.objects.get(pk=job.pk)
        if job.is_finished:
            raise Conflict(f"This job is already {job.state}.")
        if job.stop_requested_at is not None and job.stop_reason == StopReason.CANCELLED:
            return job
        with transaction.atomic():
            if job.state == JobState.QUEUED:
                if transition(
                    job,
                    to=JobState.CANCELLED,
                    why=f"cancelled by {who} while queued",
                    now=now,
                    finished_at=now,
                    message=f"Cancelled by {who}.",
                    position=None,
                ):
                    enqueue.schedule_pass_after_commit()
                    return job
            elif job.stop_requested_at is not None:
                # Already being preempted: it will be cancelled instead of requeued.
                if Job.objects.filter(pk=job.pk, attempt=job.attempt, stop_reason=StopReason.PREEMPTED).update(
                    stop_reason=StopReason.CANCELLED, stop_note=f"cancelled by {who}", updated_at=now
                ):
                    job.stop_reason, job.stop_note = StopReason.CANCELLED, f"cancelled by {who}"
                    return job
            elif job_request_stop(
                job=job,
                why=StopReason.CANCELLED,
                note=f"cancelled by {who}",
                grace_s=settings.JOBS_STOP_GRACE_S,
                now=now,
            ):
                return job
    raise Conflict("The job changed while we cancelled it; try again.")


__all__ = [
    "JobRequest",
    "Preview",
    "formatter",
    "job_cancel",
    "job_preview",
    "job_submit",
    "validate_request",
]
