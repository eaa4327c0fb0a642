"""Reads about people: their courses, the quota in force for them, and their API token."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from rest_framework.authtoken.models import Token

from portal.accounts.models import Course, Quota, Role, User

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


def people_by_role() -> dict[str, int]:
    """Active accounts per role, every role present (zero when nobody has it)."""
    counts = dict(User.objects.filter(is_active=True).values_list("role").annotate(n=Count("id")))
    return {role: counts.get(role, 0) for role in Role.values}


def people_visible_to(user: User | None, field: str) -> Q:
    """Whose things (jobs, notebooks) a person may look at, as a filter on the owner `field`: their own; a teacher's
    also their courses' students'; an admin's everyone's; nobody's when signed out."""
    if user is None or not user.is_authenticated:
        return Q(pk__in=[])
    if user.is_lab_admin:
        return Q()
    if user.is_teacher:
        students = User.objects.filter(enrollments__course__teachers=user).values("pk")
        return Q(**{field: user}) | Q(**{f"{field}__in": students})
    return Q(**{field: user})


def courses_staffed_by(user: User | None) -> QuerySet[Course]:
    """Courses whose staff this person is (they teach it; admins: every course). The one place that says who looks
    after a course's usage, students and reservations: a new staff role (teaching assistants) extends it here."""
    if user is None or not user.is_authenticated:
        return Course.objects.none()
    if user.is_lab_admin:
        return Course.objects.all()
    return Course.objects.filter(teachers=user).distinct()


def role_of(user: User) -> str:
    """The role whose policy applies: a superuser counts as an admin."""
    return Role.ADMIN if user.is_lab_admin else user.role


def courses_in_term(*, today: dt.date | None = None) -> QuerySet[Course]:
    """Courses whose term includes `today` (the lab's local date): the one rule for when a course gives access.

    A course gives its students and teachers access from the first day of its term to the last, inclusive, in the
    lab's time zone; the day after `term_end` it gives nothing (no grace: a course that needs more time extends
    its term in the admin console)."""
    today = today or timezone.localdate()
    return Course.objects.filter(term_start__lte=today, term_end__gte=today)


def courses_active_for(user: User, *, today: dt.date | None = None) -> QuerySet[Course]:
    """Courses that currently give this user access: enrolled or teaching, term not over."""
    return courses_in_term(today=today).filter(Q(enrollments__user=user) | Q(teachers=user)).distinct()


def course_ids_active_for(user: User, *, today: dt.date | None = None) -> frozenset[int]:
    """The ids of `courses_active_for`: whose reservations, profiles and GPUs this person may use."""
    return frozenset(courses_active_for(user, today=today).values_list("id", flat=True))


def courses_of(user: User) -> list[dict]:
    """Every course the user belongs to, with their part in it and whether it is in term."""
    today = timezone.localdate()
    taught = Course.objects.filter(teachers=user)
    enrolled = Course.objects.filter(enrollments__user=user)
    rows: dict[int, dict] = {}
    for part, qs in (("teacher", taught), ("student", enrolled)):
        for course in qs:
            rows.setdefault(
                course.pk,
                {
                    "code": course.code,
                    "name": course.name,
                    "role": part,
                    "term_start": course.term_start,
                    "term_end": course.term_end,
                    "active": course.is_active_on(today),
                },
            )
    return sorted(rows.values(), key=lambda row: row["code"])


def _apply(quota: Quota | None, values: dict, sources: dict, label: str) -> None:
    """Let the quota's non-blank limits replace what is there, remembering where they came from."""
    if quota is None:
        return
    for name in Quota.LIMIT_FIELDS:
        value = getattr(quota, name)
        if value is not None:
            values[name] = value
            sources[name] = label


def effective_quota(user: User, *, today: dt.date | None = None) -> QuotaLimits:
    role = role_of(user)
    values: dict[str, int | Decimal] = dict(ROLE_DEFAULTS[role])
    sources = {name: "default" for name in values}

    _apply(Quota.objects.filter(role=role).first(), values, sources, "role")

    course_quotas = Quota.objects.filter(course__in=courses_active_for(user, today=today)).select_related("course")
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

    _apply(Quota.objects.filter(user=user).first(), values, sources, "user")

    return QuotaLimits(**values, sources=sources)


def notices_for(user: User, *, limit: int = 10):
    """What the portal has to tell this person and they have not dismissed, newest first."""
    return user.notices.filter(read_at__isnull=True)[:limit]


def token_of(user: User) -> Token | None:
    return Token.objects.filter(user=user).first()


def token_expires_at(token: Token) -> dt.datetime | None:
    """When the token stops working: API_TOKEN_TTL_DAYS after it was made; None when tokens do not expire."""
    if not settings.API_TOKEN_TTL_DAYS:
        return None
    return token.created + dt.timedelta(days=settings.API_TOKEN_TTL_DAYS)


def token_expired(token: Token, *, now: dt.datetime | None = None) -> bool:
    expires_at = token_expires_at(token)
    return expires_at is not None and expires_at <= (now or timezone.now())
