"""The quota rule, in one place: the limits that apply to a person, and where each came from.

A blank limit inherits: the person's own quota, then the most generous quota of a course they are in this term,
then their role's policy, then the built-in default for the role; approved requests for more (accounts.more_requests)
lift the weekly GPU-hours while in force. `effective_quotas` reads it for many people in three queries, whoever
they are (the scheduler's pass and the dry run read everyone waiting); `effective_quota` is the same for one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from django.db.models import Q

from accounts.models import Quota, Role, User
from accounts.more_requests_selectors import overrides_in_force_by_user, weekly_gpu_hours_with_overrides
from accounts.prepared import Prepared
from accounts.selectors import course_ids_active_for_many, role_of

# The policy a role gets when an admin has not written one (or left a limit blank).
ROLE_DEFAULTS: dict[str, dict[str, int | Decimal]] = {
    Role.STUDENT: {
        "max_notebooks": 1,
        "notebook_gpu_share": Decimal("0.25"),
        "gpu_hours_week": Decimal("20"),
        "max_jobs": 2,
        "max_gpus_per_job": 1,
        "reservation_max_nodes": 0,
        "reservation_max_hours": Decimal("0"),
        "reservation_node_hours_week": Decimal("0"),
        "reservation_horizon_days": 0,
        "reservation_notice_min": 60,
        "reservation_approval_nodes": 0,
    },
    Role.TEACHER: {
        "max_notebooks": 2,
        "notebook_gpu_share": Decimal("1"),
        "gpu_hours_week": Decimal("200"),
        "max_jobs": 8,
        "max_gpus_per_job": 8,
        "reservation_max_nodes": 40,
        "reservation_max_hours": Decimal("8"),
        "reservation_node_hours_week": Decimal("160"),
        "reservation_horizon_days": 180,
        "reservation_notice_min": 30,
        "reservation_approval_nodes": 20,
    },
    Role.ADMIN: {
        "max_notebooks": 4,
        "notebook_gpu_share": Decimal("1"),
        "gpu_hours_week": Decimal("10000"),
        "max_jobs": 40,
        "max_gpus_per_job": 40,
        "reservation_max_nodes": 40,
        "reservation_max_hours": Decimal("168"),
        "reservation_node_hours_week": Decimal("10000"),
        "reservation_horizon_days": 365,
        "reservation_notice_min": 0,
        "reservation_approval_nodes": 40,
    },
}


@dataclasses.dataclass(frozen=True)
class QuotaLimits:
    max_notebooks: int
    notebook_gpu_share: Decimal
    gpu_hours_week: Decimal
    max_jobs: int
    max_gpus_per_job: int
    reservation_max_nodes: int
    reservation_max_hours: Decimal
    reservation_node_hours_week: Decimal
    reservation_horizon_days: int
    reservation_notice_min: int
    reservation_approval_nodes: int
    # Where each limit came from, for the person reading it: "user", "course CS101", "role", "default".
    sources: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, int | float]:
        return {
            name: (float(value) if isinstance(value, Decimal) else value)
            for name, value in dataclasses.asdict(self).items()
            if name != "sources"
        }


def _apply(quota: Quota | None, values: dict, sources: dict, label: str) -> None:
    """Let the quota's non-blank limits replace what is there, remembering where they came from."""
    if quota is None:
        return
    for name in Quota.LIMIT_FIELDS:
        value = getattr(quota, name)
        if value is not None:
            values[name] = value
            sources[name] = label


def _most_generous(course_quotas: list[Quota], values: dict, sources: dict) -> None:
    """Per limit, the most generous of the person's course quotas that set it (the first by course code on a tie)."""
    for name in Quota.LIMIT_FIELDS:
        best = None
        for quota in course_quotas:
            value = getattr(quota, name)
            if value is None:
                continue
            if best is None or (value < best[0] if name in Quota.LOWER_IS_GENEROUS else value > best[0]):
                best = (value, quota.course.code)
        if best is not None:
            values[name] = best[0]
            sources[name] = f"course {best[1]}"


# One person's (every job submission and dry run, every page's meter): compiled once. It reads every course's quota
# (a lab has a few dozen) and keeps those of the person's courses, as the query for many people does.
_QUOTAS_OF_ONE = Prepared(
    lambda role, user: (
        Quota.objects.filter(Q(role=role) | Q(user_id=user) | Q(course__isnull=False))
        .select_related("course")
        .order_by("pk")
    ),
    role=Quota._meta.get_field("role"),
    user=Quota._meta.get_field("user"),
)


def effective_quotas(
    users: Iterable[User], *, today: dt.date | None = None, now: dt.datetime | None = None
) -> dict[int, QuotaLimits]:
    """The limits of each of `users`, by user id: their courses, every quota that may apply to any of them, and
    their overrides in force are read once for all."""
    users = list(users)
    if not users:
        return {}
    ids = [user.pk for user in users]
    courses = course_ids_active_for_many(ids, today=today)
    course_ids = set().union(*courses.values())
    roles = {role_of(user) for user in users}
    if len(users) == 1:
        quotas = _QUOTAS_OF_ONE.objects(role_of(users[0]), ids[0])
    else:
        quotas = Quota.objects.filter(Q(role__in=roles) | Q(user_id__in=ids) | Q(course_id__in=course_ids))
        quotas = quotas.select_related("course").order_by("pk")
    by_role, by_user, by_course = {}, {}, {}
    for quota in quotas:
        if quota.role:
            by_role[quota.role] = quota
        elif quota.user_id:
            by_user[quota.user_id] = quota
        elif quota.course_id:
            by_course[quota.course_id] = quota
    grants = overrides_in_force_by_user(ids, now=now)
    limits = {}
    for user in users:
        role = role_of(user)
        values: dict[str, int | Decimal] = dict(ROLE_DEFAULTS[role])
        sources = {name: "default" for name in values}
        _apply(by_role.get(role), values, sources, "role")
        mine = sorted((by_course[c] for c in courses.get(user.pk, ()) if c in by_course), key=lambda q: q.course.code)
        _most_generous(mine, values, sources)
        _apply(by_user.get(user.pk), values, sources, "user")
        # Approved requests for more, while in force (accounts.more_requests).
        weekly, override = weekly_gpu_hours_with_overrides(values["gpu_hours_week"], grants.get(user.pk, ()))
        if override is not None:
            values["gpu_hours_week"] = weekly
            sources["gpu_hours_week"] = f"request #{override}"
        limits[user.pk] = QuotaLimits(**values, sources=sources)
    return limits


def effective_quota(user: User, *, today: dt.date | None = None) -> QuotaLimits:
    """The limits that apply to one person now (`effective_quotas` for one)."""
    return effective_quotas([user], today=today)[user.pk]
