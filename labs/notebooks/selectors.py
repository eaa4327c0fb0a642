"""Reads about notebooks: which profiles a person is offered, which sessions they may see, queue positions."""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from accounts.errors import NotFound, NotPermitted
from accounts.models import Course, CourseRole, User
from accounts.permissions import OWNER_TEACHER_OR_ADMIN
from accounts.quotas import effective_quota
from accounts.selectors import (
    courses_active_for,
    courses_in_term,
    courses_staffed_by,
    role_of,
    students_of,
    work_visible_to,
)
from labs.ledger import gpu_hours_by_user, week_start
from labs.models import NOTEBOOK_ACTIVE, NotebookProfile, NotebookSession, NotebookStatus


def profiles_offered(user: User) -> list[NotebookProfile]:
    """Active profiles this person is offered: by role, or by a course they take or teach in term; admins all."""
    if user is None or not user.is_authenticated:
        return []
    profiles = NotebookProfile.objects.filter(is_active=True).prefetch_related("courses")
    if user.is_lab_admin:
        return list(profiles)
    course_ids = set(courses_active_for(user).values_list("id", flat=True))
    role = role_of(user)
    # Roles are a short JSON list; SQLite (the run command) cannot query inside it, and profiles are few.
    return [
        profile
        for profile in profiles
        if role in (profile.roles or []) or any(course.pk in course_ids for course in profile.courses.all())
    ]


def profiles_startable(user: User) -> list[NotebookProfile]:
    """Offered profiles within this person's GPU-share quota: what GET /api/v1/profiles/ lists."""
    share = effective_quota(user).notebook_gpu_share
    return [profile for profile in profiles_offered(user) if profile.gpu_share <= share]


def profiles_editable_by(user: User) -> QuerySet[NotebookProfile]:
    """Admins manage every profile; teachers those they wrote."""
    if user.is_lab_admin:
        return NotebookProfile.objects.all().prefetch_related("courses")
    if user.is_teacher:
        return NotebookProfile.objects.filter(created_by=user).prefetch_related("courses")
    return NotebookProfile.objects.none()


def notebooks_visible_to(user: User) -> QuerySet[NotebookSession]:
    """Everyone sees their own; teachers also the sessions booked to a course they teach (started under its profile:
    `NotebookSession.course`) in its term; teaching assistants those of the students of the course they assist;
    admins all (`accounts.selectors.work_visible_to`, the one rule)."""
    return NotebookSession.objects.select_related("user", "profile", "course").filter(
        work_visible_to(user, owner="user", course="course", at="requested_at")
    )


def notebook_for(user: User, session_id: int) -> NotebookSession:
    """The session if `user` may see it; NotFound otherwise (whether or not it exists)."""
    session = notebooks_visible_to(user).filter(pk=session_id).first()
    if session is None:
        raise NotFound("No such notebook.")
    return session


def may_stop(user: User, session: NotebookSession) -> bool:
    """Whoever may see the session may stop it: its owner, an admin, a teacher (or a teaching assistant, for a
    student's) of the course it is booked to."""
    if session.user_id == user.pk or user.is_lab_admin:
        return True
    return notebooks_visible_to(user).filter(pk=session.pk).exists()


def require_may_stop(user: User, session: NotebookSession) -> None:
    """The page's Stop and the service ask the same rule and refuse with the same sentence (403: they can see it)."""
    if not may_stop(user, session):
        raise NotPermitted(gettext(OWNER_TEACHER_OR_ADMIN).format(what=gettext("stop this notebook")))


def queue_order() -> list[int]:
    """Ids of the queued sessions, first come first served."""
    return list(
        NotebookSession.objects.filter(status=NotebookStatus.QUEUED)
        .order_by("requested_at", "id")
        .values_list("id", flat=True)
    )


def queue_positions(sessions: list[NotebookSession] | None = None) -> dict[int, int]:
    """Position (1 = next) of each queued session; pass the sessions to look up only those."""
    if sessions is not None:
        queued = [s for s in sessions if s.status == NotebookStatus.QUEUED]
        if not queued:
            return {}
        if len(queued) == 1:
            one = queued[0]
            ahead = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).filter(
                Q(requested_at__lt=one.requested_at) | Q(requested_at=one.requested_at, id__lt=one.id)
            )
            return {one.id: ahead.count() + 1}
    return {session_id: n for n, session_id in enumerate(queue_order(), start=1)}


def notebooks_live_of(user: User) -> list[NotebookSession]:
    """This person's notebooks that are queued, starting, running or stopping, oldest first (the dashboard card)."""
    return list(
        NotebookSession.objects.filter(user=user, status__in=(*NOTEBOOK_ACTIVE, NotebookStatus.STOPPING))
        .select_related("profile")
        .order_by("requested_at")
    )


def course_sessions(teacher: User) -> list[dict]:
    """The teacher view: per course they teach or assist (admins: every course in term), each student with their
    live sessions booked to the course and the GPU-hours they booked to it this week (never their other work)."""
    now = timezone.now()
    start = week_start(now)
    courses = courses_staffed_by(teacher)
    if teacher.is_lab_admin:
        courses = courses.filter(pk__in=courses_in_term().values("pk"))
    visible = notebooks_visible_to(teacher)
    seen = work_visible_to(teacher, owner="user", course="course", at="starts_at")  # of the ledger's entries
    rows = []
    for course in courses.order_by("code").prefetch_related("enrollments__user"):
        enrolled = course.enrollments.all()
        students = sorted((e.user for e in enrolled if e.role == CourseRole.STUDENT), key=lambda u: u.username)
        live: dict[int, list[NotebookSession]] = {}
        for session in visible.filter(
            course=course, user__in=students, status__in=(*NOTEBOOK_ACTIVE, NotebookStatus.STOPPING)
        ).order_by("requested_at"):
            live.setdefault(session.user_id, []).append(session)
        used = gpu_hours_by_user([s.pk for s in students], start=start, end=now, where=Q(course=course) & seen)
        people = [
            {"user": s, "sessions": live.get(s.pk, []), "gpu_hours_week": used.get(s.pk, Decimal(0))} for s in students
        ]
        rows.append(
            {
                "course": course,
                "people": people,
                "running": sum(len(p["sessions"]) for p in people),
                "assistants": sorted(e.user.username for e in enrolled if e.role == CourseRole.ASSISTANT),
                "assisting": not teacher.is_lab_admin and any(e.user_id == teacher.pk for e in enrolled),
            }
        )
    return rows


def course_sessions_to_stop(user: User, course: Course) -> QuerySet[NotebookSession]:
    """A course's "stop all": the live sessions its students booked to it that `user` may see."""
    students = students_of(Course.objects.filter(pk=course.pk)).values("pk")
    return notebooks_visible_to(user).filter(course=course, user__in=students, status__in=NOTEBOOK_ACTIVE)
