"""Reads about training jobs, and who may see which: the one place that decides visibility."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.db import connection, models
from django.db.models import Count, FloatField, Max, Min, Q, QuerySet, Sum
from django.db.models.expressions import RawSQL
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.errors import NotFound, NotPermitted
from accounts.models import Course, User
from accounts.permissions import is_owner_or_admin
from accounts.prepared import Prepared
from accounts.quotas import effective_quota
from accounts.selectors import course_ids_active_for, courses_active_for, work_visible_to
from jobs.models import Job, JobState, JobTemplate
from jobs.policy.priority import LN2, decayed_usage
from jobs.policy.runtime import WINDOW, RuntimePrediction, predict_runtime
from jobs.presets import Preset, presets_for
from labs.ledger import week_gpu_hours, without_jit
from labs.models import WORKING_STATUSES, Allocation, AllocationKind, Gpu, NodeStatus, Reservation


def jobs_visible_to(user: User) -> QuerySet[Job]:
    """Everyone sees their own jobs; teachers also the jobs booked to a course they teach, submitted in its term
    (never a student's personal jobs or those booked to another course); admins every job. Teaching assistants see
    no one else's jobs (`accounts.selectors.work_visible_to`, the one rule: the list, the page, the logs,
    followed or not, and the API all start here)."""
    return Job.objects.select_related("owner", "course", "reservation").filter(
        work_visible_to(user, owner="owner", course="course", at="submitted_at", assistants=False)
    )


# A job's page, its API detail and its logs, polled while it runs, read it by id: compiled once (accounts.prepared).
_JOB_BY_ID = Prepared(
    lambda pk: Job.objects.select_related("owner", "course", "reservation").filter(pk=pk), pk=Job._meta.pk
)


def job_for(user: User, job_id: int) -> Job:
    """The job if `user` may see it; NotFound otherwise (whether or not it exists).

    Its owner and an admin see it by the rule's first clauses (`work_visible_to`), which need no query; anyone else
    only through the whole rule (a course's teachers)."""
    found = _JOB_BY_ID.objects(job_id)
    if found and user.is_authenticated and is_owner_or_admin(user, found[0].owner_id):
        return found[0]
    job = jobs_visible_to(user).filter(pk=job_id).first() if found else None
    if job is None:
        raise NotFound("No such job.")
    return job


def may_cancel(user: User, job: Job) -> bool:
    return job.is_active and is_owner_or_admin(user, job.owner_id)


def jobs_queued_count(user: User) -> int:
    return Job.objects.filter(owner=user, state=JobState.QUEUED).count()


def reservations_for_jobs(user: User) -> QuerySet[Reservation]:
    """Approved or running reservations this person may run jobs in, not yet over."""
    course_ids = course_ids_active_for(user)
    return (
        Reservation.objects.filter(status__in=WORKING_STATUSES, ends_at__gt=timezone.now())
        .filter(Q(owner=user) | Q(course_id__in=course_ids))
        .select_related("course")
        .order_by("starts_at")
    )


def lab_shape() -> tuple[int, int]:
    """(ready nodes, the most GPUs on one of them): the largest job the lab could run now."""
    ready = Gpu.objects.filter(node__status=NodeStatus.READY)
    most = ready.values("node").annotate(top=Max("index")).order_by("-top").values_list("top", flat=True).first()
    return ready.values("node").distinct().count(), (most + 1) if most is not None else 0


def resource_presets(user: User, *, now: dt.datetime | None = None) -> tuple[list[Preset], Decimal]:
    """The job form's presets for this person (jobs.presets) and the GPU-hours they have left this week."""
    limits = effective_quota(user)
    left = max(limits.gpu_hours_week - week_gpu_hours(user, now=now), Decimal(0))
    ready_nodes, most_per_node = lab_shape()
    presets = presets_for(
        max_gpus_per_job=limits.max_gpus_per_job,
        gpu_hours_left=left,
        most_gpus_per_node=most_per_node,
        ready_nodes=ready_nodes,
        max_runtime_s=settings.JOBS_MAX_RUNTIME_S,
    )
    return presets, left


def job_counts_by_state() -> dict[str, int]:
    """How many jobs are in each state (states nobody is in are left out)."""
    return dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())


def queue_waits(*, now: dt.datetime | None = None) -> dict[str, float]:
    """Seconds: how long the oldest job still queued has waited, and the mean wait of attempts started in the last
    hour (0 when there are none)."""
    now = now or timezone.now()
    oldest = Job.objects.filter(state=JobState.QUEUED).aggregate(at=Min("queued_since"))["at"]
    started = Job.objects.filter(started_at__gte=now - dt.timedelta(hours=1)).values_list("queued_since", "started_at")
    seconds = [(started_at - queued).total_seconds() for queued, started_at in started]
    return {
        "oldest_queued": (now - oldest).total_seconds() if oldest else 0,
        "mean_last_hour": sum(seconds) / len(seconds) if seconds else 0,
    }


