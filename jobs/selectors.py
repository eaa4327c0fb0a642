"""Reads about training jobs, and who may see which: the one place that decides visibility."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from jobs.models import Dataset, Job, JobState
from labs.models import WORKING_STATUSES, Reservation
from portal.accounts.models import User
from portal.accounts.permissions import is_owner_or_admin
from portal.accounts.selectors import course_ids_active_for, people_visible_to
from portal.errors import NotFound


def jobs_visible_to(user: User) -> QuerySet[Job]:
    """Students see their own jobs; teachers theirs and their courses' students'; admins every job."""
    return Job.objects.select_related("owner", "course", "reservation").filter(people_visible_to(user, "owner"))


def job_for(user: User, job_id: int) -> Job:
    """The job if `user` may see it; NotFound otherwise (whether or not it exists)."""
    job = jobs_visible_to(user).filter(pk=job_id).first()
    if job is None:
        raise NotFound("No such job.")
    return job


def may_cancel(user: User, job: Job) -> bool:
    return job.is_active and is_owner_or_admin(user, job.owner_id)


def jobs_queued_count(user: User) -> int:
    return Job.objects.filter(owner=user, state=JobState.QUEUED).count()


def reservations_for_jobs(user: User) -> QuerySet[Reservation]:
    """Approved or running reservations this person may run jobs in, not yet over."""
    from django.utils import timezone

    course_ids = course_ids_active_for(user)
    return (
        Reservation.objects.filter(status__in=WORKING_STATUSES, ends_at__gt=timezone.now())
        .filter(Q(owner=user) | Q(course_id__in=course_ids))
        .select_related("course")
        .order_by("starts_at")
    )


def datasets_available() -> QuerySet[Dataset]:
    return Dataset.objects.filter(enabled=True).order_by("name")
