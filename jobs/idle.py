"""Idle GPUs in batch jobs, as Princeton's job_defense_shield and dstack's utilisation policy do it: a running job
whose GPUs all stay under JOBS_IDLE_GPU_PCT for JOBS_IDLE_GPU_WARN_S is warned (a notice to its owner), and after
JOBS_IDLE_GPU_ACTION_S it is cancelled or requeued (JOBS_IDLE_GPU_ACTION: cancel, requeue or off).

A job submitted with an `idle_ok_reason` is exempt (it said why: CPU-bound preprocessing, a debugger). A GPU with
no fresh sample counts as busy, as the notebooks' idle culling counts it (labs.notebooks.upkeep): missing telemetry
never stops anyone's job. Idle is measured from the later of the attempt's start of running and the last time any
of its GPUs was seen busy (`Job.gpu_busy_at`), so each attempt starts with a clean slate. Runs on the follow beat.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from accounts.services import notice_send
from jobs.models import Job, JobState, StopReason
from jobs.services.transitions import job_request_stop
from labs.telemetry.selectors import GpuUtil, gpu_util_of


@dataclasses.dataclass
class IdleReport:
    checked: int = 0
    warned: int = 0
    stopped: int = 0

    def __str__(self) -> str:
        return f"checked {self.checked}, warned {self.warned}, stopped {self.stopped}"


def _pairs(job: Job) -> list[tuple[str, int]]:
    return [(node, index) for node, indices in zip(job.node_names, job.gpu_indices, strict=False) for index in indices]


def _busy(job: Job, utils: dict[tuple[str, int], GpuUtil]) -> bool:
    """Is any of the job's GPUs busy now? Unknown (no fresh sample) counts as busy."""
    pairs = _pairs(job)
    if not pairs:
        return True
    for pair in pairs:
        util = utils.get(pair)
        if util is None or not util.fresh or util.util_pct is None or util.util_pct >= settings.JOBS_IDLE_GPU_PCT:
            return True
    return False


def _minutes(seconds: float) -> int:
    return max(1, round(seconds / 60))


def _tell(job: Job, text: str, ref: str) -> int:
    return notice_send(user=job.owner, text=text, ref=ref, level="warning")


def _language(job: Job) -> str:
    return job.owner.language or settings.LANGUAGE_CODE


def jobs_idle_upkeep(*, now: dt.datetime | None = None) -> IdleReport:
    """One look at every running job's GPUs: note the busy ones, warn the idle ones, stop those idle too long."""
    now = now or timezone.now()
    report = IdleReport()
    action = settings.JOBS_IDLE_GPU_ACTION
    running = list(Job.objects.filter(state=JobState.RUNNING, stop_requested_at__isnull=True).select_related("owner"))
    utils = gpu_util_of([pair for job in running for pair in _pairs(job)], now=now)
    warn_after = dt.timedelta(seconds=settings.JOBS_IDLE_GPU_WARN_S)
    act_after = dt.timedelta(seconds=settings.JOBS_IDLE_GPU_ACTION_S)
    busy = [job.pk for job in running if job.idle_ok_reason or _busy(job, utils)]
    Job.objects.filter(pk__in=busy).update(gpu_busy_at=now)  # one UPDATE a look, however many run
    report.checked = len(running)
    for job in running:
        if job.pk in busy:
            continue
        since = max(filter(None, (job.gpu_busy_at, job.running_at, job.started_at)), default=now)
        idle_for = now - since
        ref = f"job:{job.pk}#{job.attempt}:idle:{int(since.timestamp())}"
        if action != "off" and idle_for >= act_after:
            requeue = action == "requeue"
            with translation.override(_language(job)):
                note = _("its GPUs were idle (under %(pct)s %%) for %(min)s minutes") % {
                    "pct": settings.JOBS_IDLE_GPU_PCT,
                    "min": _minutes(idle_for.total_seconds()),
                }
                text = (
                    _("Your job “%(name)s” (%(id)s) was requeued: %(why)s.")
                    if requeue
                    else _("Your job “%(name)s” (%(id)s) was cancelled: %(why)s.")
                ) % {"name": job.name, "id": job.pk, "why": note}
            why = StopReason.PREEMPTED if requeue else StopReason.CANCELLED
            if job_request_stop(job=job, why=why, note=note, grace_s=settings.JOBS_STOP_GRACE_S, now=now):
                report.stopped += 1
                _tell(job, text, f"{ref}:stopped")
            continue
        if idle_for >= warn_after and (job.idle_warned_at is None or job.idle_warned_at < since):
            with translation.override(_language(job)):
                if action == "off":
                    text = _(
                        "Your job “%(name)s” (%(id)s) has held its GPUs idle for %(min)s minutes. Cancel it if it "
                        "is stuck, so that others can use them."
                    )
                else:
                    text = _(
                        "Your job “%(name)s” (%(id)s) has held its GPUs idle for %(min)s minutes; it will be "
                        "%(action)s at %(at)s unless they get busy. If it should wait like this, submit it with a "
                        "reason in idle_ok_reason."
                    )
                text = text % {
                    "name": job.name,
                    "id": job.pk,
                    "min": _minutes(idle_for.total_seconds()),
                    "action": _("requeued") if action == "requeue" else _("cancelled"),
                    "at": timezone.localtime(since + act_after).strftime("%H:%M"),
                }
            report.warned += _tell(job, text, f"{ref}:warned")
            Job.objects.filter(pk=job.pk).update(idle_warned_at=now)
    return report