def job_queue_waits(start: dt.datetime, until: dt.datetime):
    """(queued since, got its GPUs) of each job whose current attempt was queued in [start, until) and placed: the
    jobs' queue waits for the lab's usage page (registered with labs.usage.waits in jobs/apps.py)."""
    return (
        Job.objects.filter(queued_since__gte=start, queued_since__lt=until, started_at__isnull=False)
        .values_list("queued_since", "started_at")
        .iterator(chunk_size=2000)
    )


# How far back, and how many finished jobs at most, run-time predictions read.
HISTORY_DAYS = 180
HISTORY_ROWS = 20_000


def _work_key(image: str, command) -> tuple[str, str]:
    return image, repr(command)


# The latest WINDOW runs of each waiting person's and each course's work (image and command): all a prediction reads
# (runtime.predict_runtime), so a class that ran the same script thousands of times costs no more than one that ran
# it ten times. Plain SQL: the ORM spent more compiling this query than running it. A run whose end is before its
# start (a clock that jumped) is no run time. A NULL rank (not a waiting person's, not a waiting course's) keeps none.
_LATEST_RUNS_SQL = """
SELECT id, owner_id, course_id, image, command, started_at, running_at, finished_at FROM (
    SELECT id, owner_id, course_id, image, command, started_at, running_at, finished_at,
        CASE WHEN {mine} THEN ROW_NUMBER() OVER (
            PARTITION BY owner_id, image, command ORDER BY finished_at DESC, id DESC
        ) END AS of_owner,
        CASE WHEN {ours} THEN ROW_NUMBER() OVER (
            PARTITION BY course_id, image, command ORDER BY finished_at DESC, id DESC
        ) END AS of_course
    FROM {table}
    WHERE state = %s AND attempt = 1 AND started_at IS NOT NULL AND finished_at >= %s AND finished_at <= %s
        AND finished_at >= COALESCE(running_at, started_at) AND image IN ({images}) AND ({mine} OR {ours})
) AS runs
WHERE of_owner <= %s OR of_course <= %s
ORDER BY finished_at DESC, id DESC
LIMIT %s
"""


def runtime_predictions(jobs: Iterable[Job], *, now: dt.datetime | None = None) -> dict[int, RuntimePrediction]:
    """How long each job will probably run: from its owner's finished jobs with the same image and command, else
    from its course's, else its limit (runtime.predict_runtime; never above the job's limit). A finished job
    counts if it succeeded in its first attempt (a resumed job's last attempt is only part of its run time).
    One query for all the jobs."""
    jobs = list(jobs)
    if not jobs:
        return {}
    now = now or timezone.now()
    owners = sorted({job.owner_id for job in jobs})
    courses = sorted({job.course_id for job in jobs if job.course_id})
    images = sorted({job.image for job in jobs})
    mine = f"owner_id IN ({', '.join(['%s'] * len(owners))})"
    ours = f"course_id IN ({', '.join(['%s'] * len(courses))})" if courses else "1 = 0"
    sql = _LATEST_RUNS_SQL.format(
        table=Job._meta.db_table, mine=mine, ours=ours, images=", ".join(["%s"] * len(images))
    )
    params = [
        *owners, *courses, JobState.SUCCEEDED, now - dt.timedelta(days=HISTORY_DAYS), now, *images, *owners, *courses,
        WINDOW, WINDOW, HISTORY_ROWS,
    ]  # fmt: skip
    rows = [
        (run.owner_id, run.course_id, run.image, run.command, run.started_at, run.running_at, run.finished_at)
        for run in Job.objects.raw(sql, params)
    ]
    by_owner: dict[tuple, list[float]] = {}
    by_course: dict[tuple, list[float]] = {}
    for owner_id, course_id, image, command, started_at, running_at, finished_at in reversed(rows):
        ran = (finished_at - (running_at or started_at)).total_seconds()
        if ran < 0:
            continue
        key = _work_key(image, command)
        by_owner.setdefault((owner_id, *key), []).append(ran)
        if course_id is not None:
            by_course.setdefault((course_id, *key), []).append(ran)
    out = {}
    for job in jobs:
        key = _work_key(job.image, job.command)
        history = by_owner.get((job.owner_id, *key)) or (
            by_course.get((job.course_id, *key)) if job.course_id else None
        )
        out[job.pk] = predict_runtime(history or (), float(job.max_runtime_s))
    return out


# --- Course job templates -------------------------------------------------------------------------------------------
TEMPLATES_TEACHERS_WRITE = gettext_noop(
    "A course's job templates are written by its teachers and admins; its students use them."
)


