"""Reads about requests for more: who sees which, who decides which, the overrides in force."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Q, QuerySet
from django.utils import timezone

from accounts.models import MoreRequest, RequestKind, RequestStatus, User
from accounts.prepared import Prepared


def more_requests_visible_to(user: User) -> QuerySet[MoreRequest]:
    """Admins every request; teachers their own and those for the courses they teach; everyone else their own."""
    rows = MoreRequest.objects.select_related("user", "course", "decided_by")
    if not user.is_authenticated:
        return rows.none()
    if user.is_lab_admin:
        return rows
    if user.is_teacher:
        return rows.filter(Q(user=user) | Q(course__teachers=user)).distinct()
    return rows.filter(user=user)


def may_decide(user: User, request: MoreRequest) -> bool:
    """An admin any request, a teacher the course work of the courses they teach; never one's own."""
    if not user.is_authenticated or request.user_id == user.pk:
        return False
    if user.is_lab_admin:
        return True
    return bool(user.is_teacher and request.course_id and request.course.teachers.filter(pk=user.pk).exists())


def more_requests_to_decide(user: User) -> QuerySet[MoreRequest]:
    """The pending requests this person may decide, oldest first."""
    if not user.is_authenticated or not (user.is_lab_admin or user.is_teacher):
        return MoreRequest.objects.none()
    rows = more_requests_visible_to(user).filter(status=RequestStatus.PENDING).exclude(user=user)
    if not user.is_lab_admin:
        rows = rows.filter(course__teachers=user)
    return rows.order_by("created_at", "pk")


def deciders_of(request: MoreRequest) -> QuerySet[User]:
    """Whom a new request is for: the course's teachers (course work), else the lab's admins."""
    if request.course_id and request.course.teachers.exclude(pk=request.user_id).exists():
        return request.course.teachers.exclude(pk=request.user_id)
    return User.objects.filter(Q(role="admin") | Q(is_superuser=True), is_active=True).exclude(pk=request.user_id)


def overrides_in_force(user: User, *, now: dt.datetime | None = None) -> QuerySet[MoreRequest]:
    """The approved requests of this person whose time is not up: the overrides the quota and budget checks honour
    (whether or not the expiry sweep has run yet)."""
    return _in_force(now).filter(user=user)


def _in_force(now: dt.datetime | None) -> QuerySet[MoreRequest]:
    return MoreRequest.objects.filter(status=RequestStatus.APPROVED, granted_until__gt=now or timezone.now())


# One person's: every job submission and dry run reads them (for the quotas). Compiled once.
_IN_FORCE_FOR_ONE = Prepared(
    lambda now, user: _in_force(now).filter(user_id__in=[user]).order_by("pk"),
    now=MoreRequest._meta.get_field("granted_until"),
    user=MoreRequest._meta.get_field("user"),
)


def overrides_in_force_by_user(user_ids: Iterable[int], *, now: dt.datetime | None = None) -> dict[int, list]:
    """`overrides_in_force` for many people in one query: their approved requests in force, oldest first, by id."""
    grants: dict[int, list[MoreRequest]] = {}
    user_ids = list(user_ids)
    if len(user_ids) == 1:
        found = _IN_FORCE_FOR_ONE.objects(now or timezone.now(), user_ids[0])
    else:
        found = _in_force(now).filter(user_id__in=user_ids).order_by("pk")
    for grant in found:
        grants.setdefault(grant.user_id, []).append(grant)
    return grants


def weekly_gpu_hours_with_overrides(weekly: Decimal, grants: Iterable[MoreRequest]) -> tuple[Decimal, int | None]:
    """The weekly GPU-hour quota with the person's overrides in force (`grants`, oldest first): a raise lifts it to
    its amount (the highest raise wins), extra GPU-hours add on top. (the limit, the id of the override that decided
    it or None)."""
    value, source = weekly, None
    extra = Decimal(0)
    for grant in grants:
        if grant.kind == RequestKind.QUOTA and grant.in_force_amount > value:
            value, source = grant.in_force_amount, grant.pk
        elif grant.kind == RequestKind.GPU_HOURS:
            extra += grant.in_force_amount
            source = source or grant.pk
    return value + extra, source


def extra_budget_hours(
    user: User, *, budget_user_id: int | None, budget_course_id: int | None, now: dt.datetime | None = None
) -> Decimal:
    """Extra GPU-hours this person's overrides add to a budget their work counts against: a person's own budget
    takes every extra-hours override, a course's budget those asked for that course's work."""
    total = Decimal(0)
    for grant in overrides_in_force(user, now=now).filter(kind=RequestKind.GPU_HOURS):
        if budget_user_id == user.pk or (budget_course_id and grant.course_id == budget_course_id):
            total += grant.in_force_amount
    return total
