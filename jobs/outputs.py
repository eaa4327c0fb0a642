"""A job's outputs and checkpoints: listed and downloaded from its page and the API, kept JOBS_LOCAL_KEEP_DAYS
after the job is over (its owner is told JOBS_OUTPUTS_NOTICE_DAYS ahead), and "run again from this checkpoint".

Who may list and download them is who may see the job (jobs.selectors.job_for, the one rule); who may run again is
its owner or an admin, as for cancelling. The files are read through jobs.backends.outputs, which never follows a
link a job made. Section names are the backend's `output_roots` (locally `checkpoint` and `work`, the current
attempt's work dir); a path is `<section>/<path inside it>`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

from django.conf import settings
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from accounts.errors import Conflict, NotFound
from accounts.models import User
from accounts.permissions import require_owner_or_admin
from accounts.services import notice_send
from jobs.backends import get_job_backend
from jobs.backends import outputs as files
from jobs.models import FINISHED_STATES, Job

RESUME_ACTION = "run this job again from its checkpoint"


@dataclasses.dataclass(frozen=True)
class OutputFile:
    path: str
    kind: str
    size: int
    modified_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class Outputs:
    files: list[OutputFile]
    total_bytes: int
    truncated: bool  # more than JOBS_OUTPUTS_LIST_MAX entries: the rest are not listed
    available: bool  # False where the backend keeps them out of the portal's reach (the cluster's claims)
    kept_until: dt.datetime | None  # when they are removed (a job over for good), None while it may still run


def kept_until(job: Job) -> dt.datetime | None:
    if job.state not in FINISHED_STATES or job.finished_at is None:
        return None
    return job.finished_at + dt.timedelta(days=settings.JOBS_LOCAL_KEEP_DAYS)


def job_outputs(job: Job) -> Outputs:
    """The files of the job's checkpoint and current work dir, by path, with their sizes and times."""
    roots = get_job_backend().output_roots(job.pk, job.attempt)
    limit = settings.JOBS_OUTPUTS_LIST_MAX
    found: list[OutputFile] = []
    truncated = False
    for section, root in sorted(roots.items()):
        entries, more = files.walk(root, limit=limit - len(found))
        truncated = truncated or more
        found += [
            OutputFile(f"{section}/{e.path}", e.kind, e.size, dt.datetime.fromtimestamp(e.modified, tz=dt.UTC))
            for e in entries
        ]
        if len(found) >= limit:
            truncated = truncated or section != sorted(roots)[-1]
            break
    total = sum(f.size for f in found if f.kind == "file")
    return Outputs(found, total, truncated, bool(roots), kept_until(job))


def job_output_open(job: Job, path: str) -> tuple[int, int, str]:
    """(an open descriptor, its size, its file name) of one of the job's files; NotFound for anything else: a path
    outside its sections, a link, a directory, a FIFO. Conflict past JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES."""
    section, _sep, rest = path.partition("/")
    root = get_job_backend().output_roots(job.pk, job.attempt).get(section)
    if root is None or not rest:
        raise NotFound(_("No such file."))
    try:
        fd, st = files.open_file(root, rest)
    except files.BadPath as exc:
        raise NotFound(_("No such file.")) from exc
    if st.st_size > settings.JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES:
        os.close(fd)
        raise Conflict(
            _("This file is larger than the %(limit)s bytes the portal serves; copy it from a job or notebook instead.")
            % {"limit": settings.JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES}
        )
    return fd, st.st_size, rest.rsplit("/", 1)[-1]


def job_resume(*, user: User, job: Job, now: dt.datetime | None = None) -> Job:
    """ "Run again from this checkpoint": a new job like this one (the same program, sizes and data) that starts
    with a copy of its checkpoint. Only once it is over (a job still queued or running resumes by itself)."""
    from jobs.services import job_submit  # services import this module's neighbours; keep the import local

    require_owner_or_admin(user, job.owner_id, RESUME_ACTION)
    if job.state not in FINISHED_STATES:
        raise Conflict(_("This job is not over yet: it resumes from its checkpoint by itself if it is requeued."))
    until = kept_until(job)
    if until is not None and (now or timezone.now()) >= until:
        raise Conflict(
            _("This job's checkpoint has been removed (kept %(days)s days).") % {"days": settings.JOBS_LOCAL_KEEP_DAYS}
        )
    return job_submit(
        user=user,
        now=now,
        resumed_from=job,
        name=job.name,
        image=job.image,
        command=None if job.script else list(job.command),
        script=job.script or None,
        gpus=job.gpus_per_node,
        gpu_share=job.gpu_share,
        scratch=job.scratch,
        bulk=job.bulk,
        nodes=job.nodes,
        max_runtime_s=job.max_runtime_s,
        priority=job.priority,
        env=dict(job.env),
        datasets=list(job.datasets),
        course=job.course.code if job.course_id else None,
        idle_ok_reason=job.idle_ok_reason,
    )


def outputs_purge_notices(*, now: dt.datetime | None = None) -> int:
    """Tell each owner, once, JOBS_OUTPUTS_NOTICE_DAYS before their finished job's outputs and checkpoint go.
    Returns the notices sent. (The reconciler removes them: jobs.reconcile.expire_local_files.)"""
    now = now or timezone.now()
    keep = dt.timedelta(days=settings.JOBS_LOCAL_KEEP_DAYS)
    ahead = dt.timedelta(days=settings.JOBS_OUTPUTS_NOTICE_DAYS)
    due = Job.objects.filter(
        state__in=FINISHED_STATES,
        outputs_notice_at__isnull=True,
        finished_at__lte=now - keep + ahead,
        finished_at__gt=now - keep,
    ).select_related("owner")
    sent = 0
    for job in due:
        with translation.override(job.owner.language or settings.LANGUAGE_CODE):
            text = _(
                "The outputs and checkpoint of your job “%(name)s” (%(id)s) will be removed on %(date)s. Download "
                "what you need from its page, or run it again from its checkpoint before then."
            ) % {"name": job.name, "id": job.pk, "date": timezone.localtime(job.finished_at + keep).date().isoformat()}
        sent += notice_send(user=job.owner, text=text, ref=f"job:{job.pk}:outputs-purge", level="warning")
        Job.objects.filter(pk=job.pk).update(outputs_notice_at=now)
    return sent