def template_course_for(user: User, code: str, *, write: bool = False) -> Course:
    """The course whose templates `user` asks for: its teachers and admins read and write, the people enrolled in it
    (students, teaching assistants) read (403 when they would write); anyone else gets 404, as for no such course."""
    course = Course.objects.filter(code=code).first() if isinstance(code, str) else None
    if course is None or not (user.is_lab_admin or course.teachers.filter(pk=user.pk).exists()):
        if course is not None and course.enrollments.filter(user=user).exists():
            if write:
                raise NotPermitted(_(TEMPLATES_TEACHERS_WRITE))
            return course
        raise NotFound(_("No such course."))
    return course


def may_write_templates(user: User, course: Course) -> bool:
    return user.is_lab_admin or course.teachers.filter(pk=user.pk).exists()


def templates_usable_by(user: User) -> QuerySet[JobTemplate]:
    """The templates a person may submit from: those of their courses in term (admins: every course's)."""
    templates = JobTemplate.objects.select_related("course")
    if user.is_lab_admin:
        return templates
    return templates.filter(course__in=courses_active_for(user))


def template_for_use(user: User, template_id) -> JobTemplate | None:
    if isinstance(template_id, bool) or not isinstance(template_id, int | str) or not str(template_id).isdigit():
        return None
    return templates_usable_by(user).filter(pk=int(template_id)).first()


def template_for_edit(user: User, code: str, template_id: int) -> JobTemplate:
    """A template of the course `code` that `user` may change (its teachers, admins); 403/404 as template_course_for."""
    course = template_course_for(user, code, write=True)
    template = course.job_templates.filter(pk=template_id).first()
    if template is None:
        raise NotFound(_("No such template."))
    return template


# `priority.decayed_gpu_seconds` (share x the integral of 2^-((now - t) / half-life) over the entry, up to now) for
# one entry, as PostgreSQL sums it per person: a row a person, not every ledger entry of eight half-lives (with 50,000
# entries the Python loop took 466 ms of CPU in every pass and every job submission's dry run).
# tests/jobs/test_usage_sql.py holds it to the Python rule.
_DECAYED_ENTRY_SQL = """share::float8 * GREATEST(
    POWER(2::float8, -GREATEST(%s - EXTRACT(EPOCH FROM LEAST(COALESCE(ends_at, %s), %s))::float8, 0) / %s)
  - POWER(2::float8, -GREATEST(%s - EXTRACT(EPOCH FROM starts_at)::float8, 0) / %s), 0)"""


def fair_share_entries(now: dt.datetime, half_life_s: float) -> QuerySet[Allocation]:
    """The ledger entries fair share counts: notebooks and jobs (reservations are not use) that ended within eight
    half-lives of `now` or are open."""
    return _entries_since(_window_start(now, half_life_s))


def _window_start(now: dt.datetime, half_life_s: float) -> dt.datetime:
    """Fair share counts what ended within eight half-lives of `now` (the rest weighs under 1/256)."""
    return now - dt.timedelta(seconds=8 * half_life_s)


def _entries_since(since: dt.datetime) -> QuerySet[Allocation]:
    return Allocation.objects.exclude(kind=AllocationKind.RESERVATION).filter(
        Q(ends_at__isnull=True) | Q(ends_at__gt=since)
    )


def _decayed_totals(since: dt.datetime, now: dt.datetime, at: float, half_life: float) -> QuerySet:
    params = (at, now, now, half_life, at, half_life)  # fixed SQL; the values go as parameters
    decayed = RawSQL(_DECAYED_ENTRY_SQL, params, output_field=FloatField())  # noqa: S611
    totals = _entries_since(since).order_by().values("user_id").annotate(total=Sum(decayed))
    return totals.values_list("user_id", "total")


# Every scheduling pass and every job submission's dry run read it: compiled once (accounts.prepared).
_DECAYED_TOTALS = Prepared(
    _decayed_totals,
    since=Allocation._meta.get_field("ends_at"),
    now=models.DateTimeField(),
    at=models.FloatField(),
    half_life=models.FloatField(),
)


def decayed_usage_by_person(now: dt.datetime, half_life_s: float) -> dict[int, float]:
    """Decayed GPU-seconds per person (by user id) from the ledger (notebooks and jobs; reservations are not use), over
    the entries that ended within eight half-lives or are open; nobody who used nothing."""
    if connection.vendor == "postgresql":
        with without_jit():
            totals = _DECAYED_TOTALS.rows(_window_start(now, half_life_s), now, now.timestamp(), float(half_life_s))
            return {user_id: total * half_life_s / LN2 for user_id, total in totals if total}
    # The embedded SQLite file: a small lab.
    rows = fair_share_entries(now, half_life_s).values_list("user_id", "starts_at", "ends_at", "share")
    return decayed_usage(
        ((u, s.timestamp(), e.timestamp() if e else None, float(share)) for u, s, e, share in rows),
        now=now.timestamp(),
        half_life_s=half_life_s,
    )
